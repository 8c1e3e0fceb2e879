// The chat feature: chat completions and OpenAI's Responses API through the content engine (OpenAI's wire formats,
// streamed or not), the saved threads they write, and embeddings (OpenAI's wire format too).
import { iso } from '../../platform/clock.ts';
import type { Feature } from '../../platform/feature.ts';
import { withOpenAiError } from '../../platform/openai-errors.ts';
import { completionHandlers } from './completions.ts';
import { embeddingHandlers } from './embeddings.ts';
import { chatThreads } from './migrations/008_chat_threads.ts';
import { chatTools } from './migrations/017_chat_tools.ts';
import { responses } from './migrations/018_responses.ts';
import { responseHandlers } from './responses.ts';
import { threadHandlers } from './threads.ts';

/** How old an empty thread is when it is deleted: longer than any stream (PROVIDER_TIMEOUT_MS is at most 1 h). */
const EMPTY_THREAD_MS = 2 * 3_600_000;

export const chatFeature = {
  name: 'chat',
  handlers: { ...completionHandlers, ...threadHandlers, ...responseHandlers, ...embeddingHandlers },
  migrations: { '008_chat_threads': chatThreads, '017_chat_tools': chatTools, '018_responses': responses },
  // A streamed `store: true` thread is created with the first chunk and filled when the answer ends; a process killed
  // in between leaves it empty. None is empty for longer than a stream can last.
  retention: async (db, now) => {
    await db
      .deleteFrom('chat_threads')
      .where('message_count', '=', 0)
      .where('created_at', '<', iso(new Date(now.getTime() - EMPTY_THREAD_MS)))
      .execute();
  },
  problemShapes: {
    createChatCompletion: withOpenAiError,
    createResponse: withOpenAiError,
    getResponse: withOpenAiError,
    deleteResponse: withOpenAiError,
    listResponseInputItems: withOpenAiError,
    createEmbedding: withOpenAiError,
  },
} satisfies Feature;
