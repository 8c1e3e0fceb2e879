// Rules of each kind for the matcher's tests, and compact views of matches.
import type { PolicyMatch, PolicyRule } from '../../../src/features/policy/match.ts';

export const phrases = (
  list: string[],
  action: PolicyRule['action'] = 'block',
  extra: Partial<PolicyRule> = {},
): PolicyRule => ({
  id: 'voice.banned_phrases',
  kind: 'banned_phrase',
  phrases: list,
  action,
  label: 'the banned phrases of the voice Northwind',
  ...extra,
});
export const regex = (
  pattern: string,
  action: PolicyRule['action'] = 'block',
  extra: Partial<PolicyRule> = {},
): PolicyRule => ({ id: 'rul_regex', kind: 'regex', pattern, action, label: 'the rule "tickets"', ...extra });
export const personal = (
  types: PolicyRule['types'],
  action: PolicyRule['action'] = 'redact',
  extra: Partial<PolicyRule> = {},
): PolicyRule => ({ id: 'rul_pii', kind: 'personal_data', types, action, label: 'the rule "pii"', ...extra });

/** [start, end, matchedText] of each match, for compact expectations. */
export const spans = (matches: PolicyMatch[]) => matches.map((m) => [m.start, m.end, m.matchedText]);
export const cpLength = (s: string) => Array.from(s).length;
