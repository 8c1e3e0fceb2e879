// The chat feature (the content engine's chat completions and threads). Not built yet: its operations are listed in
// `notImplemented` (src/handlers.ts); what exists is the OpenAI shape of its problem documents.
import type { Feature } from '../../platform/feature.ts';
import { withOpenAiError } from './openai-errors.ts';

export const chatFeature = {
  name: 'chat',
  handlers: {},
  problemShapes: { createChatCompletion: withOpenAiError },
} satisfies Feature;
