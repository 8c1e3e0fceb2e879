// A voice's banned phrases as a rule of the output policy (src/features/policy/match.ts): `rule_id`
// `voice.banned_phrases`, as the audit.policy.violation event names it.
import type { PolicyRule } from './match.ts';

export const VOICE_RULE_ID = 'voice.banned_phrases';

/** A voice's banned phrases always block: a voice's phrase has no safe rewrite. */
export function bannedPhrasesRule(voiceName: string, phrases: string[]): PolicyRule {
  return {
    id: VOICE_RULE_ID,
    kind: 'banned_phrase',
    phrases,
    action: 'block',
    label: `the banned phrases of the voice ${voiceName}`,
  };
}
