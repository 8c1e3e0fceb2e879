// The brand-voice hook of the engine: a ready voice of the workspace becomes a system instruction before the
// messages (src/features/voices/instructions.ts), and its banned phrases join the output policy. A voice that does
// not exist is a 404; one that is training or failed training is 409 voice_not_ready.
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.ts';
import { voiceInstructions } from '../voices/instructions.ts';
import { effectiveSliders } from '../voices/presenters.ts';
import { readyVoice } from '../voices/voices.ts';

export interface AppliedVoice {
  id: string;
  name: string;
  banned_phrases: string[];
  instructions: string;
}

export async function appliedVoice(db: Kysely<Database>, workspaceId: string, voiceId: string): Promise<AppliedVoice> {
  const row = await readyVoice(db, workspaceId, voiceId, '/voice_id');
  const banned = JSON.parse(row.banned_phrases) as string[];
  const instructions = voiceInstructions({
    name: row.name,
    style_summary: row.style_summary,
    traits: JSON.parse(row.traits) as string[],
    sliders: effectiveSliders(row)!,
    banned_phrases: banned,
    sample_text: row.sample_text,
  });
  return { id: row.id, name: row.name, banned_phrases: banned, instructions };
}
