// The whole-definition checks of workflows (src/features/workflows/definition.ts), on the contract's own example
// definitions (the valid release-post workflow; the one with an unknown reference and a cycle, whose errors the
// contract shows) and on one mistake of each kind, with the pointer and the place in the template.
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { checkDefinition, type Definition, inputSchema } from '../../src/features/workflows/definition.ts';

const example = (name: string) =>
  parse(readFileSync(new URL(`../../openapi/components/examples/workflows/${name}.yaml`, import.meta.url), 'utf8')) as {
    value: Definition;
    summary: string;
  };

function base(steps: unknown[], extra: Record<string, unknown> = {}): Definition {
  return { name: 'Test', inputs: { topic: { required: true } }, steps, ...extra } as Definition;
}

describe('the contract examples', () => {
  test('the release-post workflow is valid; normalised with explicit depends_on and step defaults', () => {
    const checked = checkDefinition(example('WorkflowDefinitionReleasePost').value);
    expect(checked.errors).toEqual([]);
    const steps = checked.normalized!.steps;
    expect(steps.map((step) => step.depends_on)).toEqual([[], ['summarize'], ['research'], ['draft'], ['shorten']]);
    expect(steps[0]).toMatchObject({
      apply: false,
      timeout_ms: 120000,
      retry: { max_attempts: 3, retry_on: ['timeout', 'rate_limited', 'provider_error'] },
    });
    expect(steps[2]).toMatchObject({ temperature: 0.7, response_format: 'text', retry: { initial_ms: 2000 } });
    expect(steps[4]).toMatchObject({
      approver_role: 'editor',
      on_timeout: 'fail',
      on_reject: 'fail',
      timeout_ms: 259200000,
    });
  });

  test("the definition with errors gets exactly the errors and warnings of the contract's validation example", () => {
    const checked = checkDefinition(example('WorkflowDefinitionWithErrors').value);
    const shown = example('WorkflowValidationInvalid').value as unknown as { errors: unknown[]; warnings: unknown[] };
    expect(checked.normalized).toBeNull();
    expect(checked.errors).toEqual(shown.errors);
    expect(checked.warnings).toEqual(shown.warnings);
  });
});

