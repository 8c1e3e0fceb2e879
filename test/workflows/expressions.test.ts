// The expression and template language of workflow definitions (src/features/workflows/expressions.ts): what
// parses and what does not (with the offset of the error), what each operator and function evaluates to, and how
// templates render (one placeholder keeps its type; otherwise text).
import { describe, expect, test } from 'vitest';
import {
  ExpressionError,
  evaluate,
  parseExpression,
  parseTemplate,
  referencesOf,
  render,
  type Scope,
  type Value,
} from '../../src/features/workflows/expressions.ts';

const scope: Scope = {
  inputs: { topic: 'Spring roasts', count: 3, tags: ['coffee', 'spring'], audience: null, flags: { draft: true } },
  steps: {
    draft: { status: 'success', output: { text: 'A draft about beans.', usage: { prompt_tokens: 12 } } },
    review: { status: 'rejected', output: { decision: 'reject', comment: null } },
    skipped: { status: 'skipped', output: null },
  },
  run: { id: 'run_01' },
  workflow: { id: 'wf_01', version: 2 },
};

const value = (source: string): Value => evaluate(parseExpression(source), scope);

function errorOf(run: () => unknown): ExpressionError {
  try {
    run();
  } catch (error) {
    if (error instanceof ExpressionError) return error;
    throw error;
  }
  throw new Error('expected an ExpressionError');
}

describe('expressions', () => {
  test.each<[string, Value]>([
    ['inputs.topic', 'Spring roasts'],
    ['inputs.tags[1]', 'spring'],
    ["inputs.flags['draft']", true],
    ['steps.draft.output.text', 'A draft about beans.'],
    ['steps.draft.output.usage.prompt_tokens', 12],
    ['steps.review.status', 'rejected'],
    ["steps.review.output.decision == 'reject'", true],
    ['run.id', 'run_01'],
    ['workflow.version', 2],
    ['inputs.missing', null],
    ['inputs.tags[9]', null],
    ['steps.skipped.output.text', null],
    ["inputs.audience ?? 'everyone'", 'everyone'],
    ["inputs.topic ?? 'x'", 'Spring roasts'],
    ['inputs.count > 2 && inputs.count <= 3', true],
    ['inputs.count < -1 || !inputs.flags.draft', false],
    ['!(inputs.count == 3)', false],
    ["inputs.count != '3'", true],
    ["'a' < 'b'", true],
    ["inputs.count < 'z'", false],
    ["contains(inputs.tags, 'coffee')", true],
    ['contains(steps.draft.output.text, "beans")', true],
    ["starts_with(inputs.topic, 'Spring')", true],
    ['length(inputs.tags) + 0'.replace(' + 0', ''), 2],
    ['length(inputs.topic)', 13],
    ['lower(inputs.topic)', 'spring roasts'],
    ["upper('ok')", 'OK'],
    ['json(inputs.tags)', '["coffee","spring"]'],
    ['length(inputs.audience)', 0],
    ['lower(inputs.count)', null],
    ['1.5e1', 15],
    ["'it\\'s'", "it's"],
    ['null ?? null ?? 4', 4],
    ['true && (false || 1)', true],
  ])('%s → %j', (source, expected) => {
    expect(value(source)).toEqual(expected);
  });

  test.each<[string, string, number]>([
    ['inputs.', 'expected a field name', 7],
    ['topic', 'unknown name topic', 0],
    ['inputs.topic ==', 'ends too early', 15],
    ["'open", 'is not closed', 0],
    ['inputs.topic + 1', 'unexpected character "+"', 13],
    ['size(inputs.tags)', 'unknown function size()', 0],
    ['contains(inputs.tags)', 'takes 2 arguments, not 1', 0],
    ['(inputs.count', 'expected )', 13],
    ['inputs.tags[-1]', 'expected an index', 12],
    ['inputs.a inputs.b', 'unexpected inputs after the expression', 9],
  ])('%s is refused: %s (at %i)', (source, message, offset) => {
    const error = errorOf(() => parseExpression(source));
    expect(error.message).toContain(message);
    expect(error.offset).toBe(offset);
  });

  test('nesting is bounded', () => {
    expect(errorOf(() => parseExpression(`${'!'.repeat(100)}true`)).message).toContain('nested too deeply');
    expect(value(`${'!'.repeat(10)}true`)).toBe(true);
  });

  test('the references of an expression, for checking them against the definition', () => {
    const refs = referencesOf(
      parseExpression("contains(steps.draft.output.text, inputs.topic) && steps.review.status != 'x'"),
    );
    expect(refs.map((ref) => [ref.root, ref.path[0]])).toEqual([
      ['steps', 'draft'],
      ['inputs', 'topic'],
      ['steps', 'review'],
    ]);
  });
});

describe('templates', () => {
  const rendered = (template: string) => render(parseTemplate(template), scope);

  test('text with placeholders renders as text; one placeholder alone keeps its type', () => {
    expect(rendered('Write about {{ inputs.topic }} in {{ inputs.count }} paragraphs.')).toBe(
      'Write about Spring roasts in 3 paragraphs.',
    );
    expect(rendered('{{ inputs.tags }}')).toEqual(['coffee', 'spring']);
    expect(rendered('{{inputs.count}}')).toBe(3);
    expect(rendered('Tags: {{ inputs.tags }}; audience: "{{ inputs.audience }}"')).toBe(
      'Tags: ["coffee","spring"]; audience: ""',
    );
    expect(rendered('No placeholders')).toBe('No placeholders');
    expect(rendered("A literal {{ '{{' }} and {{ '}}' }}")).toBe('A literal {{ and }}');
  });

  test('errors point into the template', () => {
    expect(errorOf(() => parseTemplate('Hello {{ inputs.topic')).offset).toBe(6);
    expect(errorOf(() => parseTemplate('Hello {{ }}')).message).toContain('empty placeholder');
    const error = errorOf(() => parseTemplate('Hello {{ topic }}'));
    expect(error.message).toContain('unknown name topic');
    expect(error.offset).toBe(9);
  });

  test('the references of a template', () => {
    expect(
      referencesOf(parseTemplate('{{ inputs.a }} and {{ steps.b.output ?? inputs.c }}')).map(
        (ref) => `${ref.root}.${ref.path[0]}`,
      ),
    ).toEqual(['inputs.a', 'steps.b', 'inputs.c']);
  });

  test('rendering is bounded', () => {
    const big: Scope = { ...scope, inputs: { text: 'x'.repeat(600_000) } };
    expect(() => render(parseTemplate('{{ inputs.text }} {{ inputs.text }}'), big)).toThrow(
      /more than 1,000,000 characters/,
    );
  });
});
