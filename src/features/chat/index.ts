// The chat feature: chat completions and OpenAI's Responses API through the content engine (OpenAI's wire formats,
// streamed or not), the saved threads they write, and embeddings (OpenAI's wire format too).
import type { Feature } from '../../platform/feature.ts';
import { completionHandlers } from './completions.ts';
import { embeddingHandlers } from './embeddings.ts';
import { chatThreads } from './migrations/008_chat_threads.ts';
import { chatTools } from './migrations/017_chat_tools.ts';
import { responses } from './migrations/018_responses.ts';
import { withOpenAiError } from './openai-errors.ts';
import { responseHandlers } from './responses.ts';
import { threadHandlers } from './threads.ts';

export const chatFeature = {
  name: 'chat',
  handlers: { ...completionHandlers, ...threadHandlers, ...responseHandlers, ...embeddingHandlers },
  migrations: { '008_chat_threads': chatThreads, '017_chat_tools': chatTools, '018_responses': responses },
  problemShapes: {
    createChatCompletion: withOpenAiError,
    createResponse: withOpenAiError,
    getResponse: withOpenAiError,
    deleteResponse: withOpenAiError,
    listResponseInputItems: withOpenAiError,
    createEmbedding: withOpenAiError,
  },
} satisfies Feature;
