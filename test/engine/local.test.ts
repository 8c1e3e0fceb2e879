// The `local` provider (src/features/engine/providers/local.ts) runs a real GGUF through llama.cpp: here a tiny random-weight
// llama written by scripts/make-tiny-gguf.ts, so nothing is downloaded. Its output is noise, but llama.cpp tokenizes,
// samples, streams and stops for real, and the AI SDK reads it as it reads any provider.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateText, type LanguageModel, streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { makeTinyGguf } from '../../scripts/make-tiny-gguf.ts';
import { localModel } from '../../src/features/engine/providers/local.ts';

let dir: string;
let model: LanguageModel;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'local-model-'));
  const { path } = makeTinyGguf(join(dir, 'tiny.gguf'));
  // One thread: llama.cpp's threads spin-wait for each other, which crawls when the cores are shared (CI, vitest).
  model = localModel(path, 'local-test', { threads: 1, contextSize: 512 });
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the local provider, with a tiny GGUF', () => {
  test('streams the answer in several chunks and reports usage from the model tokenizer', async () => {
    const result = streamText({
      model,
      system: 'Be brief.',
      prompt: 'Write about the local model',
      maxOutputTokens: 24,
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.length).toBeGreaterThan(1);
    expect(await result.text).toBe(deltas.join(''));
    const usage = await result.usage;
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeLessThanOrEqual(24);
  });

  test('maxOutputTokens cuts the answer with finish reason "length"', async () => {
    const result = await generateText({ model, prompt: 'Tell me everything', maxOutputTokens: 8 });
    expect(result.finishReason).toBe('length');
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeLessThanOrEqual(8);
    expect(result.text.length).toBeGreaterThan(0);
  });

  test('the same seed at temperature 0 gives the same text', async () => {
    const call = () => generateText({ model, prompt: 'Say something', seed: 7, temperature: 0, maxOutputTokens: 16 });
    const [first, second] = [await call(), await call()];
    expect(first.text.length).toBeGreaterThan(0);
    expect(second.text).toBe(first.text);
  });

  test('a stop sequence ends the answer before it', async () => {
    const prompt = 'Continue the text';
    const full = await generateText({ model, prompt, maxOutputTokens: 24 });
    const stop = full.text.slice(6, 8);
    const cut = await generateText({ model, prompt, maxOutputTokens: 24, stopSequences: [stop] });
    expect(cut.finishReason).toBe('stop');
    expect(cut.text).toBe(full.text.slice(0, full.text.indexOf(stop)));
  });

  test('an aborted stream stops without hanging', async () => {
    const controller = new AbortController();
    const result = streamText({
      model,
      prompt: 'Go on forever',
      maxOutputTokens: 400,
      abortSignal: controller.signal,
      maxRetries: 0,
    });
    const deltas: string[] = [];
    // Ends when the abort ends the stream; bounded by the test's timeout should it not.
    for await (const delta of result.textStream) {
      deltas.push(delta);
      if (deltas.length === 1) controller.abort();
    }
    expect(deltas.length).toBeGreaterThanOrEqual(1);
    expect(deltas.length).toBeLessThan(400);
    // The model is free again: the next call answers.
    const after = await generateText({ model, prompt: 'Again', maxOutputTokens: 4 });
    expect(after.finishReason).toBe('length');
  });
});
