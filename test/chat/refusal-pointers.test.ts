// Where each OpenAI-compatible API points its refusals: the same refusal of the engine (an output budget over the
// model's limit, a prompt over its context window, an unknown model) lands on each API's own field, in the problem's
// `errors` and in OpenAI's `error.param`: chat completions at `max_completion_tokens` (or the `max_tokens` it was sent
// as) and `messages`, the Responses API at `max_output_tokens` and `input`, streamed or not. An id in OpenAI's format
// that is not ours is not found, wherever a response is named. A prompt of one unbroken word, the encoding's costliest
// input, is counted in time linear in its length and refused at its field when it is past the context window.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectProblem } from '../support/expect.ts';
import { type Answer, startTestServer, type TestServer } from '../support/server.ts';

/** The example id of OpenAI's own specification: a response id in OpenAI's format, not one of ours. */
const OPENAI_RESPONSE_ID = 'resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b';
/** Over sandbox-echo's context window (128,000 tokens) with room for the output. */
const LONG = 'word '.repeat(120_000);

/** The problem's pointer and OpenAI's `param` of the same field. */
function placement(answer: Answer): { pointer: string; param: string | null } {
  return { pointer: answer.body.errors?.[0]?.pointer, param: answer.body.error?.param };
}

describe('the pointers of each API’s refusals', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const call = (path: string, body: Record<string, unknown>) =>
    server.call('POST', path, { key: server.ownerKey, body });

  test('chat completions: max_completion_tokens, max_tokens, messages, model', async () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const overLimit = await call('/v1/chat/completions', {
      model: 'sandbox-echo',
      messages,
      max_completion_tokens: 16_385,
    });
    expectProblem(overLimit, 422, 'validation_failed');
    expect(placement(overLimit)).toEqual({ pointer: '/max_completion_tokens', param: 'max_completion_tokens' });
    const overLimitDeprecated = await call('/v1/chat/completions', {
      model: 'sandbox-echo',
      messages,
      max_tokens: 16_385,
    });
    expectProblem(overLimitDeprecated, 422, 'validation_failed');
    expect(placement(overLimitDeprecated)).toEqual({ pointer: '/max_tokens', param: 'max_tokens' });
    for (const stream of [false, true]) {
      const tooLong = await call('/v1/chat/completions', {
        model: 'sandbox-echo',
        messages: [{ role: 'user', content: LONG }],
        max_completion_tokens: 16_000,
        stream,
      });
      expectProblem(tooLong, 422, 'context_length_exceeded');
      expect(placement(tooLong)).toEqual({ pointer: '/messages', param: 'messages' });
      expect(tooLong.body.detail).toMatch(/the messages and max_completion_tokens need \d+\.$/);
    }
    const unknown = await call('/v1/chat/completions', { model: 'gpt-9-ultra', messages });
    expectProblem(unknown, 404, 'model_not_found');
    expect(placement(unknown)).toEqual({ pointer: '/model', param: 'model' });
  });

  test('responses: max_output_tokens, input, model, previous_response_id', async () => {
    const overLimit = await call('/v1/responses', { model: 'sandbox-echo', input: 'hi', max_output_tokens: 20_000 });
    expectProblem(overLimit, 422, 'validation_failed');
    expect(placement(overLimit)).toEqual({ pointer: '/max_output_tokens', param: 'max_output_tokens' });
    expect(overLimit.body.errors[0].detail).toBe('must be at most 16384, the output limit of sandbox-echo');
    for (const stream of [false, true]) {
      const tooLong = await call('/v1/responses', {
        model: 'sandbox-echo',
        input: LONG,
        max_output_tokens: 16_000,
        stream,
      });
      expectProblem(tooLong, 422, 'context_length_exceeded');
      expect(placement(tooLong)).toEqual({ pointer: '/input', param: 'input' });
      expect(tooLong.body.detail).toMatch(/the input and max_output_tokens need \d+\.$/);
    }
    const unknown = await call('/v1/responses', { model: 'gpt-9-ultra', input: 'hi' });
    expectProblem(unknown, 404, 'model_not_found');
    expect(placement(unknown)).toEqual({ pointer: '/model', param: 'model' });
    const notOurs = await call('/v1/responses', {
      model: 'sandbox-echo',
      input: 'hi',
      previous_response_id: OPENAI_RESPONSE_ID,
    });
    expectProblem(notOurs, 404, 'not_found');
    expect(placement(notOurs)).toEqual({ pointer: '/previous_response_id', param: 'previous_response_id' });
  });

  // One unbroken word is one piece of the encoding, whose cost grows with the square of its length: the engine encodes
  // it in slices of bounded length (engine/tokens.ts), so that a word past the context window is refused at once, not
  // after minutes of encoding. A word of one repeated character whose tokens the cuts do not split (漢 is a token, eight
  // `a`s are one) is counted exactly that way; other long words are estimated.
  test('responses: a prompt of one repeated character is counted exactly, and refused at input past the context window', async () => {
    const inputTokens = async (input: string) => {
      const answer = await call('/v1/responses', { model: 'sandbox-echo', input, max_output_tokens: 16 });
      expect(answer.status).toBe(200);
      return answer.body.usage.input_tokens as number;
    };
    const overhead = (await inputTokens('漢')) - 1;
    expect(await inputTokens('漢'.repeat(25_000))).toBe(overhead + 25_000);
    expect(await inputTokens('a'.repeat(100_000))).toBe(overhead + 12_500);
    for (const stream of [false, true]) {
      const tooLong = await call('/v1/responses', {
        model: 'sandbox-echo',
        input: '漢'.repeat(130_000),
        max_output_tokens: 16,
        stream,
      });
      expectProblem(tooLong, 422, 'context_length_exceeded');
      expect(placement(tooLong)).toEqual({ pointer: '/input', param: 'input' });
      expect(tooLong.body.errors[0].detail).toBe(`holds ${overhead + 130_000} tokens`);
    }
  });

  test('responses: an id in OpenAI’s format that is not ours is not found on retrieve, delete and input items', async () => {
    const key = server.ownerKey;
    for (const [method, path] of [
      ['GET', `/v1/responses/${OPENAI_RESPONSE_ID}`],
      ['DELETE', `/v1/responses/${OPENAI_RESPONSE_ID}`],
      ['GET', `/v1/responses/${OPENAI_RESPONSE_ID}/input_items`],
    ] as const) {
      const answer = await server.call(method, path, { key });
      expectProblem(answer, 404, 'not_found');
      expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code: 'not_found' });
    }
    // Not an id of a response at all: still refused by the contract.
    expectProblem(
      await server.call('GET', '/v1/responses/msg_01JDA4M7Q4B5C6D7E8F9G0H1J2', { key }),
      422,
      'validation_failed',
    );
  });

  test('models: an unknown model is not found, with OpenAI’s error object naming the model', async () => {
    const answer = await server.call('GET', '/v1/models/gpt-9-ultra', { key: server.ownerKey });
    expectProblem(answer, 404, 'model_not_found');
    expect(answer.body.error).toEqual({
      message: 'No model gpt-9-ultra in the catalogue; GET /v1/models lists them.',
      type: 'invalid_request_error',
      param: 'model',
      code: 'model_not_found',
    });
    expect(answer.body.errors).toEqual([{ pointer: 'path/id', detail: 'is not a model of the catalogue' }]);
  });
});
