// The chat feature: chat completions through the content engine (OpenAI's wire format, streamed or not), the saved
// threads they write, and embeddings (OpenAI's wire format too).
import type { Feature } from '../../platform/feature.ts';
import { completionHandlers } from './completions.ts';
import { embeddingHandlers } from './embeddings.ts';
import { chatThreads } from './migrations/008_chat_threads.ts';
import { withOpenAiError } from './openai-errors.ts';
import { threadHandlers } from './threads.ts';

export const chatFeature = {
  name: 'chat',
  handlers: { ...completionHandlers, ...threadHandlers, ...embeddingHandlers },
  migrations: { '008_chat_threads': chatThreads },
  problemShapes: { createChatCompletion: withOpenAiError, createEmbedding: withOpenAiError },
} satisfies Feature;
