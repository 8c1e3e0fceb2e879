// Workflow definitions over HTTP: JSON and YAML bodies alike, their errors placed (JSON Pointer; and line and column
// in YAML), validation without saving, versions on replace, what the YAML parser refuses, and (on SQLite and
// PostgreSQL) the documents that document_command steps name.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { expectProblem } from '../support/expect.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

const asYaml = (text: string) => ({ rawBody: text, headers: { 'Content-Type': 'application/yaml' } });

const VALID = `name: Two steps
inputs:
  topic: { required: true }
steps:
  - id: draft
    type: generate
    model: sandbox-writer
    prompt: "About {{ inputs.topic }}"
  - id: short
    type: transform
    function: truncate
    value: "{{ steps.draft.output.text }}"
    max_length: 80
outputs:
  text: "{{ steps.short.output }}"
`;

describe('workflow definitions', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  test('YAML and JSON give the same workflow: stored as sent, the input schema derived, version 1', async () => {
    const fromYaml = await server.call('POST', '/v1/workflows', asYaml(VALID));
    expect(fromYaml.status).toBe(201);
    expect(fromYaml.headers.get('location')).toBe(`/v1/workflows/${fromYaml.body.id}`);
    expect(fromYaml.body).toMatchObject({
      object: 'workflow',
      name: 'Two steps',
      version: 1,
      run_counts: { total: 0 },
      last_run_at: null,
    });
    // As sent: no default filled in (the normalized form is what validate answers).
    expect(fromYaml.body.definition.steps[0]).toEqual({
      id: 'draft',
      type: 'generate',
      model: 'sandbox-writer',
      prompt: 'About {{ inputs.topic }}',
    });
    expect(fromYaml.body.input_schema).toMatchObject({
      type: 'object',
      required: ['topic'],
      properties: { topic: { type: 'string' } },
    });
    const fromJson = await server.call('POST', '/v1/workflows', { body: fromYaml.body.definition });
    expect(fromJson.status).toBe(201);
    expect(fromJson.body.definition).toEqual(fromYaml.body.definition);
  });

  test('validate answers the normalized definition, or errors and warnings without saving anything', async () => {
    const valid = await server.call('POST', '/v1/workflows/validate', asYaml(VALID));
    expect(valid.status).toBe(200);
    expect(valid.body).toMatchObject({ object: 'workflow_validation', valid: true, errors: [] });
    expect(valid.body.definition.steps[1]).toMatchObject({
      depends_on: ['draft'],
      timeout_ms: 120000,
      retry: { max_attempts: 3 },
    });
    const viewer = await server.createKey('viewer');
    const invalid = await server.call('POST', '/v1/workflows/validate', {
      key: viewer.secret,
      ...asYaml(VALID.replace('steps.draft.output.text', 'steps.outline.output.text')),
    });
    expect(invalid.status).toBe(200);
    expect(invalid.body).toMatchObject({ valid: false, definition: null });
    expect(invalid.body.errors).toEqual([
      {
        pointer: '/steps/1/value',
        detail: 'references step `outline`, which is not defined (column 4); in the YAML at line 12, column 12',
      },
    ]);
    const before = await server.call('GET', '/v1/workflows?limit=100');
    expect(before.body.data.every((workflow: components['schemas']['Workflow']) => workflow.name === 'Two steps')).toBe(
      true,
    );
  });

  test('a whole-definition error is 422 invalid_workflow_definition, placed by pointer (JSON) and by line and column (YAML)', async () => {
    const cyclic = {
      name: 'Cycle',
      steps: [
        { id: 'a', type: 'transform', function: 'template', value: 'x', depends_on: ['b'] },
        { id: 'b', type: 'transform', function: 'template', value: 'y', depends_on: ['a'] },
        { id: 'c', type: 'generate', model: 'no-such-model', prompt: '{{ inputs.missing }}' },
      ],
    };
    const json = await server.call('POST', '/v1/workflows', { body: cyclic });
    expectProblem(json, 422, 'invalid_workflow_definition');
    expect(json.body.errors).toEqual([
      { pointer: '/steps/0/depends_on/0', detail: 'dependency cycle: a → b → a' },
      {
        pointer: '/steps/2/model',
        detail: "no-such-model is not a chat model of the catalogue in this workspace's region",
      },
      { pointer: '/steps/2/prompt', detail: 'references input `missing`, which is not defined (column 4)' },
    ]);
    const yaml = await server.call(
      'POST',
      '/v1/workflows',
      asYaml(`name: Unknown input
steps:
  - id: only
    type: generate
    model: sandbox-writer
    prompt: "{{ inputs.nope }}"
`),
    );
    expectProblem(yaml, 422, 'invalid_workflow_definition');
    expect(yaml.body.errors).toEqual([
      {
        pointer: '/steps/0/prompt',
        detail: 'references input `nope`, which is not defined (column 4); in the YAML at line 6, column 13',
      },
    ]);
  });

  test('a schema error of a YAML body names its line and column; one of a JSON body its pointer', async () => {
    const yaml = await server.call(
      'POST',
      '/v1/workflows',
      asYaml('name: Bad type\nsteps:\n  - id: one\n    type: teleport\n'),
    );
    expectProblem(yaml, 422, 'validation_failed');
    expect(
      yaml.body.errors.some(
        (error: components['schemas']['ProblemFieldError']) =>
          error.pointer.startsWith('/steps/0') && /\(line \d+, column \d+\)$/.test(error.detail),
      ),
    ).toBe(true);
    const json = await server.call('POST', '/v1/workflows', { body: { name: 'No steps', steps: [] } });
    expectProblem(json, 422, 'validation_failed');
    expect(json.body.errors).toEqual([
      { pointer: '/steps', detail: expect.stringContaining('must NOT have fewer than 1 items') },
    ]);
  });

  test('YAML that is not YAML, several documents, or a custom tag: 400 invalid_json with the place', async () => {
    const broken = await server.call('POST', '/v1/workflows', asYaml('name: [unclosed\nsteps: x\n'));
    expectProblem(broken, 400, 'invalid_json');
    expect(broken.body.detail).toMatch(/line \d+, column \d+/);
    expectProblem(await server.call('POST', '/v1/workflows', asYaml(`${VALID}---\n${VALID}`)), 400, 'invalid_json');
    const tagged = await server.call(
      'POST',
      '/v1/workflows',
      asYaml(VALID.replace('name: Two steps', 'name: !!js/function "x"')),
    );
    expectProblem(tagged, 400, 'invalid_json');
    const duplicate = await server.call('POST', '/v1/workflows', asYaml(`${VALID}name: Again\n`));
    expectProblem(duplicate, 400, 'invalid_json');
    const bomb = await server.call(
      'POST',
      '/v1/workflows',
      asYaml(`a: &a [x, x]\n${Array.from({ length: 120 }, (_, i) => `k${i}: *a`).join('\n')}\nname: x\nsteps: []\n`),
    );
    expectProblem(bomb, 400, 'invalid_json');
    expect(bomb.body.detail).toMatch(/alias/i);
  });

  test('replace: a new version only when the definition changes; a run keeps the version it started with', async () => {
    const created = (await server.call('POST', '/v1/workflows', asYaml(VALID))).body;
    const same = await server.call(
      'PUT',
      `/v1/workflows/${created.id}`,
      asYaml(`# a comment changes nothing\n${VALID}`),
    );
    expect(same.status).toBe(200);
    expect(same.body.version).toBe(1);
    const run = await server.call('POST', `/v1/workflows/${created.id}/runs`, { body: { inputs: { topic: 'v1' } } });
    const changed = await server.call(
      'PUT',
      `/v1/workflows/${created.id}`,
      asYaml(VALID.replace('max_length: 80', 'max_length: 20')),
    );
    expect(changed.body).toMatchObject({ version: 2, definition: { steps: [{}, { max_length: 20 }] } });
    const got = await server.call('GET', `/v1/workflows/${created.id}/runs/${run.body.id}`);
    expect(got.body.workflow_version).toBe(1);
  });

  test('run inputs are checked against the definition: missing, unknown and mistyped inputs, each with its pointer', async () => {
    const created = (
      await server.call('POST', '/v1/workflows', {
        body: {
          name: 'Inputs',
          inputs: {
            topic: { required: true },
            count: { type: 'integer', maximum: 5 },
            tone: { enum: ['calm', 'bold'] },
          },
          steps: [
            {
              id: 'x',
              type: 'transform',
              function: 'template',
              value: '{{ inputs.topic }}{{ inputs.count }}{{ inputs.tone }}',
            },
          ],
        },
      })
    ).body;
    const answer = await server.call('POST', `/v1/workflows/${created.id}/runs`, {
      body: { inputs: { count: 9, tone: 'loud', extra: 1 } },
    });
    expectProblem(answer, 422, 'invalid_workflow_inputs');
    expect(answer.body.errors).toEqual(
      expect.arrayContaining([
        { pointer: '/inputs/extra', detail: expect.stringContaining('is not an input') },
        { pointer: '/inputs/topic', detail: 'is required' },
        { pointer: '/inputs/count', detail: 'must be at most 5' },
        { pointer: '/inputs/tone', detail: 'must be one of "calm", "bold"' },
      ]),
    );
    expect((await server.call('GET', `/v1/workflows/${created.id}/runs`)).body.data).toEqual([]);
  });
});

