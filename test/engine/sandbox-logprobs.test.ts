// The sandbox models' log probabilities (src/features/engine/providers/sandbox/logprobs.ts; the rule in docs/engine.md, "Log
// probabilities"): the tokens the engine counts, each at a log probability from 0 down to -2.5 that the same text
// always gets, its alternatives listed most likely first with what probability is left, a stream of a token a chunk
// whose chunks are whole characters; and the model asked through the LanguageModelV4 interface the engine uses.
import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { describe, expect, test } from 'vitest';
import { sandboxLogprobChunks, sandboxLogprobs } from '../../src/features/engine/providers/sandbox/logprobs.ts';
import { sandboxModel } from '../../src/features/engine/providers/sandbox/model.ts';
import { countTokens } from '../../src/features/engine/tokens.ts';

const TEXT = 'Spring sale starts Monday 🦜: every roast is 20% off, the espresso blend too.';

describe('sandbox log probabilities', () => {
  test('a token each, as the engine counts them, spelling the text; the same every time', () => {
    const tokens = sandboxLogprobs(TEXT, 5);
    expect(tokens).toHaveLength(countTokens(TEXT));
    expect(Buffer.from(tokens.flatMap((t) => t.bytes!)).toString()).toBe(TEXT);
    expect(sandboxLogprobs(TEXT, 5)).toEqual(tokens);
    // The rule, pinned: the first token's log probability is -2.5·h³, h the FNV-1a hash of "-1:<its id>" over 2³².
    expect(tokens[0]).toMatchObject({ token: 'Spring', logprob: -1.057377 });
  });

  test('log probabilities from 0 down to -2.5; alternatives most likely first, the token among them, at most 1 in all', () => {
    for (const token of sandboxLogprobs(TEXT, 5)) {
      expect(token.logprob).toBeLessThanOrEqual(0);
      expect(token.logprob).toBeGreaterThan(-2.5);
      expect(token.topLogprobs).toHaveLength(5);
      expect(token.topLogprobs).toContainEqual({ token: token.token, logprob: token.logprob, bytes: token.bytes });
      const listed = token.topLogprobs.map((t) => t.logprob);
      expect(listed).toEqual([...listed].sort((a, b) => b - a));
      expect(new Set(token.topLogprobs.map((t) => t.token)).size).toBe(5);
      expect(listed.reduce((sum, p) => sum + Math.exp(p), 0)).toBeLessThanOrEqual(1 + 1e-6);
    }
    expect(sandboxLogprobs(TEXT, 0).every((t) => t.topLogprobs.length === 0)).toBe(true);
    expect(sandboxLogprobs('', 3)).toEqual([]);
  });

  test('streamed a token a chunk; a character cut between tokens goes out whole with all of them', () => {
    const chunks = sandboxLogprobChunks(TEXT, 1);
    expect(chunks.map((c) => c.text).join('')).toBe(TEXT);
    const parrot = chunks.find((c) => c.text.includes('🦜'))!;
    expect(parrot.text).toBe(' 🦜');
    expect(parrot.logprobs.map((t) => t.token)).toEqual(['bytes:\\x20\\xf0\\x9f', 'bytes:\\xa6', 'bytes:\\x9c']);
    for (const chunk of chunks)
      expect(Buffer.from(chunk.logprobs.flatMap((t) => t.bytes!)).toString()).toBe(chunk.text);
  });

  test('the model: asked through its provider options, in each text part’s metadata, whole or streamed', async () => {
    const model = sandboxModel('sandbox-echo');
    const options = {
      prompt: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'Spring sale starts Monday' }] }],
      providerOptions: { sandbox: { logprobs: 2 } },
    };
    const whole = await model.doGenerate(options);
    const text = whole.content.find((part) => part.type === 'text')!;
    expect(text.providerMetadata?.sandbox?.logprobs).toHaveLength(4);
    const parts: LanguageModelV4StreamPart[] = [];
    const reader = (await model.doStream(options)).stream.getReader();
    for (let step = await reader.read(); !step.done; step = await reader.read()) parts.push(step.value);
    const deltas = parts.filter((part) => part.type === 'text-delta');
    expect(deltas.map((part) => part.delta)).toEqual(['Spring', ' sale', ' starts', ' Monday']);
    expect(deltas.flatMap((part) => part.providerMetadata?.sandbox?.logprobs as unknown[])).toEqual(
      text.providerMetadata?.sandbox?.logprobs,
    );
    // Not asked: a word a chunk, no metadata.
    const plain = (await model.doStream({ prompt: options.prompt })).stream.getReader();
    for (let step = await plain.read(); !step.done; step = await plain.read())
      if (step.value.type === 'text-delta') expect(step.value.providerMetadata).toBeUndefined();
  });
});