describe('each kind of mistake', () => {
  const gen = (id: string, prompt: string, extra: Record<string, unknown> = {}) => ({
    id,
    type: 'generate',
    model: 'sandbox-writer',
    prompt,
    ...extra,
  });

  test.each<[string, Definition, string, RegExp]>([
    [
      'a duplicate step id',
      base([gen('a', '{{ inputs.topic }}'), gen('a', 'x')]),
      '/steps/1/id',
      /is also the id of step 0/,
    ],
    [
      'an unknown dependency',
      base([gen('a', '{{ inputs.topic }}', { depends_on: ['nope'] })]),
      '/steps/0/depends_on/0',
      /names no step: nope/,
    ],
    [
      'a step depending on itself',
      base([gen('a', '{{ inputs.topic }}', { depends_on: ['a'] })]),
      '/steps/0/depends_on/0',
      /names the step itself/,
    ],
    [
      'an unknown input',
      base([gen('a', 'About {{ inputs.subject }}')]),
      '/steps/0/prompt',
      /references input `subject`, which is not defined \(column 10\)/,
    ],
    [
      'a step that is not upstream',
      base([
        gen('a', '{{ inputs.topic }}', { depends_on: [] }),
        gen('b', '{{ steps.a.output.text }}', { depends_on: [] }),
      ]),
      '/steps/1/prompt',
      /does not depend on: add it to depends_on/,
    ],
    [
      'a later step',
      base([gen('a', '{{ steps.b.output.text }}'), gen('b', '{{ inputs.topic }}')]),
      '/steps/0/prompt',
      /which this step does not depend on/,
    ],
    [
      'a step field other than output and status',
      base([gen('a', '{{ inputs.topic }}'), gen('b', '{{ steps.a.text }}')]),
      '/steps/1/prompt',
      /steps\.a\.output or steps\.a\.status/,
    ],
    [
      'a template that does not parse',
      base([gen('a', 'Line one\nAbout {{ inputs.topic ')]),
      '/steps/0/prompt',
      /line 2, column 7: a placeholder \{\{ is not closed/,
    ],
    [
      'a when that does not parse',
      base([gen('a', '{{ inputs.topic }}', { when: "inputs.topic == 'x' &&" })]),
      '/steps/0/when',
      /column 23: the expression ends too early/,
    ],
    [
      'run and workflow fields',
      base([gen('a', '{{ inputs.topic }} {{ run.name }}')]),
      '/steps/0/prompt',
      /run has only run\.id/,
    ],
    [
      'an output of an unknown step',
      base([gen('a', '{{ inputs.topic }}')], { outputs: { text: '{{ steps.z.output }}' } }),
      '/outputs/text',
      /references step `z`/,
    ],
    [
      'a default of the wrong type',
      base([gen('a', '{{ inputs.topic }} {{ inputs.n }}')], {
        inputs: { topic: { required: true }, n: { type: 'integer', default: 1.5 } },
      }),
      '/inputs/n/default',
      /not of the input's type, integer/,
    ],
    [
      'a default outside the enum',
      base([gen('a', '{{ inputs.topic }} {{ inputs.c }}')], {
        inputs: { topic: { required: true }, c: { enum: ['x', 'y'], default: 'z' } },
      }),
      '/inputs/c/default',
      /not one of the enum values/,
    ],
    [
      'an enum on a boolean',
      base([gen('a', '{{ inputs.topic }} {{ inputs.b }}')], {
        inputs: { topic: { required: true }, b: { type: 'boolean', enum: ['x'] } },
      }),
      '/inputs/b/enum',
      /applies to string, number and integer/,
    ],
    [
      'a retry whose max is below its initial wait',
      base([gen('a', '{{ inputs.topic }}', { retry: { initial_ms: 5000, max_ms: 1000 } })]),
      '/steps/0/retry/max_ms',
      /at least initial_ms/,
    ],
  ])('%s', (_name, definition, pointer, detail) => {
    const checked = checkDefinition(definition);
    expect(checked.normalized).toBeNull();
    const error = checked.errors.find((e) => e.pointer === pointer);
    expect(error, JSON.stringify(checked.errors)).toBeDefined();
    expect(error!.detail).toMatch(detail);
  });

  test('the workspace resources are asked for', () => {
    const definition = base(
      [
        gen('a', '{{ inputs.topic }}', { model: 'no-model', voice_id: 'voc_01JD2Q7F8X3M4N5P6R7S8T9V0W' }),
        {
          id: 'b',
          type: 'knowledge_search',
          knowledge_base_id: 'kb_01JD2R5T6V7W8X9Y0Z1A2B3C4D',
          query: '{{ steps.a.output.text }}',
        },
      ],
      { project_id: 'prj_01JD1N4Q8R2S5T7V9W3X6Y0Z1A' },
    );
    const checked = checkDefinition(definition, {
      model: (id) => id !== 'no-model',
      voice: () => false,
      knowledgeBase: () => false,
      project: () => false,
    });
    expect(checked.errors.map((e) => e.pointer)).toEqual([
      '/project_id',
      '/steps/0/model',
      '/steps/0/voice_id',
      '/steps/1/knowledge_base_id',
    ]);
  });

  test('warnings do not block: unused outputs, a constant when, an approval approved on timeout', () => {
    const checked = checkDefinition(
      base([
        gen('a', '{{ inputs.topic }}', { when: 'true' }),
        {
          id: 'ok',
          type: 'approval',
          instructions: 'Check it',
          show: '{{ steps.a.output.text }}',
          on_timeout: 'approve',
        },
      ]),
    );
    expect(checked.errors).toEqual([]);
    expect(checked.normalized).not.toBeNull();
    expect(checked.warnings.map((w) => w.pointer)).toEqual(['/steps/0/when', '/steps/1/on_timeout']);
    const unused = checkDefinition(base([gen('a', '{{ inputs.topic }}'), gen('b', '{{ inputs.topic }}')]));
    expect(unused.warnings.map((w) => w.detail)).toEqual([
      'the output of step `a` is not used by any step or output',
      'the output of step `b` is not used by any step or output',
    ]);
  });

  test('the input schema a run is checked against', () => {
    expect(inputSchema(example('WorkflowDefinitionReleasePost').value)).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      additionalProperties: false,
      required: ['document_id'],
      properties: {
        document_id: { type: 'string', description: 'The release notes document to announce.', maxLength: 30 },
        channel: {
          type: ['string', 'null'],
          description: 'Where the post will be published.',
          enum: ['linkedin', 'x', null],
          default: 'linkedin',
          maxLength: 100000,
        },
        audience: {
          type: ['string', 'null'],
          description: 'Who the post is for.',
          default: 'data teams at mid-size companies',
          maxLength: 200,
        },
      },
    });
  });
});
