// The voices feature: brand voices trained from a writing sample in the background, tuned with sliders and banned
// phrases, applied by the engine (appliedVoice, instructions.ts) and measured against a text by `check`.
import type { Feature } from '../../platform/feature.ts';
import { voices } from './migrations/009_voices.ts';
import './schema.ts';
import { voiceJobs } from './training.ts';
import { voiceHandlers, warmUpCheck } from './voices.ts';

export const voicesFeature = {
  name: 'voices',
  handlers: voiceHandlers,
  migrations: { '009_voices': voices },
  jobs: voiceJobs,
  // A check measures its text: the first would wait for the measures' code to be compiled.
  preload: warmUpCheck,
} satisfies Feature;

export { voiceMiddleware } from './middleware.ts'; // registered on the engine by src/services.ts
export { checkVoiceTrainingModel } from './training.ts'; // src/services.ts checks VOICE_TRAINING_MODEL at start
// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { readyVoice, voicesOf } from './voices.ts'; // features that write in a voice check it is the workspace's and trained
