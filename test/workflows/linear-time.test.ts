// A workflow's text steps read a value in time linear in it: each case feeds what made one of their patterns backtrack
// super-linearly, as long as a model's answer or a run's input may be (1,000,000 characters), and checks the result. A
// super-linear pattern takes minutes on such an input, so a case that hangs is one come back. `npm run lint:redos`
// finds the patterns (scripts/lint-redos.ts).
import { describe, expect, test } from 'vitest';
import { fencedBlock, StepFailure, transform } from '../../src/features/workflows/steps.ts';

const TEXT = 1_000_000;
const scope = (text: string) => ({
  inputs: { text },
  steps: {},
  run: { id: 'run_1' },
  workflow: { id: 'wf_1', version: 1 },
});

describe('transform steps on the longest text', () => {
  test('truncate: a long run of white space before the word the cut ends in', () => {
    // The cut keeps whole words: the last one, cut short, goes with the white space before it.
    const text = `a${'\t'.repeat(TEXT)}b\tc`;
    const step = {
      id: 'cut',
      type: 'transform',
      function: 'truncate',
      value: '{{ inputs.text }}',
      max_length: TEXT + 3,
    };
    expect(transform(step as never, scope(text))).toBe('a…');
  });

  test('extract_json: a fence opened, then only blank lines', () => {
    const text = `\`\`\`\n${'\n'.repeat(TEXT)}`;
    expect(fencedBlock(text)).toBeNull();
    const step = { id: 'json', type: 'transform', function: 'extract_json', value: '{{ inputs.text }}' };
    expect(() => transform(step as never, scope(text))).toThrow(StepFailure);
    expect(transform(step as never, scope(`${text}\`\`\`json\n{"a": 1}\n\`\`\``))).toEqual({ a: 1 });
  });
});
