// The selection a document command works on and where its output goes, in UTF-16 offsets
// (src/features/documents/commands/placement.ts).
import { describe, expect, test } from 'vitest';
import { place, selectionOf } from '../../../src/features/documents/commands/placement.ts';
import { Problem } from '../../../src/platform/problems.ts';

describe('selectionOf', () => {
  test('without a selection, the whole content (empty for an empty document)', () => {
    expect(selectionOf('Hello', undefined)).toEqual({ start: 0, end: 5 });
    expect(selectionOf('', undefined)).toEqual({ start: 0, end: 0 });
  });

  test('a range inside the content, up to its very end', () => {
    expect(selectionOf('Hello world', { start: 6, end: 11 })).toEqual({ start: 6, end: 11 });
    expect(selectionOf('Hello', { start: 0, end: 5 })).toEqual({ start: 0, end: 5 });
  });

  test('a range beyond the content, or empty, or reversed: 422 selection_out_of_range at /selection/end', () => {
    for (const [selection, detail] of [
      [{ start: 0, end: 6 }, 'must be at most 5, the length of the content'],
      [{ start: 7, end: 9 }, 'must be at most 5, the length of the content'],
      [{ start: 3, end: 3 }, 'must be greater than start (3)'],
      [{ start: 4, end: 2 }, 'must be greater than start (4)'],
    ] as const) {
      let problem: unknown;
      try {
        selectionOf('Hello', selection);
      } catch (error) {
        problem = error;
      }
      expect(problem).toBeInstanceOf(Problem);
      expect(problem).toMatchObject({
        code: 'selection_out_of_range',
        status: 422,
        errors: [{ pointer: '/selection/end', detail }],
      });
    }
  });

  test('UTF-16 offsets: an emoji is two code units, and a range may not cut one in half', () => {
    const content = 'a😀b';
    expect(content.length).toBe(4);
    expect(selectionOf(content, { start: 1, end: 3 })).toEqual({ start: 1, end: 3 });
    expect(content.slice(1, 3)).toBe('😀');
    expect(() => selectionOf(content, { start: 2, end: 4 })).toThrow(
      expect.objectContaining({
        code: 'selection_out_of_range',
        errors: [expect.objectContaining({ pointer: '/selection/start' })],
      }),
    );
    expect(() => selectionOf(content, { start: 0, end: 2 })).toThrow(
      expect.objectContaining({
        code: 'selection_out_of_range',
        errors: [expect.objectContaining({ pointer: '/selection/end' })],
      }),
    );
  });
});

describe('place', () => {
  test('replace: the range becomes the output, and outputRange is where it is', () => {
    expect(place('Hello world!', { start: 6, end: 11 }, 'there', 'replace')).toEqual({
      content: 'Hello there!',
      outputRange: { start: 6, end: 11 },
    });
    expect(place('abc', { start: 0, end: 3 }, 'longer text', 'replace')).toEqual({
      content: 'longer text',
      outputRange: { start: 0, end: 11 },
    });
  });

  test('before and after: the output is its own block, a blank line from the text on each side', () => {
    const content = 'One.\n\nTwo.\n\nThree.';
    expect(place(content, { start: 6, end: 10 }, 'NEW', 'before')).toEqual({
      content: 'One.\n\nNEW\n\nTwo.\n\nThree.',
      outputRange: { start: 6, end: 9 },
    });
    expect(place(content, { start: 6, end: 10 }, 'NEW', 'after')).toEqual({
      content: 'One.\n\nTwo.\n\nNEW\n\nThree.',
      outputRange: { start: 12, end: 15 },
    });
    // Only a line break: one more makes the blank line.
    expect(place('A\nB', { start: 0, end: 1 }, 'NEW', 'after').content).toBe('A\n\nNEW\n\nB');
    // In the middle of a line: the output splits it into blocks.
    expect(place('Alpha beta', { start: 0, end: 5 }, 'NEW', 'after').content).toBe('Alpha\n\nNEW\n\n beta');
    // The output's own line breaks count.
    expect(place('A\n\nB', { start: 3, end: 4 }, 'NEW\n', 'before')).toEqual({
      content: 'A\n\nNEW\n\nB',
      outputRange: { start: 3, end: 7 },
    });
  });

  test('at the very start or end: no blank line there', () => {
    expect(place('Text.', { start: 0, end: 5 }, 'NEW', 'before')).toEqual({
      content: 'NEW\n\nText.',
      outputRange: { start: 0, end: 3 },
    });
    expect(place('Text.', { start: 0, end: 5 }, 'NEW', 'after')).toEqual({
      content: 'Text.\n\nNEW',
      outputRange: { start: 7, end: 10 },
    });
    expect(place('', { start: 0, end: 0 }, 'NEW', 'before')).toEqual({
      content: 'NEW',
      outputRange: { start: 0, end: 3 },
    });
    expect(place('Text.\n\n', { start: 0, end: 5 }, 'NEW', 'after')).toEqual({
      content: 'Text.\n\nNEW\n\n',
      outputRange: { start: 7, end: 10 },
    });
  });

  test('UTF-16: with emoji before, in and after the range, outputRange still points at the output', () => {
    const content = '😀 one\n\n👍🏽 two\n\nthree 🎉';
    const range = { start: content.indexOf('👍'), end: content.indexOf(' two') + 4 };
    for (const placement of ['replace', 'before', 'after'] as const) {
      const output = '**🚀 new**';
      const result = place(content, range, output, placement);
      expect(result.content.slice(result.outputRange.start, result.outputRange.end)).toBe(output);
      expect(result.content).toContain('three 🎉');
    }
    expect(place(content, range, 'X', 'before').content).toBe('😀 one\n\nX\n\n👍🏽 two\n\nthree 🎉');
  });
});
