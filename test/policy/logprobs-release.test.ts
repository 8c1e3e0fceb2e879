// The log probabilities of a generation through enforcePolicy, without a server: a token goes out with the released
// text that completes it (never with text still held back, never of a blocked phrase), a choice's tokens spell its
// released text, and after a redaction the text is the policy's, certain: no token shows what was redacted.
import { describe, expect, test } from 'vitest';
import type { GenerationEvent, TokenLogprob } from '../../src/features/engine/index.ts';
import { enforcePolicy } from '../../src/features/policy/enforce.ts';
import { compilePolicy } from '../../src/features/policy/match.ts';
import { Problem } from '../../src/platform/problems.ts';

const policy = compilePolicy([
  { id: 'rul_phrases', kind: 'banned_phrase', phrases: ['game-changer'], action: 'block', label: 'the rule' },
  { id: 'rul_emails', kind: 'personal_data', types: ['email'], action: 'redact', label: 'the email rule' },
]);

/** A token of the model's, at a log probability it did not find certain, with one alternative. */
const token = (text: string): TokenLogprob => {
  const bytes = Array.from(Buffer.from(text));
  return { token: text, logprob: -0.5, bytes, topLogprobs: [{ token: text, logprob: -0.5, bytes }] };
};

/** The model's text in chunks, each chunk one token. */
function generation(chunks: string[]): GenerationEvent[] {
  return [
    ...chunks.map((text): GenerationEvent => ({ type: 'text', choice: 0, text, logprobs: [token(text)] })),
    { type: 'finish', choice: 0, finishReason: 'stop' },
    { type: 'usage', usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: chunks.length }, costUsd: 0 },
  ];
}

async function run(list: GenerationEvent[]): Promise<{ out: GenerationEvent[]; error?: unknown }> {
  const out: GenerationEvent[] = [];
  try {
    for await (const event of enforcePolicy(
      (async function* () {
        yield* list;
      })(),
      policy,
      async () => new Problem('policy_violation', 'blocked'),
    ))
      out.push(event);
  } catch (error) {
    return { out, error };
  }
  return { out };
}

const tokensOf = (out: GenerationEvent[]) =>
  out.flatMap((e) => ((e.type === 'text' || e.type === 'finish') && e.logprobs ? e.logprobs : []));
const textOf = (out: GenerationEvent[]) => out.map((e) => (e.type === 'text' ? e.text : '')).join('');
const spelled = (tokens: TokenLogprob[]) => Buffer.from(tokens.flatMap((t) => t.bytes!)).toString();

describe('log probabilities through the output policy', () => {
  test('no rule matches: the model’s tokens, each with released text that completes it', async () => {
    const { out } = await run(generation(['Spring ', 'sale ', 'starts ', 'Monday.']));
    expect(textOf(out)).toBe('Spring sale starts Monday.');
    expect(tokensOf(out)).toEqual(['Spring ', 'sale ', 'starts ', 'Monday.'].map(token));
    let released = '';
    for (const event of out) {
      if (event.type !== 'text') continue;
      released += event.text;
      // What has gone out by now is never more than the text released by now.
      expect(released.startsWith(spelled(tokensOf(out.slice(0, out.indexOf(event) + 1))))).toBe(true);
    }
  });

  test('a block: the tokens of the blocked phrase never go out', async () => {
    const { out, error } = await run(generation(['A ', 'real ', 'game', '-changer ', 'for ', 'you.']));
    expect(error).toBeInstanceOf(Problem);
    expect(
      tokensOf(out)
        .map((t) => t.token)
        .join(''),
    ).not.toContain('game');
  });

  test('a redaction: the model’s tokens up to it, then the released text’s own, certain', async () => {
    const { out } = await run(generation(['Write ', 'to ', 'sam@', 'corner.example ', 'today, ', 'please.']));
    const text = textOf(out);
    expect(text).toBe('Write to [redacted] today, please.');
    const tokens = tokensOf(out);
    expect(spelled(tokens)).toBe(text);
    expect(tokens.slice(0, 2)).toEqual([token('Write '), token('to ')]);
    for (const later of tokens.slice(2)) expect(later).toMatchObject({ logprob: 0, topLogprobs: [] });
    expect(tokens.map((t) => t.token).join('')).not.toMatch(/sam|corner/);
  });
});
