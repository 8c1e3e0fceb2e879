// enforcePolicy on the engine's events, without a server: what a guard holds back is sent when the choice ends, also
// when a provider's stream ends without a finish event; a block throws what onBlock returns, with the output redacted.
import { describe, expect, test } from 'vitest';
import type { GenerationEvent } from '../../src/features/engine/engine.ts';
import { enforcePolicy, type Violation } from '../../src/features/policy/enforce.ts';
import { compilePolicy } from '../../src/features/policy/match.ts';
import { Problem } from '../../src/platform/problems.ts';

async function* events(list: GenerationEvent[]): AsyncGenerator<GenerationEvent> {
  yield* list;
}

const usage: GenerationEvent = { type: 'usage', usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1 }, costUsd: 0 };
const policy = compilePolicy([
  { id: 'rul_phrases', kind: 'banned_phrase', phrases: ['game-changer'], action: 'block', label: 'the rule' },
  { id: 'rul_emails', kind: 'personal_data', types: ['email'], action: 'redact', label: 'the email rule' },
]);

async function collect(list: GenerationEvent[], seen: Violation[] = []) {
  const out: GenerationEvent[] = [];
  for await (const event of enforcePolicy(events(list), policy, async (violation) => (seen.push(violation), new Problem('policy_violation', 'blocked')))) out.push(event);
  return out;
}

const textOf = (out: GenerationEvent[], choice = 0) => out.map((e) => (e.type === 'text' && e.choice === choice ? e.text : '')).join('');

describe('enforcePolicy', () => {
  test('sends every checked text before the finish event, redacted', async () => {
    const out = await collect([
      { type: 'text', choice: 0, text: 'Write to sam@' },
      { type: 'text', choice: 0, text: 'corner.example today.' },
      { type: 'finish', choice: 0, finishReason: 'stop' },
      usage,
    ]);
    expect(textOf(out)).toBe('Write to [redacted] today.');
    expect(out.at(-2)).toEqual({ type: 'finish', choice: 0, finishReason: 'stop' });
    expect(out.at(-1)).toBe(usage);
  });

  test('a choice whose stream ended without a finish event still gets its held-back text, before the usage', async () => {
    const out = await collect([{ type: 'text', choice: 0, text: 'A short answer.' }, { type: 'text', choice: 1, text: 'Another one.' }, { type: 'finish', choice: 1, finishReason: 'stop' }, usage]);
    expect(textOf(out, 0)).toBe('A short answer.');
    expect(textOf(out, 1)).toBe('Another one.');
    expect(out.at(-1)).toBe(usage);
  });

  test('a block throws the problem and hands over the output with redact rules applied', async () => {
    const seen: Violation[] = [];
    await expect(collect([{ type: 'text', choice: 0, text: 'Mail sam@corner.example: a Game Changer.' }, { type: 'finish', choice: 0, finishReason: 'stop' }, usage], seen)).rejects.toThrow('blocked');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.rule.id).toBe('rul_phrases');
    expect(seen[0]!.output).toBe('Mail [redacted]: a Game Changer.');
  });
});
