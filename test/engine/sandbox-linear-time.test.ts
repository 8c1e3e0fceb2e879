// The sandbox models read a message, a task's text and a tool result in time linear in them: each case feeds what made
// one of their patterns backtrack super-linearly, as long as a message may be (1,000,000 characters), and checks the
// answer. A super-linear pattern takes minutes on such an input, so a case that hangs is one come back. `npm run
// lint:redos` finds the patterns (scripts/lint-redos.ts).
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { describe, expect, test } from 'vitest';
import { connectedTopic, quotedPassage, readRequest } from '../../src/features/engine/providers/sandbox/draft.ts';
import { sandboxModel } from '../../src/features/engine/providers/sandbox/model.ts';
import {
  closingStart,
  taskText,
  withoutAutolinks,
  withoutLinkDestinations,
} from '../../src/features/engine/providers/sandbox/task.ts';
import { quotedPhrases } from '../../src/features/engine/providers/sandbox/tools.ts';

const MESSAGE = 1_000_000;

const user = (text: string): LanguageModelV4CallOptions['prompt'][number] => ({
  role: 'user',
  content: [{ type: 'text', text }],
});

describe('sandbox-writer drafts', () => {
  test('a topic ending in a run of stops or closing quotes with something after it', () => {
    expect(readRequest(`Write an email about launch${'.'.repeat(MESSAGE)}x.`).topic).toBe(
      `launch${'.'.repeat(MESSAGE)}x`,
    );
    expect(readRequest(`Write an email about launch ${'’'.repeat(MESSAGE)}x`).topic).toBe(
      `launch ${'’'.repeat(MESSAGE)}x`,
    );
  });

  test('connectors before a line terminator, and quotes never closed', () => {
    const connectors = `Write an email${' about x'.repeat(MESSAGE / 8)}\ry`;
    expect(connectedTopic(` ${connectors}`)).toBeUndefined();
    expect(readRequest(connectors)).toMatchObject({ kind: 'email', topic: '' });
    expect(quotedPassage('“'.repeat(MESSAGE))).toBeUndefined();
    expect(readRequest(`Summarize ${'“'.repeat(MESSAGE)}`).text).toBe('');
  });
});

describe('sandbox-writer document tasks', () => {
  test('summarize: a run of white space without a line break inside a paragraph', () => {
    const text = `Orders ship${' \t'.repeat(MESSAGE / 2)}today.`;
    expect(taskText({ kind: 'summarize', text, length: 'short' }, null)).toBe(text);
  });

  test("outline: link destinations and autolinks never closed, and a section's heading of stops", () => {
    expect(withoutLinkDestinations(']('.repeat(MESSAGE / 2))).toBe(']('.repeat(MESSAGE / 2));
    expect(withoutAutolinks(`${'<a:'.repeat(MESSAGE / 3)}\t<a:b>`)).toBe(`${'<a:'.repeat(MESSAGE / 3)}\t `);
    expect(taskText({ kind: 'outline', text: `Intro ${'](x '.repeat(MESSAGE / 4)}end.` }, null)).toMatch(
      /^## Intro\n\n- Intro \]\(x /,
    );
    const stops = `${'!'.repeat(MESSAGE)}x!`;
    expect(taskText({ kind: 'outline', text: stops }, null)).toBe(`## ${'!'.repeat(MESSAGE)}x\n\n- ${stops}`);
  });

  test('expand: a text that ends in line breaks followed by something', () => {
    const text = `Orders ship today.${'\n'.repeat(MESSAGE)}x`;
    expect(taskText({ kind: 'expand', text, context: 'Orders ship today.' }, null)).toBe(text);
  });

  test('rewrite: a list item of spaces with a carriage return in it', () => {
    const text = `* [ ] ${' '.repeat(MESSAGE)}a\rb`;
    expect(taskText({ kind: 'rewrite', text }, null)).toContain(`${' '.repeat(MESSAGE)}a\rb`);
  });

  test("cite: a sentence's run of stops with something after it", () => {
    const sentence = `${'!'.repeat(MESSAGE)}x`;
    expect(closingStart(sentence)).toBe(sentence.length);
    expect(closingStart(`${sentence}!”`)).toBe(sentence.length);
    const text = `Orders ship today${sentence}`;
    const cited = taskText(
      { kind: 'cite', text, sources: [{ n: 1, title: 'Orders', excerpt: 'Orders ship today' }] },
      null,
    );
    expect(cited).toBe(`${text} [1]`);
  });
});

describe('sandbox answers', () => {
  test('tool arguments: quotes never closed, and what stands between two quotes', () => {
    expect(quotedPhrases('““'.repeat(MESSAGE / 2))).toEqual([]);
    const between = `"a"${' '.repeat(MESSAGE)}x"b"`;
    expect(quotedPhrases(between).map((q) => q.phrase)).toEqual(['a', 'b']);
  });

  test('a streamed answer of white space only', async () => {
    const { stream } = await sandboxModel('sandbox-echo').doStream({ prompt: [user('\t'.repeat(MESSAGE))] });
    const deltas: string[] = [];
    for await (const part of stream) if (part.type === 'text-delta') deltas.push(part.delta);
    expect(deltas).toEqual(['\t'.repeat(MESSAGE)]);
  });

  test("a grounded answer from a passage's long run of stops", async () => {
    const result = await sandboxModel('sandbox-writer').doGenerate({
      prompt: [
        {
          role: 'system',
          content: `Knowledge passages:\n[1]\nOpening hours are 8 to 18${'!'.repeat(MESSAGE)}\nEnd of passages.`,
        },
        user('Opening hours?'),
      ],
    });
    expect(result.content).toEqual([{ type: 'text', text: `Opening hours are 8 to 18 [1]${'!'.repeat(MESSAGE)}` }]);
  });
});
