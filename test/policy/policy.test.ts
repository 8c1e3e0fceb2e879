// The output policy through the API on SQLite and PostgreSQL: compliance rules managed through /v1/compliance-rules
// (with their validation), and every generated output checked before it leaves the server. sandbox-echo answers the
// user's message as it is, so a test chooses exactly what the model "writes". A block is a 422 policy_violation (or,
// in a stream, a last `event: error` after text that was checked: nothing of the blocked phrase is sent); the
// blocked output is kept in the audit log, not returned; audit.policy.violation is emitted, valid against its AsyncAPI
// message and delivered to a subscribed receiver. A redact rule rewrites the match and the output goes on.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { eventually, expectProblem } from '../support/expect.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';
import { parseEvents } from '../support/sse.ts';

const SAMPLE = readFileSync(new URL('../voices/samples/casual-coffee.txt', import.meta.url), 'utf8');

describe.each(databaseKinds)('output policy on %s', (kind) => {
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
      name: `Policy ${++counter}`,
      region: server.platform.config.region,
      ownerEmail: `p${counter}@test.example`,
      now: new Date(),
    });
    return { key: created.secret, id: created.workspace.id, userId: created.apiKey.user_id as string | null };
  }

  async function voiceWith(key: string, banned: string[]) {
    const created = await server.call('POST', '/v1/voices', {
      key,
      body: { name: 'House voice', sample_text: SAMPLE, banned_phrases: banned },
    });
    expect(created.status, created.text).toBe(202);
    await eventually(
      () => server.call('GET', `/v1/voices/${created.body.id}`, { key }),
      (answer) => answer.body.status === 'ready',
    );
    return created.body.id as string;
  }

  const echo = (key: string, content: string, extra: Record<string, unknown> = {}) =>
    server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'sandbox-echo', messages: [{ role: 'user', content }], ...extra },
    });

  test('compliance rules: create, list, get, update, delete, with every kind’s fields checked', async () => {
    const { key } = await newWorkspace();
    const created = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No superlatives', kind: 'banned_phrase', phrases: ['best in class', 'world-class'] },
    });
    expect(created.status, created.text).toBe(201);
    expect(schemaErrors('/components/schemas/ComplianceRule', created.body)).toEqual([]);
    expect(created.body).toMatchObject({
      kind: 'banned_phrase',
      action: 'block',
      replacement: null,
      enabled: true,
      project_id: null,
      pattern: null,
      personal_data_types: [],
    });
    const id = created.body.id as string;
    expect(created.headers.get('location')).toBe(`/v1/compliance-rules/${id}`);
    const regex = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'Ticket ids', kind: 'regex', pattern: '\\bACME-\\d{4,}\\b', action: 'redact' },
    });
    expect(regex.status, regex.text).toBe(201);
    expect(regex.body.replacement).toBe('[redacted]');
    expect(
      (await server.call('GET', '/v1/compliance-rules?kind=regex', { key })).body.data.map((r: { id: string }) => r.id),
    ).toEqual([regex.body.id]);
    const updated = await server.call('PATCH', `/v1/compliance-rules/${id}`, {
      key,
      body: { enabled: false, action: 'redact', replacement: '***' },
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ enabled: false, action: 'redact', replacement: '***', kind: 'banned_phrase' });
    expect((await server.call('GET', '/v1/compliance-rules?enabled=false', { key })).body.data).toHaveLength(1);
    expect(
      (await server.call('PATCH', `/v1/compliance-rules/${id}`, { key, body: { replacement: null } })).body.replacement,
    ).toBe('[redacted]');
    expect((await server.call('DELETE', `/v1/compliance-rules/${id}`, { key })).status).toBe(204);
    expectProblem(await server.call('GET', `/v1/compliance-rules/${id}`, { key }), 404, 'not_found');

    const refused = async (body: Record<string, unknown>, pointer: string) => {
      const answer = await server.call('POST', '/v1/compliance-rules', { key, body: { name: 'Bad', ...body } });
      expectProblem(answer, 422, 'validation_failed');
      expect(answer.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    };
    await refused({ kind: 'banned_phrase' }, '/phrases');
    await refused({ kind: 'regex' }, '/pattern');
    await refused({ kind: 'regex', pattern: '(unclosed' }, '/pattern');
    await refused({ kind: 'regex', pattern: '(?<=lookbehind)x' }, '/pattern');
    await refused({ kind: 'regex', pattern: 'a*' }, '/pattern');
    await refused({ kind: 'personal_data', personal_data_types: [] }, '/personal_data_types');
    await refused({ kind: 'personal_data', personal_data_types: ['email'], phrases: ['x'] }, '/phrases');
    await refused({ kind: 'banned_phrase', phrases: ['x'], replacement: 'y' }, '/replacement');
    expectProblem(
      await server.call('POST', '/v1/compliance-rules', {
        key,
        body: { name: 'x', kind: 'banned_phrase', phrases: ['x'], project_id: 'prj_01JD1N4Q8R2S5T7V9W3X6Y0Z1A' },
      }),
      404,
      'not_found',
    );
    const editor = await server.createKey('editor', { key });
    expectProblem(
      await server.call('POST', '/v1/compliance-rules', {
        key: editor.secret,
        body: { name: 'x', kind: 'banned_phrase', phrases: ['x'] },
      }),
      403,
      'insufficient_role',
    );
  });

  test('a banned phrase of the voice blocks the answer in any spelling: 422, audit entry with the output, event delivered', async () => {
    const { key, id: workspaceId, userId } = await newWorkspace();
    const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
      key,
      body: { url: `${receiver.url}/policy-${counter}`, event_types: ['audit.policy.violation'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const voiceId = await voiceWith(key, ['game-changer', 'world-class']);
    const said = 'Honestly, this roast is a GAME  changer for mornings.';
    const blocked = await echo(key, said, { voice_id: voiceId });
    expectProblem(blocked, 422, 'policy_violation');
    expect(blocked.body.rule_id).toBe('voice.banned_phrases');
    expect(blocked.body.error).toMatchObject({ code: 'policy_violation', type: 'invalid_request_error' });
    expect(blocked.text).not.toContain('GAME  changer');
    // Without the voice, the same words pass.
    expect((await echo(key, said)).body.choices[0].message.content).toBe(said);

    const events = (await server.call('GET', '/v1/events?type=audit.policy.violation', { key })).body
      .data as components['schemas']['AuditPolicyViolationEvent'][];
    expect(events).toHaveLength(1);
    expect(asyncApiErrors(events[0]!)).toEqual([]);
    expect(Object.keys(events[0]!.data).slice(0, 5)).toEqual([
      'rule_id',
      'project_id',
      'user_id',
      'blocked_at',
      'reason',
    ]);
    expect(events[0]!.data).toMatchObject({
      rule_id: 'voice.banned_phrases',
      project_id: null,
      user_id: userId,
      voice_id: voiceId,
      reason: expect.stringContaining('game-changer'),
    });
    expect(events[0]!.workspace_id).toBe(workspaceId);
    const delivered = await eventually(
      async () => receiver.requests.find((request) => request.body?.id === events[0]!.id),
      (request) => request !== undefined,
      15_000,
    );
    expect(delivered!.body.type).toBe('audit.policy.violation');
    const audit = (await server.call('GET', '/v1/audit-logs', { key })).body
      .data as components['schemas']['AuditLogEntry'][];
    const entry = audit.find((e) => e.action === 'policy.violation')!;
    expect(entry).toMatchObject({
      target: { type: 'voice', id: voiceId },
      details: { rule_id: 'voice.banned_phrases', blocked_output: said },
    });
  });

  test('a stream never lets a banned phrase out: checked text, then event: error with policy_violation', async () => {
    const { key } = await newWorkspace();
    const voiceId = await voiceWith(key, ['world-class']);
    const said =
      'Our beans are roasted every Tuesday in Leeds and they are simply world–class, you will taste it at once.';
    const answer = await echo(key, said, { voice_id: voiceId, stream: true });
    expect(answer.status).toBe(200);
    const events = parseEvents(answer.text);
    const last = events.at(-1)!;
    expect(last.event).toBe('error');
    expect(JSON.parse(last.data)).toMatchObject({ code: 'policy_violation', rule_id: 'voice.banned_phrases' });
    const sent = events
      .filter((e) => e.event === undefined && e.data !== '[DONE]')
      .map((e) => JSON.parse(e.data).choices[0]?.delta?.content ?? '')
      .join('');
    // What was sent is a prefix of the text before the phrase, and not a letter of the phrase itself.
    expect(said.startsWith(sent)).toBe(true);
    expect(sent.length).toBeLessThanOrEqual(said.indexOf('world'));
    expect(sent.length).toBeGreaterThan(0);
    expect(answer.text).not.toContain('[DONE]');
  });

  test('a long regex match is blocked even beyond what a stream holds back; the kept output has redact rules applied', async () => {
    const { key } = await newWorkspace();
    await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No emails', kind: 'personal_data', personal_data_types: ['email'], action: 'redact' },
    });
    // A long pattern makes a long reason: the audit entry keeps what its schema allows, and the log stays readable.
    const pattern = `secret(?:${Array.from({ length: 60 }, (_, i) => `x${i}`).join('|')}|[^.]*)word`;
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'Secret words', kind: 'regex', pattern },
    });
    expect(rule.status, rule.text).toBe(201);
    const said = `Mail sam@corner.example: the secret ${'is very long and goes on '.repeat(14)}word.`;
    const blocked = await echo(key, said);
    expectProblem(blocked, 422, 'policy_violation');
    expect(blocked.body.rule_id).toBe(rule.body.id);
    const audit = await server.call('GET', '/v1/audit-logs?action=policy.violation', { key });
    expect(audit.status, audit.text).toBe(200);
    expect(audit.body.data[0].details.blocked_output).toBe(said.replace('sam@corner.example', '[redacted]'));
  });

  test('look-alike characters do not slip past the policy, streamed or not, and ordinary English still passes', async () => {
    const { key } = await newWorkspace();
    const phrase = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'Forbidden words', kind: 'banned_phrase', phrases: ['forbiddenword', 'modem'] },
    });
    expect(phrase.status, phrase.text).toBe(201);
    const secret = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'Secrets', kind: 'regex', pattern: 'SECRET-[0-9]{4}', action: 'redact' },
    });
    expect(secret.status, secret.text).toBe(201);
    const sentOf = (text: string) =>
      parseEvents(text)
        .filter((e) => e.event === undefined && e.data !== '[DONE]')
        .map((e) => JSON.parse(e.data).choices[0]?.delta?.content ?? '')
        .join('');
    const before = 'We roast our beans every Tuesday morning in Leeds, and then we say ';
    // Cyrillic о, Greek ο, dotless ı.
    for (const word of ['f\u043Erbiddenword', 'f\u03BFrbiddenword', 'forb\u0131ddenword']) {
      const said = `${before}${word} to everyone.`;
      const blocked = await echo(key, said);
      expectProblem(blocked, 422, 'policy_violation');
      expect(blocked.body.rule_id).toBe(phrase.body.id);
      const streamed = await echo(key, said, { stream: true });
      expect(streamed.status).toBe(200);
      const events = parseEvents(streamed.text);
      expect(events.at(-1)!.event).toBe('error');
      expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ code: 'policy_violation', rule_id: phrase.body.id });
      const sent = sentOf(streamed.text);
      expect(sent.length).toBeGreaterThan(0);
      expect(before.startsWith(sent)).toBe(true);
    }
    // Cyrillic Е, a non-breaking hyphen (U+2011), an en dash (U+2013): redacted, streamed or not.
    const said = 'Use S\u0415CRET-1234, SECRET\u20115678 or SECRET\u20139012 today, with the modern office printer.';
    const expected = 'Use [redacted], [redacted] or [redacted] today, with the modern office printer.';
    expect((await echo(key, said)).body.choices[0].message.content).toBe(expected);
    expect(sentOf((await echo(key, said, { stream: true })).text)).toBe(expected);
  });

  test('a voice’s banned phrase that can match nothing is refused, not a 500 on every later use', async () => {
    const { key } = await newWorkspace();
    const created = await server.call('POST', '/v1/voices', {
      key,
      body: { name: 'Dashes', sample_text: SAMPLE, banned_phrases: ['fine', ' — '] },
    });
    expectProblem(created, 422, 'validation_failed');
    expect(created.body.errors).toEqual([{ pointer: '/banned_phrases/1', detail: expect.any(String) }]);
  });

  test('workspace rules: personal data is redacted (stream and not), a regex blocks, a project’s rule applies only to it', async () => {
    const { key } = await newWorkspace();
    const pii = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: {
        name: 'No personal data',
        kind: 'personal_data',
        personal_data_types: ['email', 'payment_card'],
        action: 'redact',
      },
    });
    expect(pii.status, pii.text).toBe(201);
    const said = 'Write to jane.doe@example.com or pay with 4111 1111 1111 1111 today; order 2026 ships soon.';
    const expected = 'Write to [redacted] or pay with [redacted] today; order 2026 ships soon.';
    expect((await echo(key, said)).body.choices[0].message.content).toBe(expected);
    const streamed = parseEvents((await echo(key, said, { stream: true })).text)
      .filter((e) => e.event === undefined && e.data !== '[DONE]')
      .map((e) => JSON.parse(e.data).choices[0]?.delta?.content ?? '')
      .join('');
    expect(streamed).toBe(expected);

    const regex = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'Internal tickets', kind: 'regex', pattern: '\\bACME-\\d{4,}\\b' },
    });
    const blocked = await echo(key, 'See acme-12345 for details.');
    expectProblem(blocked, 422, 'policy_violation');
    expect(blocked.body.rule_id).toBe(regex.body.id);

    const project = await server.call('POST', '/v1/projects', { key, body: { name: 'Launch' } });
    await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'Launch embargo', kind: 'banned_phrase', phrases: ['Project Falcon'], project_id: project.body.id },
    });
    // Chat completions belong to no project: the project's rule does not apply to them.
    expect((await echo(key, 'Project Falcon is coming.')).status).toBe(200);
    // A disabled rule applies to nothing.
    await server.call('PATCH', `/v1/compliance-rules/${regex.body.id}`, { key, body: { enabled: false } });
    expect((await echo(key, 'See ACME-12345 for details.')).status).toBe(200);
  });
});
