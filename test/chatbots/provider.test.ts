// A chatbot on a real provider's wire format (a fake OpenAI upstream on loopback): the model classifies the intent
// (JSON), then answers from the passages that hybrid search found; the rules take over when the classification fails; a request
// for a named person escalates without an answer call; a provider failure stores nothing.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

describe('a chatbot on an OpenAI model', () => {
  let server: TestServer;
  let openai: FakeProvider;
  let bot: string;

  beforeAll(async () => {
    openai = await startFakeOpenAi();
    server = await startTestServer({
      env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: openai.url, PROVIDER_MAX_RETRIES: '0' },
    });
    const base = (await server.call('POST', '/v1/knowledge-bases', { body: { name: 'Help' } })).body.id;
    const source = await server.call('POST', `/v1/knowledge-bases/${base}/sources`, {
      body: {
        type: 'text',
        title: 'Refunds',
        content: 'Refunds are paid to the original payment method within 14 days of receiving the returned goods.',
      },
    });
    await eventually(
      () => server.call('GET', `/v1/knowledge-bases/${base}/sources/${source.body.id}`),
      (got) => got.body.status === 'ready',
      20_000,
    );
    const created = await server.call('POST', '/v1/chatbots', {
      body: {
        name: 'Shop help',
        model: 'gpt-4o-mini',
        instructions: 'Be brief.',
        knowledge_base_ids: [base],
        escalation: { mode: 'webhook', confidence_threshold: 0.2 },
      },
    });
    expect(created.status, created.text).toBe(201);
    bot = created.body.id;
  });
  afterAll(async () => {
    await server?.close();
    await openai?.close();
  });

  const classification = (fields: Record<string, unknown>) => ({
    text: JSON.stringify({
      intent: 'billing',
      confidence: 0.92,
      asks_for_person: false,
      requested_agent: null,
      ...fields,
    }),
  });

  test('the model classifies, then answers from the passages; both calls count', async () => {
    const before = openai.requests.length;
    openai.enqueue(classification({}), {
      text: 'Refunds reach your original payment method within 14 days [1].',
      usage: { input: 300, output: 12 },
    });
    const answer = await server.call('POST', `/v1/chatbots/${bot}/messages`, {
      body: { content: 'How long do refunds take?' },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(schemaErrors('/components/schemas/ChatbotReply', answer.body)).toEqual([]);
    expect(answer.body).toMatchObject({ intent: 'billing', escalated: false, model: 'gpt-4o-mini' });
    expect(answer.body.message.citations).toHaveLength(1);
    expect(answer.body.message.citations[0].title).toBe('Refunds');
    expect(answer.body.usage.prompt_tokens).toBeGreaterThan(300);
    // The knowledge base has vectors (OpenAI is configured): the query's embedding is part of the answer's cost.
    expect(openai.requests.slice(before).some((request) => request.path.endsWith('/embeddings'))).toBe(true);
    expect(answer.body.cost_usd).toBeGreaterThan(0);

    const [classify, reply] = openai.requests
      .slice(before)
      .filter((request) => request.path.endsWith('/chat/completions'));
    expect(JSON.stringify(classify!.body.response_format)).toContain('human_handoff');
    const system = reply!.body.messages[0].content as string;
    expect(system).toContain('Knowledge passages:\n[1] Refunds\nRefunds are paid to the original payment method');
    expect(system).toContain('Be brief.');
  });

  test("a chatbot in a project over its spend limit is refused before any provider call, the intent's included", async () => {
    const project = await server.call('POST', '/v1/projects', { body: { name: 'Over budget' } });
    expect(project.status).toBe(201);
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'project', id: project.body.id }, amount_usd: 1e-9, period: 'month' },
    });
    expect(limit.status).toBe(201);
    // One priced call in the project puts it over its limit.
    const spent = await server.call('POST', '/v1/chat/completions', {
      body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Hello' }], project_id: project.body.id },
    });
    expect(spent.status, spent.text).toBe(200);
    const created = await server.call('POST', '/v1/chatbots', {
      body: { name: 'Over budget help', model: 'gpt-4o-mini', instructions: 'Be brief.', project_id: project.body.id },
    });
    expect(created.status, created.text).toBe(201);
    const before = openai.requests.length;
    const answer = await server.call('POST', `/v1/chatbots/${created.body.id}/messages`, {
      body: { content: 'How long do refunds take?' },
    });
    expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 402, code: 'spend_limit_reached' });
    expect(openai.requests.length).toBe(before);
  });

  test('a classification that is not JSON falls back to the rules', async () => {
    openai.enqueue({ text: 'not json' }, { text: 'Refunds take 14 days [1].' });
    const answer = await server.call('POST', `/v1/chatbots/${bot}/messages`, {
      body: { content: 'When do I get my refund?' },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.intent).toBe('billing');
  });

  test('a request for a named person escalates at once, without an answer call', async () => {
    const before = openai.requests.length;
    openai.enqueue(
      classification({ intent: 'human_handoff', asks_for_person: true, requested_agent: 'Anna from accounting' }),
    );
    const answer = await server.call('POST', `/v1/chatbots/${bot}/messages`, {
      body: { content: 'Please put me through to Anna from accounting' },
    });
    expect(answer.body).toMatchObject({
      escalated: true,
      escalation_reason: 'visitor_request',
      intent: 'human_handoff',
    });
    expect(openai.requests.slice(before).filter((request) => request.path.endsWith('/chat/completions'))).toHaveLength(
      1,
    );
    const events = await server.call('GET', '/v1/events?type=chatbot.conversation.escalated');
    expect(
      events.body.data.find(
        (event: { data: { conversation_id: string } }) => event.data.conversation_id === answer.body.conversation_id,
      ).data.requested_agent,
    ).toBe('Anna from accounting');
  });

  test("the provider's outage is a 503 and stores nothing", async () => {
    const first = await server.call('POST', `/v1/chatbots/${bot}/messages`, {
      body: { content: 'Do refunds cover shipping?' },
    });
    const conversation = first.body.conversation_id;
    openai.enqueue(classification({}), { error: { status: 503, message: 'overloaded' } });
    expectProblem(
      await server.call('POST', `/v1/chatbots/${bot}/messages`, {
        body: { content: 'And for returned goods?', conversation_id: conversation },
      }),
      503,
      'upstream_unavailable',
    );
    const stored = await server.call('GET', `/v1/chatbots/${bot}/conversations/${conversation}`);
    expect(stored.body.message_count).toBe(2);
  });
});
