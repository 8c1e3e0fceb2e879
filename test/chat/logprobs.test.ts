// Log probabilities on chat completions (`logprobs`, `top_logprobs`) through the official `openai` SDK (and the AI
// SDK's OpenAI provider) against a real server: the sandbox models' (derived from the text, the same every time), OpenAI's passed through from a fake
// upstream on loopback with their bytes, in whole answers and per chunk of a stream, each answer and chunk valid
// against OpenAI's own published schemas (a pinned copy, openai-chat-schemas.json); the refusals of a model without
// the capability and of alternatives asked without log probabilities; and a redaction of the output policy, whose
// redacted words no token shows.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { projectRoot } from '../support/prism.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import type { Json } from '../support/spec.ts';

/**
 * OpenAPI 3.0's `nullable: true`, which OpenAI's document still uses in places, as JSON Schema says it: the schema or
 * null (Ajv's own reading refuses it beside a `$ref`, and would not let null past an `enum`).
 */
function nullableAsNull(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(nullableAsNull);
  if (typeof schema !== 'object' || schema === null) return schema;
  const { nullable, ...rest } = schema as Record<string, unknown>;
  const read = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, nullableAsNull(value)]));
  return nullable === true ? { anyOf: [read, { type: 'null' }] } : read;
}

const openAiSchemas = nullableAsNull(
  JSON.parse(readFileSync(join(projectRoot, 'test/chat/openai-chat-schemas.json'), 'utf8')),
) as Json;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, validateFormats: false });
ajv.addSchema(openAiSchemas, 'openai.json');

