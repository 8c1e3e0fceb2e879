// Documents through the API on SQLite and PostgreSQL: create (version 1, an edit token, the project's voice),
// list filters, updates with optimistic concurrency (only a changed content is a version), versions and restore,
// publishing with document.published delivered, the public page (JSON and sanitised HTML, 404 when not public),
// and every AI command on the sandbox, one through a fake OpenAI upstream, with usage, cost and a new version.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { eventually, expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

const CONTENT =
  '# Spring sale\n\nEvery plan is 20% off until Sunday. Annual plans also get two extra months.\n\n## Who can use it\n\nNew and existing customers.';

describe.each(databaseKinds)('documents on %s', (kind) => {
  let server: TestServer;
  let receiver: Receiver;
  let openai: FakeProvider;

  beforeAll(async () => {
    [receiver, openai] = await Promise.all([startReceiver(), startFakeOpenAi()]);
    server = await startTestServer({
      database: kind,
      env: {
        WEBHOOKS_ALLOW_LOOPBACK: 'true',
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: openai.url,
        PROVIDER_MAX_RETRIES: '0',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([receiver?.close(), openai?.close()]);
  });

  async function create(body: Record<string, unknown> = {}) {
    const answer = await server.call('POST', '/v1/documents', {
      body: { title: 'Spring sale', content: CONTENT, ...body },
    });
    expect(answer.status, answer.text).toBe(201);
    return answer.body;
  }

  test('create gives version 1 and an edit token; the project gives its voice; get and list', async () => {
    const project = await server.call('POST', '/v1/projects', { body: { name: `Docs ${kind}` } });
    const document = await create({ project_id: project.body.id, metadata: { campaign: 'spring' } });
    expect(schemaErrors('/components/schemas/DocumentWithEditToken', document)).toEqual([]);
    expect(document).toMatchObject({
      status: 'draft',
      visibility: 'private',
      version_count: 1,
      content: CONTENT,
      project_id: project.body.id,
      public_url: null,
      current_version: { number: 1, source: { kind: 'create', api_key_id: server.ownerKeyId } },
    });
    expect(document.edit_token).toMatchObject({
      permission: 'edit',
      document_id: document.id,
      websocket_url: expect.stringMatching(/^ws:\/\//),
    });
    expect(document.current_version).toMatchObject({
      word_count: CONTENT.split(/\s+/).filter((word) => /[\p{L}\p{N}]/u.test(word)).length,
      character_count: CONTENT.length,
    });

    const got = await server.call('GET', `/v1/documents/${document.id}`);
    expect(got.body).toEqual(Object.fromEntries(Object.entries(document).filter(([key]) => key !== 'edit_token')));
    const listed = await server.call('GET', `/v1/documents?project_id=${project.body.id}&title=SPRING`);
    expect(listed.body.data.map((item: { id: string }) => item.id)).toEqual([document.id]);
    expect(listed.body.data[0]).not.toHaveProperty('content');
    expect((await server.call('GET', '/v1/documents?title=nothing-like-this')).body.data).toEqual([]);
    expect(
      (await server.call('GET', '/v1/documents?status=published')).body.data.map((item: { id: string }) => item.id),
    ).not.toContain(document.id);

    expectProblem(
      await server.call('POST', '/v1/documents', {
        body: { title: 'x', project_id: 'prj_01JD1N4Q8R2S5T7V9W3X6Y0Z1A' },
      }),
      404,
      'not_found',
    );
    // Deleting the project keeps its documents, out of any project.
    expect((await server.call('DELETE', `/v1/projects/${project.body.id}`)).status).toBe(204);
    expect((await server.call('GET', `/v1/documents/${document.id}`)).body.project_id).toBeNull();
    expectProblem(
      await server.call('POST', '/v1/documents', { body: { title: 'x', voice_id: 'voc_01JD2Q7F8X3M4N5P6R7S8T9V0W' } }),
      404,
      'not_found',
    );
    expectProblem(await server.call('GET', '/v1/documents/doc_01JDB2C3D4E5F6G7H8J9K0M1N2'), 404, 'not_found');
  });

  test('updates: only a changed content is a version; a stale base_version_id is 409 and changes nothing', async () => {
    const document = await create();
    const renamed = await server.call('PATCH', `/v1/documents/${document.id}`, {
      body: { title: 'Spring sale (final)', metadata: { owner: 'ana' } },
    });
    expect(renamed.body).toMatchObject({ title: 'Spring sale (final)', metadata: { owner: 'ana' }, version_count: 1 });
    const same = await server.call('PATCH', `/v1/documents/${document.id}`, { body: { content: CONTENT } });
    expect(same.body.version_count).toBe(1);
    const edited = await server.call('PATCH', `/v1/documents/${document.id}`, {
      body: { content: `${CONTENT}\n\nEnds Sunday.`, base_version_id: document.current_version.id },
    });
    expect(edited.body).toMatchObject({ version_count: 2, current_version: { number: 2, source: { kind: 'edit' } } });
    const stale = await server.call('PATCH', `/v1/documents/${document.id}`, {
      body: { title: 'Lost', content: 'Lost.', base_version_id: document.current_version.id },
    });
    expectProblem(stale, 409, 'version_conflict');
    const after = await server.call('GET', `/v1/documents/${document.id}`);
    expect(after.body).toMatchObject({
      title: 'Spring sale (final)',
      version_count: 2,
      content: `${CONTENT}\n\nEnds Sunday.`,
    });

    const restored = await server.call(
      'POST',
      `/v1/documents/${document.id}/versions/${document.current_version.id}/restore`,
    );
    expect(restored.status).toBe(201);
    expect(restored.headers.get('location')).toBe(`/v1/documents/${document.id}/versions/${restored.body.id}`);
    expect(restored.body).toMatchObject({
      number: 3,
      content: CONTENT,
      source: {
        kind: 'restore',
        restored_from_version_id: document.current_version.id,
        restored_from_version_number: 1,
      },
    });
    const versions = await server.call('GET', `/v1/documents/${document.id}/versions?limit=2`);
    expect(versions.body.data.map((version: { number: number }) => version.number)).toEqual([3, 2]);
    const next = await server.call(
      'GET',
      `/v1/documents/${document.id}/versions?limit=2&cursor=${encodeURIComponent(versions.body.next_cursor)}`,
    );
    expect(next.body.data.map((version: { number: number }) => version.number)).toEqual([1]);
    expect((await server.call('GET', `/v1/documents/${document.id}/versions?source_kind=edit`)).body.data).toHaveLength(
      1,
    );
    expectProblem(
      await server.call('GET', `/v1/documents/${document.id}/versions/ver_01JDB2C3D5A6B7C8D9E0F1G2H3`),
      404,
      'not_found',
    );
  });

  test('publishing sends document.published; the public page is sanitised and goes away when unpublished', async () => {
    const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: `${receiver.url}/documents-${kind}`, event_types: ['document.published'] },
    });
    expect(endpoint.status).toBe(201);
    const document = await create({
      content: '# Hello\n\n<script>alert(1)</script> and [a link](https://example.com) and [bad](javascript:alert(1)).',
    });
    expectProblem(await server.call('GET', `/v1/public/documents/${document.id}`, { key: null }), 404, 'not_found');

    const privately = await server.call('POST', `/v1/documents/${document.id}/publish`, {
      body: { visibility: 'private' },
    });
    expect(privately.body).toMatchObject({
      status: 'published',
      visibility: 'private',
      public_url: null,
      published_at: expect.any(String),
    });
    expectProblem(await server.call('GET', `/v1/public/documents/${document.id}`, { key: null }), 404, 'not_found');
    const publicly = await server.call('POST', `/v1/documents/${document.id}/publish`, {
      body: { visibility: 'public' },
    });
    expect(publicly.body.public_url).toBe(`${server.url}/v1/public/documents/${document.id}`);
    expect(publicly.body.published_at).toBe(privately.body.published_at);
    // Publishing again changes nothing and sends nothing.
    await server.call('POST', `/v1/documents/${document.id}/publish`);

    const events = await eventually(
      async () => receiver.requests.filter((request) => request.body?.data?.document_id === document.id),
      (found) => found.length === 2,
    );
    for (const event of events) {
      expect(asyncApiErrors(event.body)).toEqual([]);
      expect(event.body.data).toEqual({
        document_id: document.id,
        published_at: privately.body.published_at,
        author: document.author,
        project_id: null,
        title: 'Spring sale',
      });
    }

    const json = await server.call('GET', `/v1/public/documents/${document.id}`, { key: null });
    expect(json.status).toBe(200);
    expect(json.headers.get('ratelimit-policy')).toBe('"default";q=600;w=60');
    expect(json.body).toMatchObject({ object: 'public_document', title: 'Spring sale' });
    expect(json.body.html).toContain('&lt;script&gt;');
    expect(json.body.html).toContain('<a href="https://example.com" rel="nofollow noopener">a link</a>');
    expect(json.body.html).not.toContain('href="javascript:');
    const page = await server.call('GET', `/v1/public/documents/${document.id}`, {
      key: null,
      headers: { Accept: 'text/html' },
    });
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.text).toContain('<title>Spring sale</title>');
    expect(page.text).not.toContain('<script>');
    // The content opens with its own heading, so the page shows one heading, not the title above it as well.
    expect(page.text.match(/<h1[\s>]/g)).toHaveLength(1);
    expect(page.text).toContain('<article><h1>Hello</h1>');

    const unpublished = await server.call('POST', `/v1/documents/${document.id}/unpublish`);
    expect(unpublished.body).toMatchObject({
      status: 'draft',
      visibility: 'private',
      published_at: null,
      public_url: null,
    });
    expectProblem(await server.call('GET', `/v1/public/documents/${document.id}`, { key: null }), 404, 'not_found');
  });

  test('publish with no body makes a draft public; a published document keeps its visibility; one title on the page', async () => {
    const document = await create({ content: 'A line typed first.\n\n# Spring  SALE\n\nEvery plan is 20% off.' });
    const published = await server.call('POST', `/v1/documents/${document.id}/publish`);
    expect(published.status, published.text).toBe(200);
    expect(published.body).toMatchObject({
      status: 'published',
      visibility: 'public',
      public_url: `${server.url}/v1/public/documents/${document.id}`,
    });
    // A level-1 heading that says the title, though not the first line: the page does not add the title above it.
    const page = await server.call('GET', `/v1/public/documents/${document.id}`, {
      key: null,
      headers: { Accept: 'text/html' },
    });
    expect(page.text.match(/<h1[\s>]/g)).toHaveLength(1);
    expect(page.text).toContain('<article><p>A line typed first.</p>');

    // Made private on purpose, a bare publish leaves it private (and changes nothing, so sends nothing).
    const events = async () =>
      (await server.call('GET', '/v1/events?type=document.published&limit=100')).body.data.filter(
        (event: { data: { document_id: string } }) => event.data.document_id === document.id,
      );
    expect(await events()).toHaveLength(1);
    await server.call('POST', `/v1/documents/${document.id}/unpublish`);
    const privately = await server.call('POST', `/v1/documents/${document.id}/publish`, {
      body: { visibility: 'private' },
    });
    expect(privately.body).toMatchObject({ status: 'published', visibility: 'private', public_url: null });
    const again = await server.call('POST', `/v1/documents/${document.id}/publish`, {
      headers: { 'Content-Type': 'application/json' },
      body: {},
    });
    expect(again.body).toMatchObject({
      visibility: 'private',
      public_url: null,
      updated_at: privately.body.updated_at,
    });
    expect(await events()).toHaveLength(2);

    // Another document without a heading of the title: the page shows the title as its heading.
    const plain = await create({ content: 'Every plan is 20% off.' });
    await server.call('POST', `/v1/documents/${plain.id}/publish`);
    const plainPage = await server.call('GET', `/v1/public/documents/${plain.id}`, {
      key: null,
      headers: { Accept: 'text/html' },
    });
    expect(plainPage.text).toContain('<article><h1>Spring sale</h1>\n<p>Every plan is 20% off.</p>');
  });

  test.each([
    ['outline', { depth: 2, instruction: 'Plan a launch post' }, 'before'],
    ['expand', { target_words: 80 }, 'replace'],
    ['summarize', { length: 'short', format: 'bullets' }, 'before'],
    ['rewrite', { tone: 'friendly' }, 'replace'],
    ['translate', { target_language: 'fr' }, 'replace'],
  ])('%s on the sandbox is a new version with usage and cost', async (command, options, placement) => {
    const document = await create();
    const selection = { start: CONTENT.indexOf('Every'), end: CONTENT.indexOf('## Who') - 2 };
    const answer = await server.call('POST', `/v1/documents/${document.id}/commands`, {
      body: { command, model: 'sandbox-writer', selection, base_version_id: document.current_version.id, ...options },
    });
    expect(answer.status, answer.text).toBe(201);
    expect(schemaErrors('/components/schemas/DocumentCommandResult', answer.body)).toEqual([]);
    expect(answer.body).toMatchObject({
      command,
      model: 'sandbox-writer',
      version: { number: 2, source: { kind: 'command', command } },
    });
    expect(answer.body.usage.prompt_tokens).toBeGreaterThan(0);
    expect(answer.body.usage.completion_tokens).toBeGreaterThan(0);
    expect(answer.body.cost_usd).toBeGreaterThanOrEqual(0);
    const got = await server.call('GET', `/v1/documents/${document.id}`);
    expect(got.body.content.slice(answer.body.output_range.start, answer.body.output_range.end)).toBe(
      answer.body.output,
    );
    if (placement === 'before') expect(got.body.content).toContain(CONTENT.slice(selection.start, selection.end));
    // The sandbox's expansion starts with the passage it expands.
    else if (command === 'expand')
      expect(answer.body.output.startsWith(CONTENT.slice(selection.start, selection.end))).toBe(true);
    else expect(got.body.content).not.toContain(CONTENT.slice(selection.start, selection.end));
    expect(got.body.content.startsWith('# Spring sale')).toBe(true);
  });

  test('the sandbox drafts: summaries of the asked length, an outline of the headings, a rewrite, an expansion', async () => {
    // Each on a new document, so that one's output is not the next one's input.
    const run = async (body: Record<string, unknown>) => {
      const document = await create();
      const answer = await server.call('POST', `/v1/documents/${document.id}/commands`, {
        body: { model: 'sandbox-writer', ...body },
      });
      expect(answer.status, answer.text).toBe(201);
      expect(answer.body.output).not.toMatch(/Document title|<\/?text>|first draft about|Tell me what to write/);
      // A summary or an outline of the whole content goes under the heading the content opens with.
      if (body.command === 'summarize' || body.command === 'outline') {
        const content = (await server.call('GET', `/v1/documents/${document.id}`)).body.content as string;
        expect(content).toBe(`# Spring sale\n\n${answer.body.output}\n\n${CONTENT.slice('# Spring sale\n\n'.length)}`);
        expect(answer.body.output_range.start).toBe('# Spring sale\n\n'.length);
      }
      return answer.body.output as string;
    };
    const sentences = [
      'Every plan is 20% off until Sunday.',
      'Annual plans also get two extra months.',
      'New and existing customers.',
    ];
    const short = await run({ command: 'summarize', length: 'short' });
    expect(short).toBe('Every plan is 20% off until Sunday.');
    const medium = await run({ command: 'summarize', length: 'medium' });
    expect(medium).toBe('Every plan is 20% off until Sunday. Annual plans also get two extra months.');
    const long = await run({ command: 'summarize', length: 'long', format: 'bullets' });
    expect(long.split('\n')).toEqual(sentences.slice(0, 3).map((sentence) => `- ${sentence}`));
    const outline = await run({ command: 'outline' });
    expect(outline).toBe(
      '## Spring sale\n\n- Every plan is 20% off until Sunday.\n\n### Who can use it\n\n- New and existing customers.',
    );
    const rewrite = await run({ command: 'rewrite' });
    expect(rewrite).toBe(
      '# Spring sale\n\nEach plan is 20% off until Sunday. Annual plans also get two more months.\n\n## Who can use it\n\nNew and existing customers.',
    );
    const start = CONTENT.indexOf('Every');
    const expand = await run({ command: 'expand', selection: { start, end: start + sentences[0]!.length } });
    expect(expand).toBe('Every plan is 20% off until Sunday. Annual plans also get two more months.');
  });

  test('translate keeps the Markdown structure (sandbox-echo answers each segment as it is)', async () => {
    const document = await create();
    const answer = await server.call('POST', `/v1/documents/${document.id}/commands`, {
      body: { command: 'translate', model: 'sandbox-echo', target_language: 'de' },
    });
    expect(answer.status, answer.text).toBe(201);
    expect((await server.call('GET', `/v1/documents/${document.id}`)).body.content).toBe(CONTENT);
  });

  test('cite adds references of the given sources; a knowledge base that does not exist is 404', async () => {
    const document = await create();
    const answer = await server.call('POST', `/v1/documents/${document.id}/commands`, {
      body: { command: 'cite', model: 'sandbox-echo', sources: ['https://127.0.0.1:9/pricing'], style: 'apa' },
    });
    expect(answer.status, answer.text).toBe(201);
    const content = (await server.call('GET', `/v1/documents/${document.id}`)).body.content as string;
    expect(content).toMatch(/## References\n\n- \[1\] .*https:\/\/127\.0\.0\.1:9\/pricing/);
    const kb = await server.call('POST', `/v1/documents/${document.id}/commands`, {
      body: { command: 'cite', model: 'sandbox-echo', sources: ['kb_01JD2Q7F8X3M4N5P6R7S8T9V0W'] },
    });
    expectProblem(kb, 404, 'not_found');
    expect(kb.body.errors).toEqual([{ pointer: '/sources/0', detail: 'is not a knowledge base of this workspace' }]);
  });

  test('a command through a real provider: the upstream gets the task and the text, usage is its count', async () => {
    const document = await create();
    openai.enqueue({ text: '**TL;DR**: everything is 20% off until Sunday.', usage: { input: 400, output: 12 } });
    const answer = await server.call('POST', `/v1/documents/${document.id}/commands`, {
      body: { command: 'summarize', model: 'gpt-4o-mini', length: 'short' },
    });
    expect(answer.status, answer.text).toBe(201);
    expect(answer.body).toMatchObject({
      model: 'gpt-4o-mini',
      output: '**TL;DR**: everything is 20% off until Sunday.',
      usage: { prompt_tokens: 400, completion_tokens: 12, total_tokens: 412 },
    });
    expect(answer.body.cost_usd).toBeCloseTo((400 * 0.15 + 12 * 0.6) / 1e6, 9);
    const request = openai.requests.at(-1)!;
    expect(JSON.stringify(request.body.messages)).toContain('Annual plans also get two extra months.');
    const usage = await server.call('GET', '/v1/usage?group_by=feature');
    expect(usage.body.data).toEqual(expect.arrayContaining([expect.objectContaining({ feature: 'documents' })]));
  });

  test('a provider failure during a command is its problem (429, 502, 503), and nothing is saved', async () => {
    const document = await create();
    const run = () =>
      server.call('POST', `/v1/documents/${document.id}/commands`, {
        body: { command: 'rewrite', model: 'gpt-4o-mini' },
      });
    openai.enqueue({ error: { status: 429, headers: { 'retry-after': '7' }, message: 'Slow down' } });
    const limited = await run();
    expectProblem(limited, 429, 'upstream_rate_limited');
    expect(limited.headers.get('retry-after')).toBe('7');
    openai.enqueue({ error: { status: 401, message: 'Incorrect API key provided' } });
    expectProblem(await run(), 502, 'upstream_error');
    openai.enqueue({ error: { status: 503, message: 'Overloaded' } });
    expectProblem(await run(), 503, 'upstream_unavailable');
    expect((await server.call('GET', `/v1/documents/${document.id}`)).body.version_count).toBe(1);
  });

  test('a command whose result would make the document too long is refused and saves nothing', async () => {
    const document = await create();
    openai.enqueue({ text: 'x'.repeat(1_000_001), usage: { input: 10, output: 10 } });
    const answer = await server.call('POST', `/v1/documents/${document.id}/commands`, {
      body: { command: 'expand', model: 'gpt-4o-mini' },
    });
    expectProblem(answer, 422, 'validation_failed');
    expect((await server.call('GET', `/v1/documents/${document.id}`)).body.version_count).toBe(1);
  });

  test('bad commands: out-of-range selection, stale base version, a policy violation saves nothing', async () => {
    const document = await create();
    const out = await server.call('POST', `/v1/documents/${document.id}/commands`, {
      body: { command: 'rewrite', model: 'sandbox-writer', selection: { start: 0, end: CONTENT.length + 1 } },
    });
    expectProblem(out, 422, 'selection_out_of_range');
    await server.call('PATCH', `/v1/documents/${document.id}`, { body: { content: `${CONTENT}\n\nChanged.` } });
    expectProblem(
      await server.call('POST', `/v1/documents/${document.id}/commands`, {
        body: { command: 'rewrite', model: 'sandbox-writer', base_version_id: document.current_version.id },
      }),
      409,
      'version_conflict',
    );

    const rule = await server.call('POST', '/v1/compliance-rules', {
      body: { name: `No sale talk ${kind}`, kind: 'banned_phrase', phrases: ['annual plans'] },
    });
    expect(rule.status, rule.text).toBe(201);
    try {
      const blocked = await server.call('POST', `/v1/documents/${document.id}/commands`, {
        body: { command: 'rewrite', model: 'sandbox-echo' },
      });
      expectProblem(blocked, 422, 'policy_violation');
      expect(blocked.body.rule_id).toBe(rule.body.id);
      expect((await server.call('GET', `/v1/documents/${document.id}`)).body.version_count).toBe(2);
    } finally {
      await server.call('DELETE', `/v1/compliance-rules/${rule.body.id}`);
    }
  });
});
