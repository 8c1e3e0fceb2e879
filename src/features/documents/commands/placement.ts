// The selection a command works on, and where its output goes in the content.
import { Problem } from '../../../platform/problems.ts';
import type { Placement, Range } from './types.ts';

/** Whether offset `i` falls between the two code units of a surrogate pair (an emoji, say). */
function splitsPair(text: string, i: number): boolean {
  if (i <= 0 || i >= text.length) return false;
  const before = text.charCodeAt(i - 1);
  const after = text.charCodeAt(i);
  return before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff;
}

/**
 * The range a command works on: the selection, checked against the content, or the whole content without one.
 * Throws `422 selection_out_of_range` for a range beyond the content, an empty or reversed one, or one that cuts a
 * character in half (a surrogate pair), which would leave broken text behind.
 */
export function selectionOf(content: string, selection: Range | undefined): Range {
  if (!selection) return { start: 0, end: content.length };
  const { start, end } = selection;
  const refuse = (pointer: string, detail: string) =>
    new Problem(
      'selection_out_of_range',
      `The selection ${start}–${end} is out of range: ${pointer.slice(11)} ${detail} (the content is ${content.length} UTF-16 code units long).`,
      {
        errors: [{ pointer, detail }],
      },
    );
  if (end > content.length)
    throw refuse('/selection/end', `must be at most ${content.length}, the length of the content`);
  if (start >= end) throw refuse('/selection/end', `must be greater than start (${start})`);
  if (splitsPair(content, start))
    throw refuse(
      '/selection/start',
      'falls inside a character (between the two UTF-16 code units of a surrogate pair)',
    );
  if (splitsPair(content, end))
    throw refuse('/selection/end', 'falls inside a character (between the two UTF-16 code units of a surrogate pair)');
  return { start, end };
}

/** How many line breaks the whitespace at the start (or end) of `text` holds. */
function edgeNewlines(text: string, atEnd: boolean): number {
  let count = 0;
  for (let k = 0; k < text.length; k++) {
    const c = text[atEnd ? text.length - 1 - k : k]!;
    if (c === '\n') count++;
    else if (!/\s/.test(c)) break;
  }
  return count;
}

/**
 * The content with `output` in place of the range (`replace`), or inserted before or after it. An inserted output is
 * its own Markdown block: a blank line separates it from the text around it, unless it is at the very start or end
 * or the text is already separated. `outputRange` is where `output` itself sits in the new content.
 */
export function place(
  content: string,
  range: Range,
  output: string,
  placement: Placement,
): { content: string; outputRange: Range } {
  if (placement === 'replace') {
    return {
      content: content.slice(0, range.start) + output + content.slice(range.end),
      outputRange: { start: range.start, end: range.start + output.length },
    };
  }
  const at = placement === 'before' ? range.start : range.end;
  const before = content.slice(0, at);
  const after = content.slice(at);
  if (output.trim() === '') return { content, outputRange: { start: at, end: at } };
  const glue = (newlines: number) => '\n'.repeat(Math.max(0, 2 - newlines));
  const lead = before === '' ? '' : glue(edgeNewlines(before, true) + edgeNewlines(output, false));
  const trail = after === '' ? '' : glue(edgeNewlines(output, true) + edgeNewlines(after, false));
  const start = at + lead.length;
  return { content: before + lead + output + trail + after, outputRange: { start, end: start + output.length } };
}

/**
 * The part of the range the command really works on, without the whitespace at its edges (which stays where it
 * is, around the output). `keepIndent` keeps the first line's indentation, which is Markdown structure (a nested list
 * item, an indented code block) that a translation must see.
 */
export function workRange(content: string, range: Range, keepIndent: boolean): Range {
  let { start, end } = range;
  while (end > start && /\s/.test(content[end - 1]!)) end--;
  if (keepIndent) {
    // Skip whole blank lines only.
    let lineStart = start;
    for (let i = start; i < end && /\s/.test(content[i]!); i++) if (content[i] === '\n') lineStart = i + 1;
    start = lineStart;
  } else {
    while (start < end && /\s/.test(content[start]!)) start++;
  }
  return { start, end };
}
