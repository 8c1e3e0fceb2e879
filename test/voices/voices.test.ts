// Brand voices through the API on SQLite and PostgreSQL, with the real job runner: samples of different styles train
// into different sliders; voice.trained and voice.training_failed are emitted (checked against their AsyncAPI
// messages and delivered to a subscribed receiver); the sample's bounds; overrides and retraining; a voice that is not
// ready cannot be applied; `check` tells the voice's own writing from another's and finds banned phrases; a voice
// applied to the sandbox writer makes its output score better; delete.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { eventually, expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

const sample = (name: string) => readFileSync(new URL(`./samples/${name}.txt`, import.meta.url), 'utf8');
const VOICE_ID = /^voc_[0-9A-HJKMNP-TV-Z]{26}$/;

describe.each(databaseKinds)('voices on %s', (kind) => {
  let server: TestServer;
  let receiver: Receiver;
  let counter = 0;

  beforeAll(async () => {
    [server, receiver] = await Promise.all([
      startTestServer({ database: kind, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } }),
      startReceiver(),
    ]);
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Voices ${++counter}`,
      region: server.platform.config.region,
      ownerEmail: `v${counter}@test.example`,
      now: new Date(),
    });
    return { key: created.secret, id: created.workspace.id };
  }

  async function trained(key: string, id: string) {
    const voice = await eventually(
      () => server.call('GET', `/v1/voices/${id}`, { key }),
      (answer) => answer.body.status !== 'training',
    );
    expect(schemaErrors('/components/schemas/Voice', voice.body)).toEqual([]);
    return voice.body;
  }

  async function createVoice(key: string, body: Record<string, unknown>) {
    const answer = await server.call('POST', '/v1/voices', { key, body });
    expect(answer.status, answer.text).toBe(202);
    return trained(key, answer.body.id);
  }

  test('a sample trains into a ready voice; voice.trained is emitted with the specification’s keys and delivered', async () => {
    const { key, id: workspaceId } = await newWorkspace();
    const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
      key,
      body: { url: `${receiver.url}/voices`, event_types: ['voice.trained'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const created = await server.call('POST', '/v1/voices', {
      key,
      body: {
        name: 'Corner café',
        sample_text: sample('casual-coffee'),
        banned_phrases: ['world-class'],
        slider_overrides: { humor: 70 },
      },
    });
    expect(created.status, created.text).toBe(202);
    expect(created.headers.get('location')).toBe(`/v1/voices/${created.body.id}`);
    expect(created.body).toMatchObject({
      status: 'training',
      sliders: null,
      inferred_sliders: null,
      traits: [],
      slider_overrides: { humor: 70 },
    });
    expect(created.body.id).toMatch(VOICE_ID);
    const voice = await trained(key, created.body.id);
    expect(voice).toMatchObject({
      status: 'ready',
      language: 'en',
      failure_reason: null,
      banned_phrases: ['world-class'],
    });
    expect(voice.sliders).toEqual({ ...voice.inferred_sliders, humor: 70 });
    expect(voice.traits.length).toBeGreaterThan(0);
    expect(voice.style_summary.length).toBeGreaterThan(20);
    const events = (await server.call('GET', '/v1/events?type=voice.trained', { key })).body
      .data as components['schemas']['VoiceTrainedEvent'][];
    expect(events).toHaveLength(1);
    expect(asyncApiErrors(events[0]!)).toEqual([]);
    expect(events[0]!.workspace_id).toBe(workspaceId);
    expect(Object.keys(events[0]!.data).slice(0, 4)).toEqual([
      'voice_id',
      'sample_word_count',
      'sliders',
      'banned_phrases',
    ]);
    expect(events[0]!.data).toMatchObject({
      voice_id: voice.id,
      sample_word_count: voice.sample_word_count,
      sliders: voice.sliders,
      banned_phrases: ['world-class'],
    });
    const delivered = await eventually(
      async () => receiver.requests.find((request) => request.body?.data?.voice_id === voice.id),
      (request) => request !== undefined,
      15_000,
    );
    expect(delivered!.body).toMatchObject({ type: 'voice.trained', data: { voice_id: voice.id } });
  });

  test('samples of different styles give different sliders', async () => {
    const { key } = await newWorkspace();
    const casual = await createVoice(key, { name: 'Casual', sample_text: sample('casual-coffee') });
    const formal = await createVoice(key, { name: 'Formal', sample_text: sample('formal-bank') });
    const technical = await createVoice(key, { name: 'Technical', sample_text: sample('technical-docs') });
    expect(formal.sliders.formality).toBeGreaterThan(casual.sliders.formality + 20);
    expect(casual.sliders.enthusiasm).toBeGreaterThan(formal.sliders.enthusiasm);
    expect(technical.sliders.complexity).toBeGreaterThan(casual.sliders.complexity);
    expect(casual.traits).not.toEqual(formal.traits);
  });

  test('a sample out of bounds is refused; one training cannot learn from fails with a reason and its event', async () => {
    const { key } = await newWorkspace();
    const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(' ');
    expectProblem(
      await server.call('POST', '/v1/voices', { key, body: { name: 'Short', sample_text: words(150) } }),
      422,
      'voice_sample_too_short',
    );
    expectProblem(
      await server.call('POST', '/v1/voices', { key, body: { name: 'Long', sample_text: `${words(601)}` } }),
      422,
      'voice_sample_too_long',
    );
    const german = await createVoice(key, { name: 'Deutsch', sample_text: sample('german') });
    expect(german).toMatchObject({ status: 'failed', failure_reason: 'unsupported_language', sliders: null });
    expect(german.failure_message).toMatch(/de|German/);
    const list = await createVoice(key, { name: 'List', sample_text: sample('list') });
    expect(list).toMatchObject({ status: 'failed', failure_reason: 'sample_not_distinctive' });
    const events = (await server.call('GET', '/v1/events?type=voice.training_failed', { key })).body
      .data as components['schemas']['VoiceTrainingFailedEvent'][];
    expect(events.map((e) => e.data.voice_id).sort()).toEqual([german.id, list.id].sort());
    for (const event of events) expect(asyncApiErrors(event)).toEqual([]);
    // A voice that failed cannot be applied or checked.
    expectProblem(
      await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'hi' }], voice_id: german.id },
      }),
      409,
      'voice_not_ready',
    );
    expectProblem(
      await server.call('POST', `/v1/voices/${german.id}/check`, { key, body: { text: 'Hello there.' } }),
      409,
      'voice_not_ready',
    );
    // A new sample trains it again.
    const patched = await server.call('PATCH', `/v1/voices/${german.id}`, {
      key,
      body: { sample_text: sample('warm-charity') },
    });
    expect(patched.status, patched.text).toBe(202);
    expect(patched.body).toMatchObject({ status: 'training', failure_reason: null });
    expect(await trained(key, german.id)).toMatchObject({ status: 'ready', language: 'en' });
  });

  test('overrides merge slider by slider, null removes one; other changes answer 200 at once', async () => {
    const { key } = await newWorkspace();
    const voice = await createVoice(key, {
      name: 'Bank',
      sample_text: sample('formal-bank'),
      slider_overrides: { warmth: 90 },
    });
    const patched = await server.call('PATCH', `/v1/voices/${voice.id}`, {
      key,
      body: { slider_overrides: { warmth: null, enthusiasm: 5 }, banned_phrases: ['synergy'], name: 'Bank voice' },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({
      status: 'ready',
      name: 'Bank voice',
      slider_overrides: { enthusiasm: 5 },
      banned_phrases: ['synergy'],
    });
    expect(patched.body.sliders).toEqual({ ...voice.inferred_sliders, enthusiasm: 5 });
    // One field that breaks two rules of its schema (integer, or null) is one invalid field.
    const fractional = await server.call('PATCH', `/v1/voices/${voice.id}`, {
      key,
      body: { slider_overrides: { humor: 12.5 } },
    });
    expectProblem(fractional, 422, 'validation_failed');
    expect(fractional.body.detail).toBe('The request has 1 invalid field.');
    const listed = await server.call('GET', '/v1/voices?status=ready', { key });
    expect(listed.body.data.map((v: { id: string }) => v.id)).toEqual([voice.id]);
  });

  test('check scores the voice’s own writing above another voice’s, and finds banned phrases with their offsets', async () => {
    const { key } = await newWorkspace();
    const casual = await createVoice(key, {
      name: 'Casual',
      sample_text: sample('casual-coffee'),
      banned_phrases: ['world-class', 'game changer'],
    });
    const own = await server.call('POST', `/v1/voices/${casual.id}/check`, {
      key,
      body: { text: sample('casual-coffee') },
    });
    expect(own.status, own.text).toBe(200);
    expect(schemaErrors('/components/schemas/VoiceCheckResult', own.body)).toEqual([]);
    const other = await server.call('POST', `/v1/voices/${casual.id}/check`, {
      key,
      body: { text: sample('formal-bank'), max_suggestions: 3 },
    });
    expect(own.body.score).toBeGreaterThan(other.body.score);
    expect(own.body.rating).toBe('on_voice');
    expect(other.body.suggestions.length).toBeGreaterThan(0);
    expect(other.body.suggestions.length).toBeLessThanOrEqual(3);
    const text = '☕ Our world-class beans are a Game-Changer, honestly.';
    const banned = await server.call('POST', `/v1/voices/${casual.id}/check`, {
      key,
      body: { text, max_suggestions: 0 },
    });
    expect(banned.body.banned_phrases_found).toEqual([
      { phrase: 'world-class', matched_text: 'world-class', start: 6, end: 17 },
      { phrase: 'game changer', matched_text: 'Game-Changer', start: 30, end: 42 },
    ]);
    expect(banned.body.suggestions).toEqual([]);
    expect(banned.body).toMatchObject({ model: null, usage: { total_tokens: 0, cost_usd: 0 } });
    expectProblem(
      await server.call('POST', '/v1/voices/voc_01JD2Q7F8X3M4N5P6R7S8T9V0W/check', { key, body: { text: 'x' } }),
      404,
      'not_found',
    );
    const unknown = await server.call('POST', '/v1/chat/completions', {
      key,
      body: {
        model: 'sandbox-echo',
        messages: [{ role: 'user', content: 'hi' }],
        voice_id: 'voc_01JD2Q7F8X3M4N5P6R7S8T9V0W',
      },
    });
    expectProblem(unknown, 404, 'not_found');
    expect(unknown.body.error).toMatchObject({ param: 'voice_id', code: 'not_found' });
    expectProblem(
      await server.call('POST', `/v1/voices/${casual.id}/check`, { key, body: { text: '  \n ' } }),
      422,
      'validation_failed',
    );
  });

  test('a voice applied to the sandbox writer makes its output score better against that voice', async () => {
    const { key } = await newWorkspace();
    const casual = await createVoice(key, { name: 'Casual', sample_text: sample('casual-coffee') });
    const formal = await createVoice(key, { name: 'Formal', sample_text: sample('formal-bank') });
    const prompt =
      'Write an announcement: we are opening a second roastery in Leeds and customers will receive approximately twenty percent off during the opening week.';
    const scores: number[] = [];
    for (const voice of [casual, formal]) {
      const plain = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'sandbox-writer', messages: [{ role: 'user', content: prompt }] },
      });
      const voiced = await server.call('POST', '/v1/chat/completions', {
        key,
        body: { model: 'sandbox-writer', messages: [{ role: 'user', content: prompt }], voice_id: voice.id },
      });
      expect(voiced.status, voiced.text).toBe(200);
      expect(voiced.body.voice_id).toBe(voice.id);
      const score = async (text: string) =>
        (await server.call('POST', `/v1/voices/${voice.id}/check`, { key, body: { text, max_suggestions: 0 } })).body
          .score as number;
      const [without, withVoice] = [
        await score(plain.body.choices[0].message.content),
        await score(voiced.body.choices[0].message.content),
      ];
      expect(withVoice, `${voice.name}: ${voiced.body.choices[0].message.content}`).toBeGreaterThan(without);
      scores.push(without, withVoice);
    }
    console.log(
      `sandbox-writer scores without / with the voice: casual ${scores[0]} / ${scores[1]}, formal ${scores[2]} / ${scores[3]}`,
    );
  });

  test('delete removes the voice for good and audits it', async () => {
    const { key } = await newWorkspace();
    const voice = await createVoice(key, { name: 'Gone', sample_text: sample('warm-charity') });
    expect((await server.call('DELETE', `/v1/voices/${voice.id}`, { key })).status).toBe(204);
    expectProblem(await server.call('GET', `/v1/voices/${voice.id}`, { key }), 404, 'not_found');
    const audit = await server.call('GET', '/v1/audit-logs', { key });
    expect(audit.body.data.map((entry: { action: string }) => entry.action)).toEqual(
      expect.arrayContaining(['voice.created', 'voice.deleted']),
    );
  });
});

describe('a voice described by a model (VOICE_TRAINING_MODEL)', () => {
  let server: TestServer;
  let openai: FakeProvider;

  beforeAll(async () => {
    openai = await startFakeOpenAi();
    server = await startTestServer({
      env: {
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: openai.url,
        VOICE_TRAINING_MODEL: 'gpt-4o-mini',
        PROVIDER_MAX_RETRIES: '0',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await openai?.close();
  });

  test('the model writes the summary and traits from the sample and its measurements, billed as voices', async () => {
    const description = {
      style_summary: 'Chatty and warm, with short sentences and the odd joke.',
      traits: ['short sentences', 'second person'],
    };
    openai.enqueue({ text: JSON.stringify(description), usage: { input: 900, output: 40 } });
    const created = await server.call('POST', '/v1/voices', {
      body: { name: 'Described', sample_text: sample('casual-coffee') },
    });
    expect(created.status, created.text).toBe(202);
    const voice = await eventually(
      () => server.call('GET', `/v1/voices/${created.body.id}`),
      (answer) => answer.body.status !== 'training',
    );
    expect(voice.body).toMatchObject({ status: 'ready', ...description });
    const request = openai.requests.at(-1)!;
    expect(request.body.model).toBe('gpt-4o-mini');
    expect(request.body.response_format?.type).toBe('json_schema');
    expect(JSON.stringify(request.body.messages)).toContain('Measurements:');
    const usage = await server.call('GET', '/v1/usage?group_by=feature');
    expect(usage.body.data).toEqual([
      expect.objectContaining({ feature: 'voices', requests: 1, input_tokens: 900, output_tokens: 40 }),
    ]);
  });

  test('a provider that fails leaves the summary and traits derived from the measurements', async () => {
    openai.enqueue({ error: { status: 500, type: 'server_error', message: 'boom' } });
    const created = await server.call('POST', '/v1/voices', {
      body: { name: 'Fallback', sample_text: sample('formal-bank') },
    });
    const voice = await eventually(
      () => server.call('GET', `/v1/voices/${created.body.id}`),
      (answer) => answer.body.status !== 'training',
    );
    expect(voice.body.status).toBe('ready');
    expect(voice.body.style_summary.length).toBeGreaterThan(20);
    expect(voice.body.traits.length).toBeGreaterThan(0);
  });
});
