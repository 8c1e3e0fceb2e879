// The chat feature: chat completions through the content engine (OpenAI's wire format, streamed or not) and the
// saved threads they write.
import type { Feature } from '../../platform/feature.ts';
import { completionHandlers } from './completions.ts';
import { chatThreads } from './migrations/008_chat_threads.ts';
import { chatTools } from './migrations/017_chat_tools.ts';
import { withOpenAiError } from './openai-errors.ts';
import { threadHandlers } from './threads.ts';

export const chatFeature = {
  name: 'chat',
  handlers: { ...completionHandlers, ...threadHandlers },
  migrations: { '008_chat_threads': chatThreads, '017_chat_tools': chatTools },
  problemShapes: { createChatCompletion: withOpenAiError },
} satisfies Feature;
