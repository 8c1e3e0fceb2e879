// enforcePolicy on the engine's events, without a server: what a guard holds back is sent when the choice ends, also
// when a provider's stream ends without a finish event; a block throws what onBlock returns, with the output redacted.
// Tool-call arguments: a guard per choice and call, redactions that keep the arguments valid JSON (inside a string,
// escaped; outside one, as a string of their own), the fragments' join equal to the call's arguments, and a block.
import { describe, expect, test } from 'vitest';
import type { GenerationEvent } from '../../src/features/engine/generation.ts';
import { enforcePolicy, type Violation } from '../../src/features/policy/enforce.ts';
import { compilePolicy } from '../../src/features/policy/match.ts';
import { Problem } from '../../src/platform/problems.ts';

async function* events(list: GenerationEvent[]): AsyncGenerator<GenerationEvent> {
  yield* list;
}

const usage: GenerationEvent = {
  type: 'usage',
  usage: { inputTokens: 1, cachedInputTokens: 0, outputTokens: 1 },
  costUsd: 0,
};
const policy = compilePolicy([
  { id: 'rul_phrases', kind: 'banned_phrase', phrases: ['game-changer'], action: 'block', label: 'the rule' },
  { id: 'rul_emails', kind: 'personal_data', types: ['email'], action: 'redact', label: 'the email rule' },
]);

async function collect(list: GenerationEvent[], seen: Violation[] = []) {
  const out: GenerationEvent[] = [];
  for await (const event of enforcePolicy(
    events(list),
    policy,
    async (violation) => (seen.push(violation), new Problem('policy_violation', 'blocked')),
  ))
    out.push(event);
  return out;
}

const textOf = (out: GenerationEvent[], choice = 0) =>
  out.map((e) => (e.type === 'text' && e.choice === choice ? e.text : '')).join('');

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
    const out = await collect([
      { type: 'text', choice: 0, text: 'A short answer.' },
      { type: 'text', choice: 1, text: 'Another one.' },
      { type: 'finish', choice: 1, finishReason: 'stop' },
      usage,
    ]);
    expect(textOf(out, 0)).toBe('A short answer.');
    expect(textOf(out, 1)).toBe('Another one.');
    expect(out.at(-1)).toBe(usage);
  });

  test('a block throws the problem and hands over the output with redact rules applied', async () => {
    const seen: Violation[] = [];
    await expect(
      collect(
        [
          { type: 'text', choice: 0, text: 'Mail sam@corner.example: a Game Changer.' },
          { type: 'finish', choice: 0, finishReason: 'stop' },
          usage,
        ],
        seen,
      ),
    ).rejects.toThrow('blocked');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.rule.id).toBe('rul_phrases');
    expect(seen[0]!.output).toBe('Mail [redacted]: a Game Changer.');
  });

  describe('tool-call arguments', () => {
    const redacting = compilePolicy([
      {
        id: 'rul_phones',
        kind: 'personal_data',
        types: ['phone'],
        action: 'redact',
        replacement: '"phone" \\ hidden',
        label: 'the phone rule',
      },
      {
        id: 'rul_accounts',
        kind: 'regex',
        pattern: '\\b\\d{10}\\b',
        action: 'redact',
        replacement: '[account]',
        label: 'the account rule',
      },
      { id: 'rul_phrases', kind: 'banned_phrase', phrases: ['game-changer'], action: 'block', label: 'the rule' },
    ]);
    const call = (index: number, fragments: string[], choice = 0): GenerationEvent[] => [
      { type: 'tool-call-start', choice, index, id: `call_${choice}_${index}`, name: 'contact' },
      ...fragments.map(
        (argumentsDelta): GenerationEvent => ({ type: 'tool-call-delta', choice, index, argumentsDelta }),
      ),
      {
        type: 'tool-call',
        choice,
        index,
        id: `call_${choice}_${index}`,
        name: 'contact',
        arguments: fragments.join(''),
      },
    ];
    async function run(list: GenerationEvent[], seen: Violation[] = []) {
      const out: GenerationEvent[] = [];
      for await (const event of enforcePolicy(
        events(list),
        redacting,
        async (violation) => (seen.push(violation), new Problem('policy_violation', 'blocked')),
      ))
        out.push(event);
      return out;
    }
    const joined = (out: GenerationEvent[], choice: number, index: number) =>
      out
        .map((e) => (e.type === 'tool-call-delta' && e.choice === choice && e.index === index ? e.argumentsDelta : ''))
        .join('');
    const finished = (out: GenerationEvent[], choice: number, index: number) =>
      out.find((e) => e.type === 'tool-call' && e.choice === choice && e.index === index) as Extract<
        GenerationEvent,
        { type: 'tool-call' }
      >;

    test('a redaction inside a string is escaped, one outside a string is a string of its own: the JSON stays valid', async () => {
      const out = await run([
        ...call(0, ['{"note":"call +1 415 55', '5 0123 today","account":', '4155550123,"n":1}']),
        ...call(1, ['{"note":"nothing to hide"}']),
        { type: 'finish', choice: 0, finishReason: 'tool_calls' },
        usage,
      ]);
      const first = finished(out, 0, 0);
      expect(JSON.parse(first.arguments)).toEqual({ note: 'call "phone" \\ hidden today', account: '[account]', n: 1 });
      expect(joined(out, 0, 0)).toBe(first.arguments);
      expect(finished(out, 0, 1).arguments).toBe('{"note":"nothing to hide"}');
      // Each call's start comes before its fragments; the finish after every call.
      expect(out.findIndex((e) => e.type === 'tool-call-start' && e.index === 1)).toBeGreaterThan(out.indexOf(first));
      expect(out.at(-2)).toEqual({ type: 'finish', choice: 0, finishReason: 'tool_calls' });
    });

    test('calls of two choices, and two calls of one choice, have guards of their own', async () => {
      // Interleaved, the fragments would spell the banned phrase if they shared a guard.
      const list: GenerationEvent[] = [
        { type: 'tool-call-start', choice: 0, index: 0, id: 'call_a', name: 'contact' },
        { type: 'tool-call-start', choice: 1, index: 0, id: 'call_b', name: 'contact' },
        { type: 'tool-call-delta', choice: 0, index: 0, argumentsDelta: '{"a":"game-' },
        { type: 'tool-call-delta', choice: 1, index: 0, argumentsDelta: 'changer"}' },
        { type: 'tool-call', choice: 0, index: 0, id: 'call_a', name: 'contact', arguments: '{"a":"game-' },
        { type: 'tool-call', choice: 1, index: 0, id: 'call_b', name: 'contact', arguments: 'changer"}' },
        usage,
      ];
      const out = await run(list);
      expect(finished(out, 0, 0).arguments).toBe('{"a":"game-');
      expect(finished(out, 1, 0).arguments).toBe('changer"}');
    });

    test('a banned phrase split across fragments blocks, and none of it is released', async () => {
      const seen: Violation[] = [];
      const released: GenerationEvent[] = [];
      const list = [...call(0, ['{"pitch":"a game', '-changer for you"}']), usage];
      await expect(
        (async () => {
          for await (const event of enforcePolicy(
            events(list),
            redacting,
            async (violation) => (seen.push(violation), new Problem('policy_violation', 'blocked')),
          ))
            released.push(event);
        })(),
      ).rejects.toThrow('blocked');
      expect(seen[0]!.rule.id).toBe('rul_phrases');
      expect(seen[0]!.output).toBe('contact({"pitch":"a game-changer for you"})');
      expect(joined(released, 0, 0)).not.toContain('game');
    });
  });
});
