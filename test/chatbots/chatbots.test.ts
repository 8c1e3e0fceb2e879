// Chatbots through the API on SQLite and PostgreSQL, with the sandbox model and a real knowledge base: settings and
// the embed key; grounded replies with citations; escalation (keyword, visitor request, low confidence, by hand) and
// CSAT with their events delivered and checked against the AsyncAPI document; the signed transcript link;
// conversation filters; and the widget's operations (origins, a disabled chatbot, streaming, the visitor's limit).
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { eventually, expectProblem } from '../support/expect.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { expiresVariants, signatureVariants } from '../support/signed-links.ts';
import { schemaErrors } from '../support/spec.ts';
import { parseEvents } from '../support/sse.ts';

const ARTICLES: Record<string, string> = {
  Shipping:
    'Orders ship within two working days from our roastery in Lisbon. Delivery inside the EU takes three to five days; tracking numbers arrive by email.',
  Subscriptions:
    'A subscription sends fresh coffee every two or four weeks. Pause, skip a delivery or cancel at any time from your account page before the next roast date.',
  Storage:
    'Keep coffee in an airtight container away from light, heat and moisture. Do not store beans in the fridge; condensation ruins the aroma.',
  'Gift cards':
    'Gift cards are delivered by email, never expire and can be spent on any coffee, equipment or subscription.',
};
const SITE = 'https://shop.roastery.example';

