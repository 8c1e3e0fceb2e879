// A policy's rules, its matches, and what a compiled policy offers.

export type PersonalDataType = 'email' | 'phone' | 'payment_card';

export interface PolicyRule {
  id: string;
  kind: 'banned_phrase' | 'regex' | 'personal_data';
  phrases?: string[];
  pattern?: string;
  caseSensitive?: boolean;
  types?: PersonalDataType[];
  action: 'block' | 'redact';
  replacement?: string;
  label: string;
}

export interface PolicyMatch {
  ruleId: string;
  kind: PolicyRule['kind'];
  action: 'block' | 'redact';
  start: number;
  end: number;
  matchedText: string;
  what: string;
  /** For a banned_phrase match: the phrase as configured (the voice check lists it). */
  phrase?: string;
}

/** A rule that cannot compile. The message names the rule and says why; `reason` is the why alone (for a 422). */
export class PolicyRuleError extends Error {
  override readonly name = 'PolicyRuleError';
  readonly ruleId: string | undefined;
  readonly reason: string;
  constructor(message: string, details?: { ruleId: string; reason: string }) {
    super(message);
    this.ruleId = details?.ruleId;
    this.reason = details?.reason ?? message;
  }
}

export interface Policy {
  readonly rules: readonly PolicyRule[];
  scan(text: string): PolicyMatch[];
  apply(text: string): { text: string; blocked: PolicyMatch | null; redactions: PolicyMatch[] };
  /**
   * How many code points a stream holds back, counted on the regex view and on its skeleton (see the header of match.ts):
   * invisible characters do not count, so no margin for them is needed, and a match with any number of them inside is
   * settled in time.
   */
  readonly holdback: number;
}
