// The official `openai` SDK and the AI SDK's `@ai-sdk/openai-compatible`, unmodified, pointed at our /v1 with our API
// key: chat.completions.create (streamed or not, usage included), models.list (the whole catalogue, as on OpenAI),
// errors raised as the SDK's own exception classes, and the AI SDK's generateText/streamText on the sandbox models.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('OpenAI clients against our API', () => {
  let server: TestServer;
  let openai: OpenAI;

  beforeAll(async () => {
    server = await startTestServer();
    openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('openai: chat.completions.create answers a chat.completion with usage and our extensions', async () => {
    const completion = await openai.chat.completions.create({
      model: 'sandbox-echo',
      messages: [
        { role: 'system', content: 'Repeat me.' },
        { role: 'user', content: 'Spring sale starts Monday' },
      ],
      max_completion_tokens: 50,
      temperature: 0.2,
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]!.message.content).toBe('Spring sale starts Monday');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens);
    expect((completion as unknown as { cost_usd: number }).cost_usd).toBeGreaterThan(0);
  });

  test('openai: a stream with include_usage yields the text in chunks, then the usage chunk', async () => {
    const stream = await openai.chat.completions.create({
      model: 'sandbox-echo',
      messages: [{ role: 'user', content: 'one two three four' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      chunks += 1;
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('one two three four');
    expect(chunks).toBeGreaterThanOrEqual(6);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
  });

  test('openai: models.list sees the whole catalogue, not a first page', async () => {
    const ids: string[] = [];
    for await (const model of openai.models.list()) ids.push(model.id);
    const catalogue = server.platform.services.engine.catalogue;
    expect(ids.length).toBeGreaterThan(20);
    expect(ids).toEqual(catalogue.entries.map((entry) => entry.id));
    const one = await openai.models.retrieve('sandbox-writer');
    expect(one).toMatchObject({ id: 'sandbox-writer', object: 'model', owned_by: 'content-service' });
    const unknown = await openai.models.retrieve('nope').catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown).toMatchObject({
      status: 404,
      type: 'invalid_request_error',
      param: 'model',
      code: 'model_not_found',
    });
  });

  test('openai: our problems are the SDK’s exceptions, with OpenAI’s error fields', async () => {
    const notFound = await openai.chat.completions
      .create({ model: 'gpt-nonexistent', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError);
    expect(notFound).toMatchObject({
      status: 404,
      code: 'model_not_found',
      param: 'model',
      type: 'invalid_request_error',
    });
    const unavailable = await openai.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(unavailable).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((unavailable as Error).message).toContain('OPENAI_API_KEY');
    const bad = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'cs_live_wrong', maxRetries: 0 });
    await expect(
      bad.chat.completions.create({ model: 'sandbox-echo', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  test('@ai-sdk/openai-compatible: generateText and streamText through our API', async () => {
    const provider = createOpenAICompatible({
      name: 'content-service',
      baseURL: `${server.url}/v1`,
      apiKey: server.ownerKey,
      includeUsage: true,
    });
    const generated = await generateText({
      model: provider.chatModel('sandbox-echo'),
      prompt: 'Hello from the AI SDK',
      maxRetries: 0,
    });
    expect(generated.text).toBe('Hello from the AI SDK');
    expect(generated.usage.outputTokens).toBeGreaterThan(0);
    const streamed = streamText({
      model: provider.chatModel('sandbox-writer'),
      prompt: 'Roasting coffee beans at home: roasting tips',
      maxRetries: 0,
    });
    let text = '';
    for await (const delta of streamed.textStream) text += delta;
    expect(text.startsWith("Here's a first draft about Roasting coffee beans at home.")).toBe(true);
    expect((await streamed.totalUsage).outputTokens).toBeGreaterThan(0);
  });
});
