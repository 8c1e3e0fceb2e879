// Clients of OpenAI's Responses API, unmodified, pointed at our /v1 with our API key: the `openai` SDK's
// responses.create (plain, streamed, continued with previous_response_id), responses.retrieve, responses.delete and
// responses.inputItems.list, and the AI SDK's default OpenAI provider (which speaks the Responses API) with
// generateText and streamText.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('Responses API clients against our API', () => {
  let server: TestServer;
  let openai: OpenAI;

  beforeAll(async () => {
    server = await startTestServer();
    openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('openai: responses.create answers a response whose output_text the SDK computes', async () => {
    const response = await openai.responses.create({ model: 'sandbox-echo', instructions: 'Repeat me.', input: 'Spring sale starts Monday' });
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Spring sale starts Monday');
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
    expect((response as unknown as { cost_usd: number }).cost_usd).toBeGreaterThan(0);
  });

  test('openai: previous_response_id, retrieve, inputItems.list and delete', async () => {
    const first = await openai.responses.create({ model: 'sandbox-echo', input: 'first turn' });
    const second = await openai.responses.create({ model: 'sandbox-echo', input: [{ role: 'user', content: 'second turn' }], previous_response_id: first.id });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
    const retrieved = await openai.responses.retrieve(second.id);
    expect(retrieved.output_text).toBe('second turn');
    const items = [];
    for await (const item of openai.responses.inputItems.list(second.id, { limit: 1 })) items.push(item);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'second turn' }] });
    const deleted = await openai.responses.delete(second.id);
    expect(deleted).toMatchObject({ id: second.id, object: 'response', deleted: true });
    await expect(openai.responses.retrieve(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(openai.responses.create({ model: 'no-such-model', input: 'hi' })).rejects.toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
  });

  test('openai: inputItems.list pages through every item with after', async () => {
    const input = Array.from({ length: 5 }, (_, i) => ({ role: 'user' as const, content: `item ${i}` }));
    const response = await openai.responses.create({ model: 'sandbox-echo', input });
    const texts: string[] = [];
    for await (const item of openai.responses.inputItems.list(response.id, { limit: 2, order: 'asc' })) {
      texts.push((item as { content: Array<{ text: string }> }).content[0]!.text);
    }
    expect(texts).toEqual(['item 0', 'item 1', 'item 2', 'item 3', 'item 4']);
  });

  test('openai: stream: true yields the typed events, ending with response.completed', async () => {
    const stream = await openai.responses.create({ model: 'sandbox-echo', input: 'Spring sale starts Monday', stream: true });
    const types: string[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(text).toBe('Spring sale starts Monday');
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(completed!.usage!.output_tokens).toBeGreaterThan(0);
    // The SDK's stream helper assembles the same response.
    const helper = openai.responses.stream({ model: 'sandbox-echo', input: 'helper text' });
    const final = await helper.finalResponse();
    expect(final.output_text).toBe('helper text');
  });

  test('AI SDK: the default OpenAI provider (Responses API) with generateText and streamText', async () => {
    const provider = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey });
    const generated = await generateText({ model: provider('sandbox-echo'), system: 'Repeat me.', prompt: 'Spring sale starts Monday' });
    expect(generated.text).toBe('Spring sale starts Monday');
    expect(generated.finishReason).toBe('stop');
    expect(generated.usage.inputTokens).toBeGreaterThan(0);
    const responseId = (generated.providerMetadata?.openai as { responseId?: string } | undefined)?.responseId;
    expect(responseId).toMatch(/^resp_/);

    const streamed = streamText({ model: provider('sandbox-echo'), prompt: 'Streamed spring sale' });
    let text = '';
    for await (const part of streamed.textStream) text += part;
    expect(text).toBe('Streamed spring sale');
    expect((await streamed.usage).outputTokens).toBeGreaterThan(0);

    // A conversation continued through the provider's previousResponseId option.
    const next = await generateText({ model: provider('sandbox-echo'), prompt: 'next turn', providerOptions: { openai: { previousResponseId: responseId } } });
    expect(next.text).toBe('next turn');
    expect(next.usage.inputTokens).toBeGreaterThan(generated.usage.inputTokens!);
  });
});
