// The output policy as engine middleware: every generation's output is checked against the workspace's enabled
// compliance rules (the whole workspace's and its project's) and the banned phrases of the voice it is written in
// (enforce.ts). A block ends the generation with `policy_violation` and is recorded; a generation no rule applies to
// streams untouched.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { bySystem } from '../../platform/audit.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../storage/schema.ts';
import type { EngineMiddleware } from '../engine/index.ts';
import { enforcePolicy, outputPolicy, recordViolation } from './enforce.ts';

export function policyMiddleware(db: Kysely<Database>, logger: Logger, clock: Clock): EngineMiddleware {
  return {
    name: 'policy',
    async wrap(events, { request, model, voice }) {
      const projectId = request.projectId ?? null;
      const policy = await outputPolicy(db, {
        workspaceId: request.workspaceId,
        projectId,
        voice: voice && { id: voice.id, name: voice.name, banned_phrases: voice.bannedPhrases },
      });
      if (!policy) return events;
      const origin = request.origin ?? bySystem(request.workspaceId, 'engine', request.now);
      const facts = {
        origin,
        userId: request.userId ?? null,
        projectId,
        voiceId: voice?.id ?? null,
        feature: request.feature,
        model: model.id,
      };
      // With fallback models, a blocked output is recorded under the model that wrote it, named by the first event.
      const answering = async function* () {
        for await (const event of events) {
          if (event.type === 'model') facts.model = event.model.id;
          yield event;
        }
      };
      return enforcePolicy(request.fallbackModels?.length ? answering() : events, policy, (violation) =>
        recordViolation(db, logger, violation, { ...facts, blockedAt: clock.now() }),
      );
    },
  };
}