describe.each(databaseKinds)('document_command steps name documents of the workspace, on %s', (database) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ database });
  });
  afterAll(async () => {
    await server?.close();
  });

  const summarize = (documentId: string) => ({
    name: 'Summarize',
    inputs: { document_id: {} },
    steps: [{ id: 'summary', type: 'document_command', document_id: documentId, command: 'summarize' }],
  });

  async function newDocument(key?: string): Promise<string> {
    const answer = await server.call('POST', '/v1/documents', {
      ...(key && { key }),
      body: { title: 'Notes', content: 'Our export button ships today.' },
    });
    expect(answer.status, answer.text).toBe(201);
    return answer.body.id;
  }

  test("another workspace's document or a made-up id is refused on create, replace and validate; the workspace's own is saved", async () => {
    const other = await createWorkspace(server.platform.db, {
      name: 'Other',
      region: server.platform.config.region,
      now: new Date(),
    });
    const othersDocument = await newDocument(other.secret);
    const madeUp = 'doc_01JDB2C3D4E5F6G7H8J9K0M1N2';
    const own = await newDocument();
    for (const documentId of [othersDocument, madeUp, `{{ '${othersDocument}' }}`]) {
      const named = documentId.startsWith('{{') ? othersDocument : documentId;
      const expected = [{ pointer: '/steps/0/document_id', detail: `${named} is not a document of this workspace` }];
      const created = await server.call('POST', '/v1/workflows', { body: summarize(documentId) });
      expectProblem(created, 422, 'invalid_workflow_definition');
      expect(created.body.errors).toEqual(expected);
      const validated = await server.call('POST', '/v1/workflows/validate', { body: summarize(documentId) });
      expect(validated.body).toMatchObject({ valid: false, errors: expected, definition: null });
    }

    const saved = await server.call('POST', '/v1/workflows', { body: summarize(own) });
    expect(saved.status, saved.text).toBe(201);
    const replaced = await server.call('PUT', `/v1/workflows/${saved.body.id}`, { body: summarize(othersDocument) });
    expectProblem(replaced, 422, 'invalid_workflow_definition');
    expect(replaced.body.errors).toEqual([
      { pointer: '/steps/0/document_id', detail: `${othersDocument} is not a document of this workspace` },
    ]);
    const unchanged = await server.call('GET', `/v1/workflows/${saved.body.id}`);
    expect(unchanged.body).toMatchObject({ version: 1, definition: { steps: [{ document_id: own }] } });

    // A document named by the run's inputs is looked up when the step runs.
    const fromInputs = await server.call('POST', '/v1/workflows', { body: summarize('{{ inputs.document_id }}') });
    expect(fromInputs.status, fromInputs.text).toBe(201);
  });
});
