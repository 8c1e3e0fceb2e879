import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { eventually } from '../support/expect.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { compilePolicy, StreamGuard } from '../../src/features/policy/match.ts';

const SAMPLE = readFileSync(new URL('../voices/samples/casual-coffee.txt', import.meta.url), 'utf8');
let server: TestServer;
let n = 0;
beforeAll(async () => { server = await startTestServer({ database: 'sqlite' }); });
afterAll(async () => { await server?.close(); });
async function ws() {
  const c = await createWorkspace(server.platform.db, { name: `R ${++n}`, region: server.platform.config.region, ownerEmail: `r${n}@t.example`, now: new Date() });
  return c.secret;
}

test('voice banned phrase that normalises to nothing', async () => {
  for (const phrase of ['-', ' ', '\u200b', '—']) {
    const key = await ws();
    const created = await server.call('POST', '/v1/voices', { key, body: { name: 'V', sample_text: SAMPLE, banned_phrases: [phrase] } });
    console.log('create', JSON.stringify(phrase), created.status);
    if (created.status !== 202) continue;
    await eventually(() => server.call('GET', `/v1/voices/${created.body.id}`, { key }), (a) => a.body.status === 'ready');
    const check = await server.call('POST', `/v1/voices/${created.body.id}/check`, { key, body: { text: 'hello there' } });
    const chat = await server.call('POST', '/v1/chat/completions', { key, body: { model: 'sandbox-echo', voice_id: created.body.id, messages: [{ role: 'user', content: 'hi' }] } });
    console.log('check', check.status, check.body?.code, 'chat', chat.status, chat.body?.code ?? chat.body?.error?.code);
  }
});

test('long regex pattern: audit log reason', async () => {
  const key = await ws();
  const pattern = 'secret' + '(?:x)?'.repeat(150);
  const rule = await server.call('POST', '/v1/compliance-rules', { key, body: { name: 'Long', kind: 'regex', pattern } });
  console.log('rule', rule.status, pattern.length);
  const chat = await server.call('POST', '/v1/chat/completions', { key, body: { model: 'sandbox-echo', messages: [{ role: 'user', content: 'the secret is out' }] } });
  console.log('chat', chat.status, chat.body?.code);
  const audit = await server.call('GET', '/v1/audit-logs', { key });
  console.log('audit', audit.status, audit.body?.code);
});

test('unbounded regex in stream', () => {
  const policy = compilePolicy([{ id: 'r', kind: 'regex', pattern: 'secret.*word', action: 'block', label: 'x' }]);
  const g = new StreamGuard(policy);
  let out = '';
  const text = 'secret ' + 'a'.repeat(300) + ' word end';
  for (const ch of text.match(/.{1,5}/gs)!) { const r = g.push(ch); out += r.release; if (r.blocked) { console.log('blocked after', out.length); break; } }
  const e = g.end(); console.log('end blocked', !!e.blocked, 'released has secret', out.includes('secret'), 'apply blocked', !!policy.apply(text).blocked);
});

test('case folding', () => {
  const policy = compilePolicy([{ id: 'r', kind: 'banned_phrase', phrases: ['strasse', 'istanbul'], action: 'block', label: 'x' }]);
  console.log('STRASSE/straße', !!policy.apply('Die Straße').blocked, 'İSTANBUL', !!policy.apply('İSTANBUL').blocked, 'ISTANBUL', !!policy.apply('ISTANBUL').blocked);
});
