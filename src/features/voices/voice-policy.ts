// A voice's banned phrases as a rule of the output policy (src/features/policy/match.ts): `rule_id`
// `voice.banned_phrases`, as the audit.policy.violation event names it.
import type { PolicyRule } from '../policy/match.ts';

export const VOICE_RULE_ID = 'voice.banned_phrases';

export function bannedPhrasesRule(voiceName: string, phrases: string[], action: 'block' | 'redact' = 'block'): PolicyRule {
  return { id: VOICE_RULE_ID, kind: 'banned_phrase', phrases, action, label: `the banned phrases of the voice ${voiceName}` };
}
