// The prompt of each document command with its options (src/features/documents/commands/prompts.ts).
import { describe, expect, test } from 'vitest';
import type { CitationSource } from '../../../src/features/documents/commands/types.ts';
import { runCommand } from '../../../src/features/documents/commands.ts';
import { input, problemOf, recorder } from './support.ts';

describe('prompts: one system message with the task, one user message with the text', () => {
  const article = '# Spring sale\n\nEvery plan is 20% off until Sunday.\n\nThe offer ends at midnight.';

  test('outline: depth and instruction reach the prompt; placed before the content by default, under its heading', async () => {
    const r = recorder(() => '## Sale\n### Dates');
    const result = await runCommand(
      { command: 'outline', depth: 3, instruction: 'Stress the deadline.' },
      input(article),
      r.generate,
    );
    expect(r.calls[0]!.map((m) => m.role)).toEqual(['system', 'user']);
    expect(r.system()).toContain('heading outline');
    expect(r.system()).toContain('at most 3 levels');
    expect(r.system()).toContain('`####`');
    expect(r.system()).toContain('Markdown only');
    expect(r.user()).toContain('Document title: Spring sale');
    expect(r.user()).toContain('Instruction: Stress the deadline.');
    expect(r.user()).toContain(`<text>\n${article}\n</text>`);
    // Before the content, under the level-1 heading it opens with.
    expect(result).toEqual({
      output: '## Sale\n### Dates',
      content: article.replace('# Spring sale\n\n', '# Spring sale\n\n## Sale\n### Dates\n\n'),
      outputRange: { start: 15, end: 32 },
    });
    // A selection that starts at the heading: before it, as asked.
    const selected = await runCommand(
      { command: 'outline', selection: { start: 0, end: article.length } },
      input(article),
      recorder(() => '## Sale').generate,
    );
    expect(selected.content).toBe(`## Sale\n\n${article}`);

    const byDefault = recorder();
    await runCommand({ command: 'outline' }, input(article), byDefault.generate);
    expect(byDefault.system()).toContain('at most 2 levels');
  });

  test('outline of an empty document: a plan from the title and instruction; neither is a 422', async () => {
    const r = recorder(() => '## Why now\n## Plans');
    const result = await runCommand(
      { command: 'outline', depth: 1, instruction: 'A guide for first-time buyers.' },
      input('\n'),
      r.generate,
    );
    expect(r.system()).toContain('plan a document');
    expect(r.system()).toContain('one level only');
    expect(r.user()).toContain('Document title: Spring sale');
    expect(r.user()).toContain('Instruction: A guide for first-time buyers.');
    expect(r.user()).not.toContain('<text>');
    expect(result.content).toBe('## Why now\n## Plans\n\n');
    const problem = await problemOf(() => runCommand({ command: 'outline' }, input('', ' '), r.generate));
    expect(problem).toMatchObject({ code: 'validation_failed', errors: [{ pointer: '/instruction' }] });
  });

  test('expand: the target length and instruction; the passage is replaced by default', async () => {
    const r = recorder(() => 'A longer passage.');
    const start = article.indexOf('Every');
    const result = await runCommand(
      {
        command: 'expand',
        selection: { start, end: start + 35 },
        target_words: 300,
        instruction: 'Add a customer example.',
      },
      input(article),
      r.generate,
    );
    expect(r.system()).toContain('expand');
    expect(r.system()).toContain('about 300 words');
    expect(r.user()).toContain('Instruction: Add a customer example.');
    expect(r.user()).toContain('<text>\nEvery plan is 20% off until Sunday.\n</text>');
    expect(result.content).toBe('# Spring sale\n\nA longer passage.\n\nThe offer ends at midnight.');
    expect(result.outputRange).toEqual({ start, end: start + 17 });
  });

  test('summarize: length and format; before the content by default (a TL;DR)', async () => {
    const r = recorder(() => '- Sale\n- Ends Sunday');
    const result = await runCommand(
      { command: 'summarize', length: 'short', format: 'bullets' },
      input(article),
      r.generate,
    );
    expect(r.system()).toContain('bulleted list (`- `) of two or three items');
    expect(result.content).toBe(article.replace('# Spring sale\n\n', '# Spring sale\n\n- Sale\n- Ends Sunday\n\n'));
    // A content without an opening level-1 heading: the summary is its first block. A setext heading counts.
    const plain = 'Every plan is 20% off.\n\n# Later heading';
    expect((await runCommand({ command: 'summarize' }, input(plain), recorder(() => 'TL;DR').generate)).content).toBe(
      `TL;DR\n\n${plain}`,
    );
    const setext = 'Spring sale\n===\n\nEvery plan is 20% off.';
    expect((await runCommand({ command: 'summarize' }, input(setext), recorder(() => 'TL;DR').generate)).content).toBe(
      'Spring sale\n===\n\nTL;DR\n\nEvery plan is 20% off.',
    );
    // A document of one word as long as a document may be: looking for its heading is linear in it (a pattern over
    // both lines of a setext heading took minutes here).
    const word = 'a'.repeat(1_000_000);
    expect((await runCommand({ command: 'summarize' }, input(word), recorder(() => 'TL;DR').generate)).content).toBe(
      `TL;DR\n\n${word}`,
    );
    expect(
      (await runCommand({ command: 'outline' }, input(`${word}\n===`), recorder(() => '- A').generate)).content,
    ).toBe(`${word}\n===\n\n- A`);
    // Other commands placed before the whole content stay before it all.
    expect(
      (await runCommand({ command: 'rewrite', placement: 'before' }, input(article), recorder(() => 'X').generate))
        .content,
    ).toBe(`X\n\n${article}`);
    const byDefault = recorder();
    await runCommand({ command: 'summarize' }, input(article), byDefault.generate);
    expect(byDefault.system()).toContain('in one paragraph');
    const long = recorder();
    await runCommand({ command: 'summarize', length: 'long', format: 'paragraph' }, input(article), long.generate);
    expect(long.system()).toContain('several paragraphs');
  });

  test('rewrite: instruction and tone; without either, clarity', async () => {
    const both = recorder();
    await runCommand(
      { command: 'rewrite', instruction: 'Address the reader.', tone: 'formal' },
      input(article),
      both.generate,
    );
    expect(both.system()).toContain('formal tone');
    expect(both.system()).not.toContain('clarity');
    expect(both.user()).toContain('Instruction: Address the reader.');
    const neither = recorder();
    await runCommand({ command: 'rewrite' }, input(article), neither.generate);
    expect(neither.system()).toContain('Improve its clarity');
    expect(neither.user()).not.toContain('Instruction:');
  });

  test('translate: target and source languages (by name) and formality', async () => {
    const r = recorder((messages) => messages[1]!.content as string);
    await runCommand(
      { command: 'translate', target_language: 'de', source_language: 'en', formality: 'formal' },
      input(article),
      r.generate,
    );
    expect(r.system()).toContain('from English (en) into German (de)');
    expect(r.system()).toContain('formal form of address');
    const informal = recorder((messages) => messages[1]!.content as string);
    await runCommand(
      { command: 'translate', target_language: 'pt-BR', formality: 'informal' },
      input(article),
      informal.generate,
    );
    expect(informal.system()).toContain('into Brazilian Portuguese (pt-BR)');
    expect(informal.system()).toContain('informal form');
    expect(informal.system()).not.toContain(' from ');
  });

  test('cite: the numbered sources, with URL and excerpt, reach the prompt', async () => {
    const r = recorder((messages) => (messages[1]!.content as string).match(/<text>\n([\s\S]*)\n<\/text>/)![1]!);
    const sources: CitationSource[] = [
      { n: 1, url: 'https://example.org/retail', title: 'Retail report', excerpt: 'Sales rose 20% in spring.' },
      { n: 2, url: 'https://example.com/x', title: 'example.com/x', excerpt: '' },
    ];
    await runCommand(
      { command: 'cite', sources: sources.map((s) => s.url!), style: 'apa' },
      input(article),
      r.generate,
      sources,
    );
    expect(r.system()).toContain('[2]');
    expect(r.user()).toContain(
      '[1] Retail report\nURL: https://example.org/retail\nExcerpt: Sales rose 20% in spring.',
    );
    expect(r.user()).toContain('[2] example.com/x\nURL: https://example.com/x\nExcerpt: (none');
    expect(r.user()).toContain(`<text>\n${article}\n</text>`);
  });

  test('the answer: a ```markdown fence around it and the whitespace at its edges are dropped', async () => {
    const r = recorder(() => '\n```markdown\nBetter text.\n```\n');
    expect((await runCommand({ command: 'rewrite' }, input('Bad text.'), r.generate)).output).toBe('Better text.');
    // A fenced answer to a fenced text is the answer itself.
    const code = recorder(() => '```js\nx()\n```');
    expect((await runCommand({ command: 'rewrite' }, input('```js\ny()\n```'), code.generate)).output).toBe(
      '```js\nx()\n```',
    );
  });

  test('the whitespace around a selection stays where it is', async () => {
    const r = recorder(() => 'New.');
    const content = 'One.\n\n  Two.  \n\nThree.';
    const result = await runCommand(
      { command: 'rewrite', selection: { start: 4, end: 15 } },
      input(content),
      r.generate,
    );
    expect(r.user()).toContain('<text>\nTwo.\n</text>');
    expect(result.content).toBe('One.\n\n  New.  \n\nThree.');
  });

  test('nothing to work on (an empty document, a blank selection) is a 422; an empty answer a 502', async () => {
    const r = recorder(() => '   ');
    expect(await problemOf(() => runCommand({ command: 'summarize' }, input(''), r.generate))).toMatchObject({
      code: 'validation_failed',
      errors: [{ pointer: '/selection' }],
    });
    expect(
      await problemOf(() =>
        runCommand({ command: 'rewrite', selection: { start: 1, end: 3 } }, input('a  b'), r.generate),
      ),
    ).toMatchObject({
      code: 'validation_failed',
      errors: [{ pointer: '/selection', detail: 'selects only whitespace' }],
    });
    expect(r.calls).toHaveLength(0);
    expect(await problemOf(() => runCommand({ command: 'rewrite' }, input('Text.'), r.generate))).toMatchObject({
      code: 'upstream_error',
      status: 502,
    });
  });
});
