// The brand-voice hook of the engine: the system instruction a ready voice adds before the messages. Brand voices
// are not built yet (the voices issue fills this in from the voice's style summary, sliders and banned phrases), so
// no voice id exists in any workspace: a request naming one gets the `404` of an unknown voice.
import type { Kysely } from 'kysely';
import { notFound } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';

export async function voiceInstructions(_db: Kysely<Database>, _workspaceId: string, voiceId: string): Promise<string> {
  throw notFound('voice', voiceId);
}