describe.each(databaseKinds)('chatbots on %s', (kind) => {
  let server: TestServer;
  let receiver: Receiver;
  let base: string;

  beforeAll(async () => {
    [server, receiver] = await Promise.all([
      startTestServer({ database: kind, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } }),
      startReceiver(),
    ]);
    const created = await server.call('POST', '/v1/knowledge-bases', { body: { name: 'Help centre' } });
    base = created.body.id;
    const sources = [];
    for (const [title, content] of Object.entries(ARTICLES))
      sources.push(
        (await server.call('POST', `/v1/knowledge-bases/${base}/sources`, { body: { type: 'text', title, content } }))
          .body.id,
      );
    for (const source of sources) {
      await eventually(
        () => server.call('GET', `/v1/knowledge-bases/${base}/sources/${source}`),
        (got) => got.body.status === 'ready',
        20_000,
      );
    }
    const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: `${receiver.url}/chatbots-${kind}`, event_types: ['chatbot.*'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), receiver?.close()]);
  });

  async function newChatbot(body: Record<string, unknown> = {}) {
    const created = await server.call('POST', '/v1/chatbots', {
      body: {
        name: 'Roastery help',
        model: 'sandbox-writer',
        instructions: 'You answer questions about our coffee shop.',
        knowledge_base_ids: [base],
        allowed_origins: [SITE],
        ...body,
      },
    });
    expect(created.status, created.text).toBe(201);
    expect(schemaErrors('/components/schemas/Chatbot', created.body)).toEqual([]);
    return created.body;
  }

  async function say(chatbot: string, content: string, extra: Record<string, unknown> = {}) {
    const answer = await server.call('POST', `/v1/chatbots/${chatbot}/messages`, { body: { content, ...extra } });
    expect(answer.status, answer.text).toBe(200);
    expect(schemaErrors('/components/schemas/ChatbotReply', answer.body)).toEqual([]);
    return answer.body;
  }

  function embedCall(method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) {
    return server.call(method, path, { key: null, body, headers: { 'X-Embed-Key': key, Origin: SITE, ...headers } });
  }

  async function eventsOf(type: string, conversationId: string, count = 1) {
    const found = await eventually(
      async () =>
        receiver.requests.filter(
          (request) => request.body?.type === type && request.body?.data?.conversation_id === conversationId,
        ),
      (list) => list.length >= count,
      15_000,
    );
    for (const event of found) expect(asyncApiErrors(event.body)).toEqual([]);
    return found.map((request) => request.body);
  }

  test('settings: defaults, validation, merge on update, list filters', async () => {
    const bot = await newChatbot({ knowledge_base_ids: [] });
    expect(bot).toMatchObject({
      object: 'chatbot',
      greeting: 'Hi! How can I help you today?',
      temperature: 0.3,
      enabled: true,
      voice_id: null,
      escalation: { mode: 'disabled', confidence_threshold: 0.4, on_visitor_request: true },
      widget: {
        theme: 'auto',
        accent_color: '#2563EB',
        position: 'bottom_right',
        csat_enabled: true,
        show_sources: true,
      },
    });
    expect(bot.embed.key).toMatch(/^emb_[A-Za-z0-9]{32}$/);
    expect(bot.embed.snippet).toContain(`/widget.js" data-embed-key="${bot.embed.key}"`);

    const updated = await server.call('PATCH', `/v1/chatbots/${bot.id}`, {
      body: { escalation: { mode: 'webhook' }, widget: { theme: 'dark' }, enabled: false },
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({
      enabled: false,
      escalation: { mode: 'webhook', confidence_threshold: 0.4 },
      widget: { theme: 'dark', accent_color: '#2563EB' },
    });
    const disabled = await server.call('GET', '/v1/chatbots?enabled=false');
    expect(disabled.body.data.map((row: { id: string }) => row.id)).toContain(bot.id);
    expect(
      (await server.call('GET', '/v1/chatbots?enabled=true')).body.data.map((row: { id: string }) => row.id),
    ).not.toContain(bot.id);

    expectProblem(
      await server.call('PATCH', `/v1/chatbots/${bot.id}`, { body: { escalation: { mode: 'email' } } }),
      422,
      'validation_failed',
    );
    expectProblem(
      await server.call('POST', '/v1/chatbots', { body: { name: 'x', model: 'no-such-model', instructions: 'x' } }),
      404,
      'model_not_found',
    );
    const unknownBase = await server.call('POST', '/v1/chatbots', {
      body: {
        name: 'x',
        model: 'sandbox-writer',
        instructions: 'x',
        knowledge_base_ids: ['kb_01JD2R5T6V7W8X9Y0Z1A2B3C4D'],
      },
    });
    expectProblem(unknownBase, 404, 'not_found');
    expect(unknownBase.body.errors[0].pointer).toBe('/knowledge_base_ids/0');
    expectProblem(await server.call('GET', '/v1/chatbots/bot_01JD4K7M2N3P4Q5R6S7T8V9W0X'), 404, 'not_found');
  });

  test('a knowledge base or a voice that a chatbot uses cannot be deleted', async () => {
    const other = (await server.call('POST', '/v1/knowledge-bases', { body: { name: 'In use' } })).body.id;
    const bot = await newChatbot({ knowledge_base_ids: [other] });
    expectProblem(await server.call('DELETE', `/v1/knowledge-bases/${other}`), 409, 'conflict');
    await server.call('PATCH', `/v1/chatbots/${bot.id}`, { body: { knowledge_base_ids: [] } });
    expect((await server.call('DELETE', `/v1/knowledge-bases/${other}`)).status).toBe(204);
  });

  test('a grounded reply cites the passages it used; an unknown question says so', async () => {
    const bot = await newChatbot();
    const reply = await say(bot.id, 'How long does delivery take inside the EU?', {
      visitor: { external_id: 'cust-42', locale: 'en-GB' },
    });
    expect(reply).toMatchObject({
      object: 'chatbot.reply',
      conversation_created: true,
      escalated: false,
      escalation_reason: null,
      model: 'sandbox-writer',
    });
    expect(reply.intent).toBe('order_status');
    expect(reply.message.content).toMatch(/\[1\]/);
    expect(reply.message.citations.length).toBeGreaterThan(0);
    expect(reply.message.citations[0]).toMatchObject({ knowledge_base_id: base, title: 'Shipping', url: null });
    expect(reply.confidence).toBeGreaterThanOrEqual(0.5);
    expect(reply.usage.total_tokens).toBeGreaterThan(0);

    const next = await say(bot.id, 'Can I pause my subscription?', { conversation_id: reply.conversation_id });
    expect(next.conversation_created).toBe(false);
    expect(next.message.citations.map((c: { title: string }) => c.title)).toContain('Subscriptions');

    const unknown = await say(bot.id, 'Which parking garage is closest to the opera?');
    expect(unknown.message.citations).toEqual([]);
    expect(unknown.confidence).toBeLessThan(0.4);
    expect(unknown.escalated).toBe(false); // escalation is disabled by default

    const conversation = await server.call('GET', `/v1/chatbots/${bot.id}/conversations/${reply.conversation_id}`);
    expect(conversation.status).toBe(200);
    expect(schemaErrors('/components/schemas/ChatbotConversation', conversation.body)).toEqual([]);
    expect(conversation.body).toMatchObject({
      channel: 'api',
      message_count: 4,
      intent: 'order_status',
      visitor: { external_id: 'cust-42', locale: 'en-GB' },
    });
    expect(conversation.body.messages.map((m: { role: string }) => m.role)).toEqual([
      'visitor',
      'assistant',
      'visitor',
      'assistant',
    ]);
    expect(conversation.body.messages[1].citations.length).toBeGreaterThan(0);

    const usage = await server.call('GET', '/v1/usage?group_by=feature');
    expect(JSON.stringify(usage.body)).toContain('chatbots');
  });

  test('escalation: a keyword, a request for a person, low confidence; by hand; CSAT; events and the transcript link', async () => {
    const bot = await newChatbot({
      escalation: {
        mode: 'webhook',
        keywords: ['refund'],
        confidence_threshold: 0.3,
        handoff_message: 'A colleague will take over.',
      },
    });
    const keyword = await say(bot.id, 'I want a Refund for my last order');
    expect(keyword).toMatchObject({
      escalated: true,
      escalation_reason: 'keyword',
      message: { content: 'A colleague will take over.', citations: [] },
    });
    const [escalated] = await eventsOf('chatbot.conversation.escalated', keyword.conversation_id);
    expect(escalated.data).toMatchObject({
      conversation_id: keyword.conversation_id,
      chatbot_id: bot.id,
      source: 'automatic',
      reason: 'keyword',
      note: 'refund',
      requested_agent: null,
    });

    // The transcript link needs no key, as JSON or as a page; a changed link is refused.
    const link = new URL(escalated.data.transcript_url);
    const transcript = await server.call('GET', link.pathname + link.search, { key: null });
    expect(transcript.status, transcript.text).toBe(200);
    expect(transcript.body.messages[0].content).toBe('I want a Refund for my last order');
    const page = await server.call('GET', link.pathname + link.search, { key: null, headers: { Accept: 'text/html' } });
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('I want a Refund for my last order');
    const tampered = new URL(link);
    tampered.searchParams.set('expires', String(Number(link.searchParams.get('expires')) + 1));
    expectProblem(await server.call('GET', tampered.pathname + tampered.search, { key: null }), 404, 'not_found');
    // An expired link (signed with the server's key, as the server would have signed it a week ago).
    const secret = await server.platform.db
      .selectFrom('document_token_keys')
      .select('secret')
      .where('id', '=', 'transcript-link')
      .executeTakeFirstOrThrow();
    const past = Math.floor(Date.now() / 1000) - 60;
    const signature = createHmac('sha256', Buffer.from(secret.secret, 'base64url'))
      .update(`${keyword.conversation_id}.${past}`)
      .digest('base64url');
    const expired = await server.call(
      'GET',
      `/v1/public/transcripts/${keyword.conversation_id}?expires=${past}&signature=${signature}`,
      { key: null },
    );
    expectProblem(expired, 404, 'not_found');
    expect(expired.body.detail).toMatch(/expired/);

    // An escalation is final: by hand after an automatic one is 409; the chatbot keeps answering.
    expectProblem(
      await server.call('POST', `/v1/chatbots/${bot.id}/conversations/${keyword.conversation_id}/escalate`, {
        body: { reason: 'complaint' },
      }),
      409,
      'conversation_already_escalated',
    );
    const after = await say(bot.id, 'Where is my gift card?', { conversation_id: keyword.conversation_id });
    expect(after.escalated).toBe(false);

    const person = await say(bot.id, 'Can I talk to the billing team please?');
    expect(person).toMatchObject({ escalated: true, escalation_reason: 'visitor_request', intent: 'human_handoff' });
    const [handoff] = await eventsOf('chatbot.conversation.escalated', person.conversation_id);
    expect(handoff.data.requested_agent).toMatch(/billing team/);

    const vague = await say(bot.id, 'Which parking garage is closest to the opera?');
    expect(vague).toMatchObject({ escalated: true, escalation_reason: 'low_confidence' });

    const calm = await say(bot.id, 'Should I keep beans in the fridge?');
    expect(calm.escalated).toBe(false);
    const manual = await server.call('POST', `/v1/chatbots/${bot.id}/conversations/${calm.conversation_id}/escalate`, {
      body: { reason: 'sales_opportunity', note: 'Asked about wholesale.' },
    });
    expect(manual.status, manual.text).toBe(200);
    expect(manual.body.escalation).toMatchObject({
      status: 'escalated',
      source: 'manual',
      reason: 'sales_opportunity',
      note: 'Asked about wholesale.',
    });
    await eventsOf('chatbot.conversation.escalated', calm.conversation_id);

    // CSAT through the API, twice: the latest counts, and each is an event.
    const rated = await server.call('POST', `/v1/chatbots/${bot.id}/conversations/${calm.conversation_id}/csat`, {
      body: { score: 2, comment: 'Slow' },
    });
    expect(rated.status, rated.text).toBe(200);
    expect(rated.body.csat).toMatchObject({ score: 2, comment: 'Slow', source: 'api' });
    await server.call('POST', `/v1/chatbots/${bot.id}/conversations/${calm.conversation_id}/csat`, {
      body: { score: 4 },
    });
    const ratings = await eventsOf('chatbot.csat.received', calm.conversation_id, 2);
    expect(ratings.map((event) => event.data.score).sort()).toEqual([2, 4]);
    expect(ratings[0].data).toMatchObject({
      conversation_id: calm.conversation_id,
      chatbot_id: bot.id,
      source: 'api',
      language: null,
    });

    // Filters.
    const ids = async (query: string) =>
      (await server.call('GET', `/v1/chatbots/${bot.id}/conversations?${query}`)).body.data.map(
        (row: { id: string }) => row.id,
      );
    expect(await ids('escalation_status=escalated')).toEqual(
      expect.arrayContaining([
        keyword.conversation_id,
        person.conversation_id,
        vague.conversation_id,
        calm.conversation_id,
      ]),
    );
    expect(await ids('escalation_status=none')).toEqual([]);
    expect(await ids('csat_min=4')).toEqual([calm.conversation_id]);
    expect(await ids('csat_max=3')).toEqual([]);
    expect(await ids('intent=human_handoff')).toEqual([person.conversation_id]);
    expect(await ids('intent=billing,human_handoff')).toContain(person.conversation_id);
    expect(await ids('channel=embed')).toEqual([]);
    expect(await ids(`started_after=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).toEqual([]);
    expect((await ids('started_before=2100-01-01T00:00:00Z')).length).toBe(4);
    expectProblem(
      await server.call('GET', `/v1/chatbots/${bot.id}/conversations?csat_min=5&csat_max=1`),
      422,
      'validation_failed',
    );
  });

  test('a transcript link works only as the server wrote it: another spelling of its signature or expires does not', async () => {
    const bot = await newChatbot({ escalation: { mode: 'webhook', keywords: ['refund'] } });
    const reply = await say(bot.id, 'A refund, please.');
    const events = await server.call('GET', '/v1/events?type=chatbot.conversation.escalated&limit=100');
    const link = new URL(
      events.body.data.find(
        (event: components['schemas']['ChatbotConversationEscalatedEvent']) =>
          event.data.conversation_id === reply.conversation_id,
      ).data.transcript_url,
    );
    const respelled = (name: string, value: string) => {
      const url = new URL(link);
      url.searchParams.set(name, value);
      return url.pathname + url.search;
    };
    // What the contract's parameters refuse is 422 (a padded signature is longer than 43 characters; `+1…` and ` 1…`
    // are not decimal numbers); every other spelling is a link that does not work.
    for (const signature of signatureVariants(link.searchParams.get('signature')!)) {
      const answer = await server.call('GET', respelled('signature', signature), { key: null });
      expect({ signature, status: answer.status, code: answer.body.code }).toEqual({
        signature,
        ...(signature.endsWith('=') ? { status: 422, code: 'validation_failed' } : { status: 404, code: 'not_found' }),
      });
    }
    for (const expires of expiresVariants(link.searchParams.get('expires')!)) {
      const answer = await server.call('GET', respelled('expires', expires), { key: null });
      expect({ expires, status: answer.status, code: answer.body.code }).toEqual({
        expires,
        ...(/^\d/.test(expires) ? { status: 404, code: 'not_found' } : { status: 422, code: 'validation_failed' }),
      });
    }
    const canonical = await server.call('GET', link.pathname + link.search, { key: null });
    expect(canonical.status, canonical.text).toBe(200);
  });

  test("a widget visitor refused by a spend limit learns the assistant is unavailable, not the workspace's limit", async () => {
    const project = await server.call('POST', '/v1/projects', { body: { name: `Widget budget ${kind}` } });
    expect(project.status).toBe(201);
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'project', id: project.body.id }, amount_usd: 1e-9, period: 'month' },
    });
    expect(limit.status).toBe(201);
    const spent = await server.call('POST', '/v1/chat/completions', {
      body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Hello' }], project_id: project.body.id },
    });
    expect(spent.status, spent.text).toBe(200);
    const bot = await newChatbot({ project_id: project.body.id });
    const refused = await embedCall('POST', '/v1/embed/messages', bot.embed.key, {
      content: 'How long does delivery take?',
      visitor_id: 'visitor-budget-0123456789',
    });
    expectProblem(refused, 402, 'spend_limit_reached');
    expect(refused.body).not.toHaveProperty('spend_limit');
    expect(refused.body.detail).toBe('The assistant is unavailable right now; please try again later.');
    expect(refused.text).not.toMatch(/prj_|lim_|\d\.\d|usd|resets/i);
    // The workspace's own key still gets the limit's details.
    const own = await server.call('POST', `/v1/chatbots/${bot.id}/messages`, { body: { content: 'Delivery?' } });
    expect(own.status).toBe(402);
    expect(own.body.spend_limit.id).toBe(limit.body.id);
  });

  test('the widget: origins, keys, a disabled chatbot, streamed replies, ratings and the visitor limit', async () => {
    const bot = await newChatbot({ widget: { show_sources: true } });
    const key = bot.embed.key;
    const config = await embedCall('GET', '/v1/embed/config', key);
    expect(config.status, config.text).toBe(200);
    expect(config.body).toMatchObject({
      object: 'embed.config',
      chatbot_id: bot.id,
      name: 'Roastery help',
      enabled: true,
    });
    expect(config.body).not.toHaveProperty('instructions');

    expectProblem(
      await embedCall('GET', '/v1/embed/config', key, undefined, { Origin: 'https://evil.example' }),
      403,
      'origin_not_allowed',
    );
    expectProblem(
      await server.call('GET', '/v1/embed/config', { key: null, headers: { 'X-Embed-Key': key } }),
      403,
      'origin_not_allowed',
    );
    expectProblem(
      await embedCall('GET', '/v1/embed/config', 'emb_00000000000000000000000000000000'),
      401,
      'invalid_embed_key',
    );
    expectProblem(await server.call('GET', '/v1/embed/config', { key: null }), 401, 'invalid_embed_key');

    const visitor = 'visitor-0123456789abcdef';
    const stream = await embedCall('POST', '/v1/embed/messages', key, {
      content: 'How long does delivery take?',
      visitor_id: visitor,
      stream: true,
      page_url: `${SITE}/help`,
      locale: 'en-US',
    });
    expect(stream.status, stream.text).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseEvents(stream.text);
    expect(events.at(-1)!.event).toBe('reply');
    const deltas = events
      .filter((event) => event.event === 'delta')
      .map((event) => JSON.parse(event.data).content)
      .join('');
    const reply = JSON.parse(events.at(-1)!.data);
    expect(schemaErrors('/components/schemas/EmbedReply', reply)).toEqual([]);
    expect(reply.message.content).toBe(deltas.trim());
    expect(reply.message.citations[0]).toMatchObject({ title: 'Shipping', url: null });
    expect(reply.message.citations[0]).not.toHaveProperty('knowledge_base_id');

    // Only the same visitor continues or rates the conversation.
    const continued = await embedCall('POST', '/v1/embed/messages', key, {
      content: 'And gift cards?',
      visitor_id: visitor,
      conversation_id: reply.conversation_id,
    });
    expect(continued.status, continued.text).toBe(200);
    expect(continued.body.conversation_created).toBe(false);
    expectProblem(
      await embedCall('POST', '/v1/embed/messages', key, {
        content: 'hi',
        visitor_id: 'someone-else-0123456',
        conversation_id: reply.conversation_id,
      }),
      404,
      'not_found',
    );
    expectProblem(
      await server.call('POST', `/v1/chatbots/${bot.id}/messages`, {
        body: { content: 'x', conversation_id: reply.conversation_id },
      }),
      409,
      'conflict',
    );
    expectProblem(
      await embedCall('POST', '/v1/embed/csat', key, {
        conversation_id: reply.conversation_id,
        visitor_id: 'someone-else-0123456',
        score: 5,
      }),
      404,
      'not_found',
    );
    const csat = await embedCall('POST', '/v1/embed/csat', key, {
      conversation_id: reply.conversation_id,
      visitor_id: visitor,
      score: 5,
      comment: 'Great',
    });
    expect(csat.status, csat.text).toBe(200);
    expect(csat.body).toMatchObject({ object: 'embed.csat', score: 5, comment: 'Great' });
    const [rating] = await eventsOf('chatbot.csat.received', reply.conversation_id);
    expect(rating.data).toMatchObject({ source: 'embed', score: 5, language: 'en-US' });
    const stored = await server.call('GET', `/v1/chatbots/${bot.id}/conversations?channel=embed`);
    expect(stored.body.data[0]).toMatchObject({
      id: reply.conversation_id,
      channel: 'embed',
      page_url: `${SITE}/help`,
      visitor: { id: visitor },
      csat: { score: 5, source: 'embed' },
    });

    // A rotated key keeps working through its grace period; a rotation without one ends it at once.
    const rotated = await server.call('POST', `/v1/chatbots/${bot.id}/embed-key/rotate`, { body: {} });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.embed.previous_key).toBe(key);
    expect((await embedCall('GET', '/v1/embed/config', key)).status).toBe(200);
    const again = await server.call('POST', `/v1/chatbots/${bot.id}/embed-key/rotate`, {
      body: { grace_period_seconds: 0 },
    });
    expect(again.body.embed.previous_key).toBeNull();
    expectProblem(await embedCall('GET', '/v1/embed/config', key), 401, 'invalid_embed_key');
    const current = again.body.embed.key;

    // Disabled: the configuration says so, messages are refused; server-side messages still work.
    await server.call('PATCH', `/v1/chatbots/${bot.id}`, { body: { enabled: false } });
    expect((await embedCall('GET', '/v1/embed/config', current)).body.enabled).toBe(false);
    expectProblem(
      await embedCall('POST', '/v1/embed/messages', current, { content: 'hi', visitor_id: visitor }),
      403,
      'chatbot_disabled',
    );
    expect((await server.call('POST', `/v1/chatbots/${bot.id}/messages`, { body: { content: 'hello' } })).status).toBe(
      200,
    );
    await server.call('PATCH', `/v1/chatbots/${bot.id}`, { body: { enabled: true } });

    // 30 messages a minute per visitor (two were sent above and one rating).
    const busy = 'busy-visitor-0123456789';
    let refused: Awaited<ReturnType<typeof embedCall>> | undefined;
    for (let i = 0; i < 31 && !refused; i++) {
      const answer = await embedCall('POST', '/v1/embed/messages', current, { content: 'hello', visitor_id: busy });
      if (answer.status === 429) refused = answer;
      else expect(answer.status, answer.text).toBe(200);
    }
    expect(refused).toBeDefined();
    expectProblem(refused!, 429, 'rate_limited');
    expect(refused!.headers.get('retry-after')).toMatch(/^\d+$/);

    // Deleting the chatbot takes the widget offline.
    expect((await server.call('DELETE', `/v1/chatbots/${bot.id}`)).status).toBe(204);
    expectProblem(await embedCall('GET', '/v1/embed/config', current), 401, 'invalid_embed_key');
  });
});