/** The errors of `value` against OpenAI's component schema `name`, or []. */
function openAiErrors(name: string, value: unknown): string[] {
  const validate = ajv.getSchema(`openai.json#/components/schemas/${name}`)!;
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${name}${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}

type Token = OpenAI.Chat.Completions.ChatCompletionTokenLogprob;
const utf8 = (text: string) => Array.from(Buffer.from(text, 'utf8'));
/** The text the tokens spell, from their bytes. */
const spelled = (tokens: Token[]) => Buffer.from(tokens.flatMap((t) => t.bytes!)).toString('utf8');

describe('log probabilities on chat completions', () => {
  let upstream: FakeProvider;
  let server: TestServer;
  let openai: OpenAI;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    server = await startTestServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: upstream.url } });
    openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await upstream?.close();
  });

  /** The raw chunks of a stream, as JSON (the SDK's chunk objects are the same JSON). */
  async function chunksOf(body: OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming, client = openai) {
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of await client.chat.completions.create(body)) chunks.push(chunk);
    return chunks;
  }

  test('the catalogue lists the models that give them', async () => {
    const ids: string[] = [];
    const listed = await server.call('GET', '/v1/models?capability=logprobs');
    for (const model of listed.body.data as { id: string }[]) ids.push(model.id);
    expect(ids).toEqual(expect.arrayContaining(['sandbox-writer', 'sandbox-echo', 'gpt-4o-mini', 'gpt-4.1']));
    expect(ids).not.toContain('o3');
    expect(ids).not.toContain('claude-sonnet-4-5');
  });

  test('sandbox: each token of the answer, its bytes, and its alternatives; the same every time', async () => {
    const ask = () =>
      openai.chat.completions.create({
        model: 'sandbox-echo',
        messages: [{ role: 'user', content: 'Spring sale starts Monday 🦜 at noon' }],
        logprobs: true,
        top_logprobs: 3,
      });
    const completion = await ask();
    expect(openAiErrors('CreateChatCompletionResponse', completion)).toEqual([]);
    const choice = completion.choices[0]!;
    expect(choice.logprobs!.refusal).toBeNull();
    const tokens = choice.logprobs!.content!;
    expect(tokens.length).toBe(completion.usage!.completion_tokens);
    expect(spelled(tokens)).toBe(choice.message.content);
    for (const token of tokens) {
      expect(token.logprob).toBeLessThanOrEqual(0);
      expect(token.top_logprobs.length).toBeLessThanOrEqual(3);
      expect(token.top_logprobs.map((t) => t.token)).toContain(token.token);
      const listed = token.top_logprobs.map((t) => t.logprob);
      expect(listed).toEqual([...listed].sort((a, b) => b - a));
      expect(listed.reduce((sum, p) => sum + Math.exp(p), 0)).toBeLessThanOrEqual(1 + 1e-9);
    }
    // 🦜 is three tokens in o200k_base: a token of part of a character is written as its bytes.
    const parrot = tokens.findIndex((t) => t.token.startsWith('bytes:'));
    expect(tokens[parrot]).toMatchObject({ token: 'bytes:\\x20\\xf0\\x9f', bytes: [32, 240, 159] });
    expect(Buffer.from(tokens.slice(parrot, parrot + 3).flatMap((t) => t.bytes!)).toString()).toBe(' 🦜');
    for (const token of tokens.filter((t) => !t.token.startsWith('bytes:')))
      expect(token.bytes).toEqual(utf8(token.token));
    expect((await ask()).choices[0]!.logprobs).toEqual(choice.logprobs);
  });

  test('sandbox, streamed: each chunk carries the tokens of its text; joined, the whole answer’s', async () => {
    const body = {
      model: 'sandbox-writer',
      messages: [{ role: 'user' as const, content: 'A launch note for our spring coffee sale' }],
      logprobs: true,
      top_logprobs: 2,
      stream: true as const,
    };
    const chunks = await chunksOf(body);
    const streamed: Token[] = [];
    let text = '';
    for (const chunk of chunks) {
      expect(openAiErrors('CreateChatCompletionStreamResponse', chunk)).toEqual([]);
      const choice = chunk.choices[0];
      if (!choice?.delta.content) continue;
      expect(choice.logprobs!.content!.length).toBeGreaterThan(0);
      expect(spelled(choice.logprobs!.content!)).toBe(choice.delta.content);
      streamed.push(...choice.logprobs!.content!);
      text += choice.delta.content;
    }
    const whole = await openai.chat.completions.create({ ...body, stream: false });
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(streamed).toEqual(whole.choices[0]!.logprobs!.content);
    // The SDK's stream helper gathers them as OpenAI's streams are gathered.
    const final = await openai.chat.completions.stream({ ...body, stream: true }).finalChatCompletion();
    expect(final.choices[0]!.logprobs!.content).toEqual(streamed);
  });

  test('the AI SDK’s OpenAI provider pointed at our /v1 reads them, whole and streamed', async () => {
    const model = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey }).chat('sandbox-echo');
    const providerOptions = { openai: { logprobs: 2 } };
    const generated = await generateText({
      model,
      prompt: 'Spring sale starts Monday',
      providerOptions,
      maxRetries: 0,
    });
    const logprobs = generated.providerMetadata?.openai?.logprobs as { token: string; top_logprobs: unknown[] }[];
    expect(logprobs.map((t) => t.token).join('')).toBe('Spring sale starts Monday');
    expect(logprobs.every((t) => t.top_logprobs.length === 2)).toBe(true);
    const streamed = streamText({ model, prompt: 'Spring sale starts Monday', providerOptions, maxRetries: 0 });
    expect((await streamed.providerMetadata)?.openai?.logprobs).toEqual(logprobs);
  });

  test('each of n choices has its own; an answer of tool calls has none, and no chunk of a call carries any', async () => {
    const body = {
      model: 'sandbox-writer',
      messages: [{ role: 'user' as const, content: 'A launch note for our spring coffee sale' }],
      n: 2,
      seed: 1,
      logprobs: true,
    };
    const completion = await openai.chat.completions.create(body);
    for (const choice of completion.choices) expect(spelled(choice.logprobs!.content!)).toBe(choice.message.content);
    const texts = ['', ''];
    const streamed: Token[][] = [[], []];
    for (const chunk of await chunksOf({ ...body, stream: true })) {
      for (const choice of chunk.choices) {
        texts[choice.index] += choice.delta.content ?? '';
        streamed[choice.index]!.push(...(choice.logprobs?.content ?? []));
      }
    }
    expect(texts).toEqual(completion.choices.map((choice) => choice.message.content));
    expect(streamed).toEqual(completion.choices.map((choice) => choice.logprobs!.content));

    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const call = {
      model: 'sandbox-writer',
      messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
      tools,
    };
    const called = await openai.chat.completions.create({ ...call, logprobs: true });
    expect(called.choices[0]!.message.tool_calls).toHaveLength(1);
    expect(called.choices[0]!.logprobs).toEqual({ content: [], refusal: null });
    const chunks = await chunksOf({ ...call, logprobs: true, stream: true });
    expect(chunks.flatMap((c) => c.choices.map((choice) => choice.logprobs))).toEqual(
      chunks.flatMap((c) => c.choices.map(() => null)),
    );
  });

  test('without logprobs, no logprobs: null in answers and chunks', async () => {
    const completion = await openai.chat.completions.create({
      model: 'sandbox-echo',
      messages: [{ role: 'user', content: 'No probabilities, please' }],
      logprobs: false,
    });
    expect(completion.choices[0]!.logprobs).toBeNull();
    const chunks = await chunksOf({
      model: 'sandbox-echo',
      messages: [{ role: 'user', content: 'No probabilities, please' }],
      stream: true,
    });
    expect(chunks.flatMap((c) => c.choices.map((choice) => choice.logprobs))).toEqual(
      chunks.flatMap((c) => c.choices.map(() => null)),
    );
  });

  test('top_logprobs: 0 gives each token with no alternatives; over 20, or without logprobs, is refused', async () => {
    const completion = await openai.chat.completions.create({
      model: 'sandbox-echo',
      messages: [{ role: 'user', content: 'Spring sale' }],
      logprobs: true,
      top_logprobs: 0,
    });
    expect(completion.choices[0]!.logprobs!.content!.every((t) => t.top_logprobs.length === 0)).toBe(true);
    const alone = await openai.chat.completions
      .create({ model: 'sandbox-echo', messages: [{ role: 'user', content: 'hi' }], top_logprobs: 2 })
      .catch((e: unknown) => e);
    expect(alone).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect(alone).toMatchObject({ param: 'top_logprobs', code: 'validation_failed' });
    const many = await openai.chat.completions
      .create({ model: 'sandbox-echo', messages: [{ role: 'user', content: 'hi' }], logprobs: true, top_logprobs: 21 })
      .catch((e: unknown) => e);
    expect(many).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect(many).toMatchObject({ param: 'top_logprobs' });
  });

  test('a model without the logprobs capability is refused at /logprobs, a fallback without it at its place', async () => {
    const answer = await server.call('POST', '/v1/chat/completions', {
      key: server.ownerKey,
      body: { model: 'o3-mini', messages: [{ role: 'user', content: 'hi' }], logprobs: true },
    });
    expect(answer.status, answer.text).toBe(422);
    expect(answer.body.errors).toEqual([
      {
        pointer: '/logprobs',
        detail:
          'are not given by o3-mini (it lacks the logprobs capability); GET /v1/models?capability=logprobs lists the models that give them',
      },
    ]);
    expect(answer.body.error).toMatchObject({ param: 'logprobs', code: 'validation_failed' });
    const fallback = await server.call('POST', '/v1/chat/completions', {
      key: server.ownerKey,
      body: { model: 'gpt-4o-mini', models: ['o3-mini'], messages: [{ role: 'user', content: 'hi' }], logprobs: true },
    });
    expect(fallback.status, fallback.text).toBe(422);
    expect(fallback.body.errors[0].pointer).toBe('/models/0');
    expect(upstream.requests).toHaveLength(0);
  });

  test('OpenAI: asked upstream, and passed through as they came, bytes and all, whole and per chunk', async () => {
    // The upstream splits 🦜 over two tokens whose bytes only it knows.
    const parrot: OpenAI.Chat.Completions.ChatCompletionTokenLogprob[] = [
      { token: 'bytes:\\xf0\\x9f', logprob: -0.5, bytes: [240, 159], top_logprobs: [] },
      { token: 'bytes:\\xa6\\x9c', logprob: -0.01, bytes: [166, 156], top_logprobs: [] },
    ];
    const script = {
      chunks: ['Spring ', 'sale ', '🦜'],
      logprobs: [
        [
          {
            token: 'Spring',
            logprob: -0.1,
            bytes: utf8('Spring'),
            top_logprobs: [{ token: 'Spring', logprob: -0.1, bytes: utf8('Spring') }],
          },
          { token: ' ', logprob: -9999, bytes: [32], top_logprobs: [{ token: ' ', logprob: -9999, bytes: [32] }] },
        ],
        [{ token: 'sale ', logprob: -0.2, bytes: utf8('sale '), top_logprobs: [] }],
        parrot,
      ],
    };
    upstream.enqueue(script, script);
    const body = {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user' as const, content: 'Announce the sale' }],
      logprobs: true,
      top_logprobs: 1,
    };
    const completion = await openai.chat.completions.create(body);
    expect(upstream.requests.at(-1)!.body).toMatchObject({ logprobs: true, top_logprobs: 1 });
    expect(openAiErrors('CreateChatCompletionResponse', completion)).toEqual([]);
    expect(completion.choices[0]!.message.content).toBe('Spring sale 🦜');
    expect(completion.choices[0]!.logprobs).toEqual({ content: script.logprobs.flat(), refusal: null });

    const chunks = await chunksOf({ ...body, stream: true });
    const withText = chunks.filter((c) => c.choices[0]?.delta.content);
    expect(withText.map((c) => c.choices[0]!.delta.content)).toEqual(script.chunks);
    expect(withText.map((c) => c.choices[0]!.logprobs)).toEqual(
      script.logprobs.map((content) => ({ content, refusal: null })),
    );
    for (const chunk of chunks) expect(openAiErrors('CreateChatCompletionStreamResponse', chunk)).toEqual([]);
  });

  test('a redaction of the output policy: no token shows the redacted words; the tokens still spell the text', async () => {
    const { secret } = await createWorkspace(server.platform.db, {
      name: 'Logprobs and policy',
      region: server.platform.config.region,
      now: new Date(),
    });
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key: secret,
      body: { name: 'Ticket ids', kind: 'regex', pattern: '\\bACME-\\d{4,}\\b', action: 'redact' },
    });
    expect(rule.status, rule.text).toBe(201);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: secret, maxRetries: 0 });
    const body = {
      model: 'sandbox-echo',
      messages: [{ role: 'user' as const, content: 'Your ticket ACME-123456 ships on Monday at noon' }],
      logprobs: true,
      top_logprobs: 2,
    };
    const completion = await client.chat.completions.create(body);
    const content = completion.choices[0]!.message.content!;
    expect(content).toBe('Your ticket [redacted] ships on Monday at noon');
    const tokens = completion.choices[0]!.logprobs!.content!;
    expect(spelled(tokens)).toBe(content);
    const shown = tokens.flatMap((t) => [t.token, ...t.top_logprobs.map((top) => top.token)]).join('|');
    expect(shown).not.toMatch(/ACME|123|456/);
    // The model's words before the redaction keep their own; from it on, the text is the policy's: certain.
    const redacted = content.indexOf('[redacted]');
    let at = 0;
    for (const token of tokens) {
      if (at + token.bytes!.length <= redacted) expect(token.top_logprobs.length).toBeGreaterThan(0);
      else expect(token).toMatchObject({ logprob: 0, top_logprobs: [] });
      at += token.bytes!.length;
    }

    const chunks = await chunksOf({ ...body, stream: true }, client);
    let text = '';
    const streamed: Token[] = [];
    for (const chunk of chunks) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) text += choice.delta.content;
      streamed.push(...(choice?.logprobs?.content ?? []));
    }
    expect(text).toBe(content);
    expect(spelled(streamed)).toBe(content);
    expect(streamed.map((t) => t.token).join('|')).not.toMatch(/ACME|123|456/);
  });
});
