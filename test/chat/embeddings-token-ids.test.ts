// POST /v1/embeddings with token ids, OpenAI's other two forms of `input` (an array of ids, an array of arrays of
// ids), through the official `openai` SDK against a real server: ids of cl100k_base embedded as the text they stand
// for and counted as the ids they are, the limits at each input's place, ids out of the encoding's range, arrays that
// mix forms, a character cut between two inputs, and an OpenAI model in front of a fake upstream on loopback (which
// takes text: the server sends the text of the ids). Requests are checked against OpenAI's published schema.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sandboxEmbedding } from '../../src/features/engine/providers/sandbox/embedding.ts';
import { type FakeProvider, fakeEmbedding, startFakeOpenAi } from '../support/fake-providers.ts';
import { projectRoot } from '../support/prism.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import type { Json } from '../support/spec.ts';

const openAiSchemas: Json = JSON.parse(readFileSync(join(projectRoot, 'test/chat/openai-chat-schemas.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, validateFormats: false });
ajv.addSchema(openAiSchemas, 'openai.json');
const isOpenAiRequest = (body: unknown) =>
  ajv.getSchema('openai.json#/components/schemas/CreateEmbeddingRequest')!(body) === true;

// "How long do refunds take?" and "Refunds are paid within 14 days." in cl100k_base (tiktoken's ids).
const QUESTION = [4438, 1317, 656, 73618, 1935, 30];
const ANSWER = [4032, 44050, 527, 7318, 2949, 220, 975, 2919, 13];
const float32 = (values: number[]) => Array.from(Float32Array.from(values));

describe('POST /v1/embeddings with token ids', () => {
  let upstream: FakeProvider;
  let server: TestServer;
  let openai: OpenAI;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    server = await startTestServer({
      env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: upstream.url, PROVIDER_MAX_RETRIES: '0' },
    });
    openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await upstream?.close();
  });

  const embeddings = (body: Record<string, unknown>) => server.call('POST', '/v1/embeddings', { body });

  test('openai: arrays of ids embed the text they stand for, each input counted as its ids', async () => {
    const body = { model: 'sandbox-embedding', input: [QUESTION, ANSWER], dimensions: 16 };
    expect(isOpenAiRequest(body)).toBe(true);
    const result = await openai.embeddings.create(body);
    expect(result.data.map((item) => item.embedding)).toEqual([
      float32(sandboxEmbedding('How long do refunds take?', 16)),
      float32(sandboxEmbedding('Refunds are paid within 14 days.', 16)),
    ]);
    expect(result.usage).toEqual({ prompt_tokens: 15, total_tokens: 15 });
  });

  test('openai: an array of ids is one input', async () => {
    const body = { model: 'sandbox-embedding', input: QUESTION, dimensions: 16, encoding_format: 'float' as const };
    expect(isOpenAiRequest(body)).toBe(true);
    const result = await openai.embeddings.create(body);
    expect(result.data).toHaveLength(1);
    expect(result.data[0]!.embedding).toEqual(float32(sandboxEmbedding('How long do refunds take?', 16)));
    expect(result.usage.prompt_tokens).toBe(6);
  });

  test('ids outside cl100k_base, arrays that mix forms, empty arrays: 422 at their place, in OpenAI’s error', async () => {
    const refused = async (input: unknown, pointer: string, param: string, detail?: string) => {
      const answer = await embeddings({ model: 'sandbox-embedding', input });
      expect(answer.status, answer.text).toBe(422);
      expect(answer.body.code).toBe('validation_failed');
      expect(answer.body.errors[0].pointer).toBe(pointer);
      if (detail) expect(answer.body.errors[0].detail).toBe(detail);
      expect(answer.body.error).toMatchObject({ code: 'validation_failed', param, type: 'invalid_request_error' });
    };
    await refused([QUESTION, [4438, 100_256]], '/input/1/1', 'input[1][1]', 'must be <= 100255');
    await refused([4438, -1], '/input/1', 'input[1]', 'must be >= 0');
    await refused([[4438, 1.5]], '/input/0/1', 'input[0][1]');
    await refused([[]], '/input/0', 'input[0]');
    await refused(['How long?', QUESTION], '/input/1', 'input[1]', 'must be a string, as /input/0 is');
    await refused([QUESTION, 30], '/input/1', 'input[1]', 'must be an array of token ids, as /input/0 is');
    await refused([30, 'x'], '/input/1', 'input[1]', 'must be a token id, as /input/0 is');
    const sdk = await openai.embeddings.create({ model: 'sandbox-embedding', input: [[200_000]] }).catch((e) => e);
    expect(sdk).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect(sdk).toMatchObject({ param: 'input[0][0]' });
  });

  test('the limits count ids: an input over the model’s context window, a request over 300,000 tokens', async () => {
    const long = await embeddings({ model: 'sandbox-embedding', input: [QUESTION, Array(8193).fill(1317)] });
    expect(long.status, long.text).toBe(422);
    expect(long.body.errors).toEqual([
      { pointer: '/input/1', detail: 'is 8193 tokens; sandbox-embedding takes at most 8192 tokens an input' },
    ]);
    // Two inputs at the window: 16,384 ids, decoded in a worker thread (text-pool.ts).
    const fits = await embeddings({
      model: 'sandbox-embedding',
      input: [Array(8192).fill(1317), Array(8192).fill(656)],
      dimensions: 4,
    });
    expect(fits.status, fits.text).toBe(200);
    expect(fits.body.usage.prompt_tokens).toBe(16_384);
    expect(fits.body.data[1].embedding).toEqual(float32(sandboxEmbedding(' do'.repeat(8192), 4)));
    const total = await embeddings({
      model: 'sandbox-embedding',
      input: Array.from({ length: 37 }, () => Array(8150).fill(1317)),
    });
    expect(total.status, total.text).toBe(422);
    expect(total.body.errors).toEqual([
      { pointer: '/input', detail: 'is over 300000 tokens in all; at most 300000 tokens a request' },
    ]);
  });

  test('ids cut inside a character read as U+FFFD, and the cut character leaks into no later input', async () => {
    // 🦜 is three tokens in cl100k_base: the first two alone are part of a character.
    const result = await openai.embeddings.create({
      model: 'sandbox-embedding',
      input: [[9468, 99], [9906]],
      dimensions: 16,
      encoding_format: 'float',
    });
    expect(result.data[0]!.embedding).toEqual(float32(sandboxEmbedding('\uFFFD', 16)));
    expect(result.data[1]!.embedding).toEqual(float32(sandboxEmbedding('Hello', 16)));
  });

  test('an OpenAI model: the upstream gets the text of the ids; its own count is billed', async () => {
    const result = await openai.embeddings.create({
      model: 'text-embedding-3-small',
      input: [QUESTION, ANSWER],
      dimensions: 8,
      encoding_format: 'float',
    });
    expect(upstream.requests.at(-1)!.body.input).toEqual([
      'How long do refunds take?',
      'Refunds are paid within 14 days.',
    ]);
    expect(result.data[0]!.embedding).toEqual(float32(fakeEmbedding('How long do refunds take?', 8)));
    // The fake counts words, as no tokenizer: what it reports is what is billed.
    expect(result.usage.prompt_tokens).toBe(11);
  });
});
