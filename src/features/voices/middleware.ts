// The voice as engine middleware: a generation whose request names a voice (`voice_id`) is written in it. The voice's
// instructions go before the messages (a real model reads them), its sliders go to the sandbox models
// (`providerOptions.sandbox.sliders`, docs/engine.md), and the voice is named on the generation for the output policy,
// which blocks its banned phrases.
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.ts';
import type { EngineMiddleware } from '../engine/index.ts';
import { appliedVoice } from './instructions.ts';

export function voiceMiddleware(db: Kysely<Database>): EngineMiddleware {
  return {
    name: 'voice',
    async transform(generation) {
      const { request } = generation;
      if (!request.voiceId) return generation;
      const voice = await appliedVoice(db, request.workspaceId, request.voiceId);
      return {
        ...generation,
        request: { ...request, messages: [{ role: 'system', content: voice.instructions }, ...request.messages] },
        voice: { id: voice.id, name: voice.name, bannedPhrases: voice.banned_phrases },
        providerOptions: {
          ...generation.providerOptions,
          sandbox: { ...generation.providerOptions.sandbox, sliders: voice.sliders },
        },
      };
    },
  };
}
