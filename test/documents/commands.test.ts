// The AI commands on a document (src/features/documents/commands.ts), without a server or a database: the selection
// and where the output goes (UTF-16 offsets), the prompt of each command with its options, translation that keeps
// the Markdown structure (one batch call, one call per segment when the batch loses its markers), citations with a
// references section we build, and each command through the real sandbox models.
import { generateText, type ModelMessage } from 'ai';
import { describe, expect, test } from 'vitest';
import { formatReference, place, runCommand, selectionOf, type CitationSource, type CommandRequest, type Generate } from '../../src/features/documents/commands.ts';
import type { EngineMessage } from '../../src/features/engine/engine.ts';
import { keyTerms, sandboxModel } from '../../src/features/engine/sandbox.ts';
import { taskOption } from '../../src/features/engine/sandbox-task.ts';
import { Problem } from '../../src/platform/problems.ts';

/** A generate that records the messages of each call and answers with `answer(messages)`. */
function recorder(answer: (messages: EngineMessage[]) => string = () => 'Answer.') {
  const calls: EngineMessage[][] = [];
  const generate: Generate = async (messages) => {
    calls.push(messages);
    return answer(messages);
  };
  // Document commands send text messages only.
  return { calls, generate, system: (i = 0) => calls[i]![0]!.content as string, user: (i = 0) => calls[i]![1]!.content as string };
}

/** The problem a call throws, for its code, field errors and message. */
async function problemOf(run: () => unknown): Promise<Problem> {
  try {
    await run();
  } catch (error) {
    if (error instanceof Problem) return error;
    throw error;
  }
  throw new Error('expected a problem');
}

/** The real sandbox model behind the engine's provider interface (the AI SDK drives it, as the engine would), given
 *  the command's task the way the command handler gives it (`providerOptions.sandbox.task`). */
function sandbox(id: 'sandbox-echo' | 'sandbox-writer'): Generate {
  return async (messages, task) => {
    const instructions = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
    const rest = messages.filter((m) => m.role !== 'system') as ModelMessage[];
    const providerOptions = task ? { sandbox: { task: taskOption(task) } } : undefined;
    return (await generateText({ model: sandboxModel(id), instructions, messages: rest, providerOptions, maxRetries: 0 })).text;
  };
}

const input = (content: string, title = 'Spring sale') => ({ title, content });

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
      expect(problem).toMatchObject({ code: 'selection_out_of_range', status: 422, errors: [{ pointer: '/selection/end', detail }] });
    }
  });

  test('UTF-16 offsets: an emoji is two code units, and a range may not cut one in half', () => {
    const content = 'a😀b';
    expect(content.length).toBe(4);
    expect(selectionOf(content, { start: 1, end: 3 })).toEqual({ start: 1, end: 3 });
    expect(content.slice(1, 3)).toBe('😀');
    expect(() => selectionOf(content, { start: 2, end: 4 })).toThrow(expect.objectContaining({ code: 'selection_out_of_range', errors: [expect.objectContaining({ pointer: '/selection/start' })] }));
    expect(() => selectionOf(content, { start: 0, end: 2 })).toThrow(expect.objectContaining({ code: 'selection_out_of_range', errors: [expect.objectContaining({ pointer: '/selection/end' })] }));
  });
});

describe('place', () => {
  test('replace: the range becomes the output, and outputRange is where it is', () => {
    expect(place('Hello world!', { start: 6, end: 11 }, 'there', 'replace')).toEqual({ content: 'Hello there!', outputRange: { start: 6, end: 11 } });
    expect(place('abc', { start: 0, end: 3 }, 'longer text', 'replace')).toEqual({ content: 'longer text', outputRange: { start: 0, end: 11 } });
  });

  test('before and after: the output is its own block, a blank line from the text on each side', () => {
    const content = 'One.\n\nTwo.\n\nThree.';
    expect(place(content, { start: 6, end: 10 }, 'NEW', 'before')).toEqual({ content: 'One.\n\nNEW\n\nTwo.\n\nThree.', outputRange: { start: 6, end: 9 } });
    expect(place(content, { start: 6, end: 10 }, 'NEW', 'after')).toEqual({ content: 'One.\n\nTwo.\n\nNEW\n\nThree.', outputRange: { start: 12, end: 15 } });
    // Only a line break: one more makes the blank line.
    expect(place('A\nB', { start: 0, end: 1 }, 'NEW', 'after').content).toBe('A\n\nNEW\n\nB');
    // In the middle of a line: the output splits it into blocks.
    expect(place('Alpha beta', { start: 0, end: 5 }, 'NEW', 'after').content).toBe('Alpha\n\nNEW\n\n beta');
    // The output's own line breaks count.
    expect(place('A\n\nB', { start: 3, end: 4 }, 'NEW\n', 'before')).toEqual({ content: 'A\n\nNEW\n\nB', outputRange: { start: 3, end: 7 } });
  });

  test('at the very start or end: no blank line there', () => {
    expect(place('Text.', { start: 0, end: 5 }, 'NEW', 'before')).toEqual({ content: 'NEW\n\nText.', outputRange: { start: 0, end: 3 } });
    expect(place('Text.', { start: 0, end: 5 }, 'NEW', 'after')).toEqual({ content: 'Text.\n\nNEW', outputRange: { start: 7, end: 10 } });
    expect(place('', { start: 0, end: 0 }, 'NEW', 'before')).toEqual({ content: 'NEW', outputRange: { start: 0, end: 3 } });
    expect(place('Text.\n\n', { start: 0, end: 5 }, 'NEW', 'after')).toEqual({ content: 'Text.\n\nNEW\n\n', outputRange: { start: 7, end: 10 } });
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

describe('prompts: one system message with the task, one user message with the text', () => {
  const article = '# Spring sale\n\nEvery plan is 20% off until Sunday.\n\nThe offer ends at midnight.';

  test('outline: depth and instruction reach the prompt; placed before the content by default', async () => {
    const r = recorder(() => '## Sale\n### Dates');
    const result = await runCommand({ command: 'outline', depth: 3, instruction: 'Stress the deadline.' }, input(article), r.generate);
    expect(r.calls[0]!.map((m) => m.role)).toEqual(['system', 'user']);
    expect(r.system()).toContain('heading outline');
    expect(r.system()).toContain('at most 3 levels');
    expect(r.system()).toContain('`####`');
    expect(r.system()).toContain('Markdown only');
    expect(r.user()).toContain('Document title: Spring sale');
    expect(r.user()).toContain('Instruction: Stress the deadline.');
    expect(r.user()).toContain(`<text>\n${article}\n</text>`);
    expect(result).toEqual({ output: '## Sale\n### Dates', content: `## Sale\n### Dates\n\n${article}`, outputRange: { start: 0, end: 17 } });

    const byDefault = recorder();
    await runCommand({ command: 'outline' }, input(article), byDefault.generate);
    expect(byDefault.system()).toContain('at most 2 levels');
  });

  test('outline of an empty document: a plan from the title and instruction; neither is a 422', async () => {
    const r = recorder(() => '## Why now\n## Plans');
    const result = await runCommand({ command: 'outline', depth: 1, instruction: 'A guide for first-time buyers.' }, input('\n'), r.generate);
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
    const result = await runCommand({ command: 'expand', selection: { start, end: start + 35 }, target_words: 300, instruction: 'Add a customer example.' }, input(article), r.generate);
    expect(r.system()).toContain('expand');
    expect(r.system()).toContain('about 300 words');
    expect(r.user()).toContain('Instruction: Add a customer example.');
    expect(r.user()).toContain('<text>\nEvery plan is 20% off until Sunday.\n</text>');
    expect(result.content).toBe('# Spring sale\n\nA longer passage.\n\nThe offer ends at midnight.');
    expect(result.outputRange).toEqual({ start, end: start + 17 });
  });

  test('summarize: length and format; before the content by default (a TL;DR)', async () => {
    const r = recorder(() => '- Sale\n- Ends Sunday');
    const result = await runCommand({ command: 'summarize', length: 'short', format: 'bullets' }, input(article), r.generate);
    expect(r.system()).toContain('bulleted list (`- `) of two or three items');
    expect(result.content).toBe(`- Sale\n- Ends Sunday\n\n${article}`);
    const byDefault = recorder();
    await runCommand({ command: 'summarize' }, input(article), byDefault.generate);
    expect(byDefault.system()).toContain('in one paragraph');
    const long = recorder();
    await runCommand({ command: 'summarize', length: 'long', format: 'paragraph' }, input(article), long.generate);
    expect(long.system()).toContain('several paragraphs');
  });

  test('rewrite: instruction and tone; without either, clarity', async () => {
    const both = recorder();
    await runCommand({ command: 'rewrite', instruction: 'Address the reader.', tone: 'formal' }, input(article), both.generate);
    expect(both.system()).toContain('formal tone');
    expect(both.system()).not.toContain('clarity');
    expect(both.user()).toContain('Instruction: Address the reader.');
    const neither = recorder();
    await runCommand({ command: 'rewrite' }, input(article), neither.generate);
    expect(neither.system()).toContain('Improve its clarity');
    expect(neither.user()).not.toContain('Instruction:');
  });

  test('translate: target and source languages (by name) and formality', async () => {
    const r = recorder((messages) => (messages[1]!.content as string));
    await runCommand({ command: 'translate', target_language: 'de', source_language: 'en', formality: 'formal' }, input(article), r.generate);
    expect(r.system()).toContain('from English (en) into German (de)');
    expect(r.system()).toContain('formal form of address');
    const informal = recorder((messages) => (messages[1]!.content as string));
    await runCommand({ command: 'translate', target_language: 'pt-BR', formality: 'informal' }, input(article), informal.generate);
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
    await runCommand({ command: 'cite', sources: sources.map((s) => s.url!), style: 'apa' }, input(article), r.generate, sources);
    expect(r.system()).toContain('[2]');
    expect(r.user()).toContain('[1] Retail report\nURL: https://example.org/retail\nExcerpt: Sales rose 20% in spring.');
    expect(r.user()).toContain('[2] example.com/x\nURL: https://example.com/x\nExcerpt: (none');
    expect(r.user()).toContain(`<text>\n${article}\n</text>`);
  });

  test('the answer: a ```markdown fence around it and the whitespace at its edges are dropped', async () => {
    const r = recorder(() => '\n```markdown\nBetter text.\n```\n');
    expect((await runCommand({ command: 'rewrite' }, input('Bad text.'), r.generate)).output).toBe('Better text.');
    // A fenced answer to a fenced text is the answer itself.
    const code = recorder(() => '```js\nx()\n```');
    expect((await runCommand({ command: 'rewrite' }, input('```js\ny()\n```'), code.generate)).output).toBe('```js\nx()\n```');
  });

  test('the whitespace around a selection stays where it is', async () => {
    const r = recorder(() => 'New.');
    const content = 'One.\n\n  Two.  \n\nThree.';
    const result = await runCommand({ command: 'rewrite', selection: { start: 4, end: 15 } }, input(content), r.generate);
    expect(r.user()).toContain('<text>\nTwo.\n</text>');
    expect(result.content).toBe('One.\n\n  New.  \n\nThree.');
  });

  test('nothing to work on (an empty document, a blank selection) is a 422; an empty answer a 502', async () => {
    const r = recorder(() => '   ');
    expect(await problemOf(() => runCommand({ command: 'summarize' }, input(''), r.generate))).toMatchObject({ code: 'validation_failed', errors: [{ pointer: '/selection' }] });
    expect(await problemOf(() => runCommand({ command: 'rewrite', selection: { start: 1, end: 3 } }, input('a  b'), r.generate))).toMatchObject({
      code: 'validation_failed',
      errors: [{ pointer: '/selection', detail: 'selects only whitespace' }],
    });
    expect(r.calls).toHaveLength(0);
    expect(await problemOf(() => runCommand({ command: 'rewrite' }, input('Text.'), r.generate))).toMatchObject({ code: 'upstream_error', status: 502 });
  });
});

describe('translate keeps the Markdown structure', () => {
  const source = [
    '# Spring sale',
    '',
    'Every plan is **20% off** until Sunday: [the offer](https://example.com/offer "Offer") and `npm i sale`.',
    'A second line  ',
    'after a hard break.',
    '',
    '> Quoted once',
    '> and continued',
    '',
    '- [ ] Buy *now*',
    '  - Nested item',
    '1. First step',
    '',
    '| Plan | Price |',
    '|------|------:|',
    '| Basic plan | 10 |',
    '| Pro \\| team | 20 |',
    '',
    '```js',
    "const greeting = 'hello';",
    '```',
    '',
    '    indented code stays',
    '',
    '<div>raw html stays</div>',
    '',
    'Setext heading',
    '--------------',
    '',
    'Visit https://example.org/path today ⟦9⟧.',
  ].join('\n');
  const upper = [
    '# SPRING SALE',
    '',
    'EVERY PLAN IS **20% OFF** UNTIL SUNDAY: [THE OFFER](https://example.com/offer "Offer") AND `npm i sale`.',
    'A SECOND LINE  ',
    'AFTER A HARD BREAK.',
    '',
    '> QUOTED ONCE',
    '> AND CONTINUED',
    '',
    '- [ ] BUY *NOW*',
    '  - NESTED ITEM',
    '1. FIRST STEP',
    '',
    '| PLAN | PRICE |',
    '|------|------:|',
    '| BASIC PLAN | 10 |',
    '| PRO \\| TEAM | 20 |',
    '',
    '```js',
    "const greeting = 'hello';",
    '```',
    '',
    '    indented code stays',
    '',
    '<div>raw html stays</div>',
    '',
    'SETEXT HEADING',
    '--------------',
    '',
    'VISIT https://example.org/path TODAY ⟦9⟧.',
  ].join('\n');
  const upperLines = (text: string) =>
    text
      .split('\n')
      .map((line) => line.toUpperCase())
      .join('\n');

  test('one call with numbered segments; code, URLs and structure untouched', async () => {
    const r = recorder((messages) => upperLines((messages[1]!.content as string)));
    const result = await runCommand({ command: 'translate', target_language: 'fr' }, input(source), r.generate);
    expect(r.calls).toHaveLength(1);
    const batch = r.user();
    expect(batch.split('\n')[0]).toBe('⟦1⟧ Spring sale');
    expect(batch).toContain('⟦2⟧ Every plan is **20% off** until Sunday: [the offer]⟨1⟩ and ⟨2⟩.\nA second line\nafter a hard break.');
    expect(batch).not.toContain('greeting');
    expect(batch).not.toContain('raw html');
    expect(batch).not.toContain('https://');
    expect(result.output).toBe(upper);
    expect(result.content).toBe(upper);
    expect(result.outputRange).toEqual({ start: 0, end: upper.length });
  });

  test('an answer without the same markers: one call per segment, same result', async () => {
    const r = recorder((messages) => ((messages[1]!.content as string).includes('⟦1⟧') ? upperLines((messages[1]!.content as string).replace('⟦3⟧', '')) : (messages[1]!.content as string).toUpperCase()));
    const result = await runCommand({ command: 'translate', target_language: 'fr' }, input(source), r.generate);
    const segments = (r.user(0).match(/⟦\d+⟧/g) ?? []).length;
    expect(r.calls).toHaveLength(1 + segments);
    expect(r.calls.slice(1).map((call) => call[1]!.content)).toContain('Quoted once\nand continued');
    expect(r.system(1)).toContain('translation of the user');
    expect(result.output).toBe(upper);
  });

  test('a segment whose translation loses a placeholder is asked again, then kept as it was', async () => {
    const r = recorder((messages) => (messages[1]!.content as string).replace(/⟨\d+⟩/g, '').toUpperCase());
    const result = await runCommand({ command: 'translate', target_language: 'fr' }, input('Run `npm test` now.\n\nPlain words.'), r.generate);
    expect(r.calls).toHaveLength(2);
    expect(r.user(1)).toBe('Run ⟨1⟩ now.');
    expect(result.output).toBe('Run `npm test` now.\n\nPLAIN WORDS.');
  });

  test('a translation with another number of lines becomes one line; a selection keeps the text around it', async () => {
    const content = 'Intro.\n\n> First line\n> second line\n\nOutro.';
    const r = recorder(() => '⟦1⟧ Erste Zeile und zweite Zeile');
    const start = content.indexOf('>');
    const result = await runCommand({ command: 'translate', target_language: 'de', selection: { start, end: content.indexOf('Outro') } }, input(content), r.generate);
    expect(result.output).toBe('> Erste Zeile und zweite Zeile');
    expect(result.content).toBe('Intro.\n\n> Erste Zeile und zweite Zeile\n\nOutro.');
  });

  test('nothing but code: no call, the text as it is', async () => {
    const r = recorder();
    const code = '```sh\nnpm test\n```';
    expect((await runCommand({ command: 'translate', target_language: 'fr' }, input(code), r.generate)).content).toBe(code);
    expect(r.calls).toHaveLength(0);
  });
});

describe('cite builds the references itself', () => {
  const now = new Date('2026-03-14T22:30:00Z');
  const text = 'Retail sales rose in spring. Most shoppers buy online.';
  const sources: CitationSource[] = [
    { n: 1, url: 'https://www.example.org/reports/retail-2026', title: 'Retail report 2026', excerpt: 'Retail sales rose 4% in spring.' },
    { n: 2, url: 'https://stats.example.com/online', title: 'Online *shopping* [stats]', excerpt: 'Most shoppers now buy online.' },
    { n: 3, url: 'https://blog.example.net/', title: 'blog.example.net', excerpt: '' },
  ];
  const cite = (style: 'apa' | 'ieee', answer: string, content = text, list = sources) => {
    const r = recorder(() => answer);
    return { r, run: runCommand({ command: 'cite', sources: list.map((s) => s.url!), style }, input(content), r.generate, list, now) };
  };

  test('APA: only the sources the model cited, with the URL and the date accessed', async () => {
    const { run } = cite('apa', 'Retail sales rose in spring [1]. Most shoppers buy online [1][2].');
    const result = await run;
    expect(result.output).toBe('Retail sales rose in spring [1]. Most shoppers buy online [1][2].');
    expect(result.outputRange).toEqual({ start: 0, end: result.output.length });
    expect(result.content).toBe(
      [
        result.output,
        '',
        '## References',
        '',
        '- [1] *Retail report 2026*. (n.d.). example.org. Retrieved 2026-03-14, from <https://www.example.org/reports/retail-2026>',
        '- [2] *Online \\*shopping\\* \\[stats\\]*. (n.d.). stats.example.com. Retrieved 2026-03-14, from <https://stats.example.com/online>',
      ].join('\n'),
    );
  });

  test('IEEE: every source when the model used no marker; a source once however often it is given', async () => {
    const twice = [...sources, { ...sources[0]!, n: 4 }];
    const { run } = cite('ieee', text, text, twice);
    const result = await run;
    expect(result.content.split('## References\n\n')[1]).toBe(
      [
        '- [1] "Retail report 2026," example.org. [Online]. Available: <https://www.example.org/reports/retail-2026> (accessed 2026-03-14).',
        '- [2] "Online \\*shopping\\* \\[stats\\]," stats.example.com. [Online]. Available: <https://stats.example.com/online> (accessed 2026-03-14).',
        '- [3] "blog.example.net," blog.example.net. [Online]. Available: <https://blog.example.net/> (accessed 2026-03-14).',
      ].join('\n'),
    );
  });

  test('a document that ends with a References section: it is merged, never a second one', async () => {
    const content = `# Report\n\n${text} Prices fell [1].\n\n## References\n\n- [1] Old report. <https://blog.example.net>\n`;
    const { r, run } = cite('apa', `# Report\n\n${text.replace('online.', 'online [3].')} Prices fell [1].\n\n## References\n\n- made up`, content);
    const result = await run;
    // The model sees the text without the section, and the old source keeps its number; the new ones come after it.
    expect(r.user()).not.toContain('Old report');
    expect(r.user()).toContain('[1] blog.example.net\nURL: https://blog.example.net/');
    expect(r.user()).toContain('[2] Retail report 2026');
    expect(r.user()).toContain('[3] Online *shopping* [stats]');
    expect(result.output).toBe(`# Report\n\n${text.replace('online.', 'online [3].')} Prices fell [1].`);
    expect(result.content.match(/## References/g)).toHaveLength(1);
    expect(result.content).toBe(
      `${result.output}\n\n## References\n\n- [1] Old report. <https://blog.example.net>\n` +
        '- [3] *Online \\*shopping\\* \\[stats\\]*. (n.d.). stats.example.com. Retrieved 2026-03-14, from <https://stats.example.com/online>\n',
    );
    expect(result.content.slice(result.outputRange.start, result.outputRange.end)).toBe(result.output);
  });

  test('the reference styles of a page with no author or date', () => {
    const source = sources[0]!;
    const entries = (['apa', 'mla', 'chicago', 'harvard', 'ieee'] as const).map((style) => formatReference(source, 7, style, '2026-03-14'));
    expect(entries).toEqual([
      '- [7] *Retail report 2026*. (n.d.). example.org. Retrieved 2026-03-14, from <https://www.example.org/reports/retail-2026>',
      '- [7] "Retail report 2026." *example.org*, <https://www.example.org/reports/retail-2026>. Accessed 2026-03-14.',
      '- [7] "Retail report 2026." example.org. Accessed 2026-03-14. <https://www.example.org/reports/retail-2026>.',
      '- [7] *Retail report 2026* (n.d.) example.org. Available at: <https://www.example.org/reports/retail-2026> (Accessed: 2026-03-14).',
      '- [7] "Retail report 2026," example.org. [Online]. Available: <https://www.example.org/reports/retail-2026> (accessed 2026-03-14).',
    ]);
  });

  test('no source at all is a 422 at /sources', async () => {
    const r = recorder();
    expect(await problemOf(() => runCommand({ command: 'cite', sources: ['https://a.example'] }, input(text), r.generate, []))).toMatchObject({ code: 'validation_failed', errors: [{ pointer: '/sources' }] });
  });
});

describe('each command through the real sandbox models', () => {
  const content = '# Spring sale\n\nEvery subscription plan is discounted until Sunday. The discount covers annual subscription plans too.';
  /** A document of three sections, the example of docs/guides/documents.md. */
  const SALE = [
    '# Spring sale',
    '',
    'Our spring sale starts on Monday and runs for two weeks. Every subscription plan is 20% off, and annual plans also get two extra months for free. The discount applies to new and existing customers.',
    '',
    '## How to join',
    '',
    'Customers join the sale from the billing page. The discount is applied at checkout, so there is no code to remember. Annual plans renew at the sale price for the first year.',
    '',
    '## Shipping',
    '',
    'Orders placed before 2 pm ship the same day. Delivery takes 2 to 4 business days, and tracking links arrive by email.',
    '',
    '- Free shipping on orders over $50',
    '- Returns are free within 30 days',
  ].join('\n');
  /** The document's sentences, in order (list items without their marker). */
  const SALE_SENTENCES = SALE.split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .flatMap((line) => line.replace(/^- /, '').match(/[^.!?]+(?:[.!?]+|$)/g)!.map((sentence) => sentence.trim()));
  const sentencesOf = (text: string) => text.split('\n').flatMap((line) => line.replace(/^- /, '').match(/[^.!?]+[.!?]*/g) ?? []).map((sentence) => sentence.trim()).filter(Boolean);
  const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
  /** No part of the command's prompt, and no Markdown heading, in a draft. */
  const noPrompt = (text: string) => {
    expect(text).not.toMatch(/Document title|<\/?text>|Instruction:|Draft on|Nothing to draft/);
  };

  test.each([
    ['short', 2, 50],
    ['medium', 5, 120],
    ['long', 10, 250],
  ] as const)('summarize %s: sentences of the document, in its order, within %i sentences and %i words', async (length, most, budget) => {
    for (const format of ['paragraph', 'bullets'] as const) {
      const result = await runCommand({ command: 'summarize', length, format }, input(SALE), sandbox('sandbox-writer'));
      noPrompt(result.output);
      expect(result.output).not.toContain('#');
      const sentences = sentencesOf(result.output);
      expect(sentences.length).toBeGreaterThan(0);
      expect(sentences.length).toBeLessThanOrEqual(most);
      expect(words(result.output.replace(/^- /gm, ''))).toBeLessThanOrEqual(budget);
      // Each is a sentence of the document (a list item gets a full stop), and they keep the document's order.
      const at = sentences.map((sentence) => SALE_SENTENCES.findIndex((own) => own === sentence || `${own}.` === sentence));
      expect(at).not.toContain(-1);
      expect(at).toEqual([...at].sort((a, b) => a - b));
      if (format === 'bullets') expect(result.output.split('\n').every((line) => line.startsWith('- '))).toBe(true);
      expect(result.content.endsWith(`\n\n${SALE}`)).toBe(true);
    }
  });

  test('summarize: the documented examples; a longer summary holds more', async () => {
    const short = await runCommand({ command: 'summarize', length: 'short' }, input(SALE), sandbox('sandbox-writer'));
    expect(short.output).toBe('Our spring sale starts on Monday and runs for two weeks. Customers join the sale from the billing page.');
    const medium = await runCommand({ command: 'summarize' }, input(SALE), sandbox('sandbox-writer'));
    const long = await runCommand({ command: 'summarize', length: 'long' }, input(SALE), sandbox('sandbox-writer'));
    expect(words(medium.output)).toBeGreaterThan(words(short.output));
    expect(words(long.output)).toBeGreaterThan(words(medium.output));
    expect(long.output).toContain('\n\n');
  });

  test('outline: the document\'s own headings, each with its key sentence, before the content', async () => {
    const result = await runCommand({ command: 'outline' }, input(SALE), sandbox('sandbox-writer'));
    expect(result.output).toBe(
      [
        '## Spring sale',
        '- Our spring sale starts on Monday and runs for two weeks.',
        '### How to join',
        '- Customers join the sale from the billing page.',
        '### Shipping',
        '- Free shipping on orders over $50.',
      ].join('\n\n'),
    );
    expect(result.content).toBe(`${result.output}\n\n${SALE}`);
    const one = await runCommand({ command: 'outline', depth: 1 }, input(SALE), sandbox('sandbox-writer'));
    expect(one.output.split('\n').filter((line) => line.startsWith('#'))).toEqual(['## Spring sale']);
  });

  test('outline of a text without headings: a section per paragraph, titled by its words', async () => {
    const text = 'Orders placed before 2 pm ship the same day. Free shipping applies to orders over $50.\n\nReturns are free within 30 days. Send returns to our Lisbon warehouse.';
    const result = await runCommand({ command: 'outline' }, input(text), sandbox('sandbox-writer'));
    noPrompt(result.output);
    const headings = result.output.split('\n').filter((line) => line.startsWith('## '));
    expect(headings).toHaveLength(2);
    expect(result.output).toMatch(/^## .+\n\n- .+\.\n\n## .+\n\n- .+\.$/);
  });

  test('outline of an empty document: a plan from the title and the instruction', async () => {
    const result = await runCommand({ command: 'outline', instruction: 'Plan a post about roasts and subscriptions' }, input('', 'Spring launch 2027'), sandbox('sandbox-writer'));
    expect(result.output).toBe(['## Introduction', '## Spring', '## Launch', '## Roasts', '## Subscriptions', '## Conclusion'].join('\n\n'));
  });

  test('expand: the selection, then related sentences of the document, in place of the selection', async () => {
    const start = SALE.indexOf('Customers join');
    const end = SALE.indexOf('page.') + 'page.'.length;
    const result = await runCommand({ command: 'expand', selection: { start, end } }, input(SALE), sandbox('sandbox-writer'));
    noPrompt(result.output);
    expect(result.output.startsWith('Customers join the sale from the billing page. ')).toBe(true);
    expect(words(result.output)).toBeLessThanOrEqual(50);
    expect(result.output).toBe(
      'Customers join the sale from the billing page. Our spring sale starts on Monday and runs for two weeks. The discount applies to new and existing customers. Annual plans renew at the sale price for the first year.',
    );
    expect(result.content).toBe(SALE.slice(0, start) + result.output + SALE.slice(end));
    expect(result.outputRange).toEqual({ start, end: start + result.output.length });
  });

  test('rewrite: other words, the same meaning and key terms, the Markdown structure kept', async () => {
    const result = await runCommand({ command: 'rewrite' }, input(SALE), sandbox('sandbox-writer'));
    noPrompt(result.output);
    expect(result.output).not.toBe(SALE);
    expect(result.output.split('\n').filter((line) => line.startsWith('#'))).toEqual(['# Spring sale', '## How to join', '## Shipping']);
    expect(result.output).toContain('Each subscription plan is 20% off, and annual plans also get two more months for free.');
    expect(result.output).toContain("so there's no code to remember.");
    expect(keyTerms(result.output)).toEqual(keyTerms(SALE));
    expect(result.content).toBe(result.output);
    const formal = await runCommand({ command: 'rewrite', tone: 'formal' }, input("We don't ship on Sundays, and it's free."), sandbox('sandbox-writer'));
    expect(formal.output).toBe('We do not ship on Sundays, and it is free.');
    // Nothing for the rules to change but an "x and y": it is turned round.
    const swapped = await runCommand({ command: 'rewrite' }, input('New and existing customers.'), sandbox('sandbox-writer'));
    expect(swapped.output).toBe('Existing and new customers.');
  });

  test('rewrite (sandbox-echo): the answer is the user message, in place of the content', async () => {
    const result = await runCommand({ command: 'rewrite', tone: 'friendly' }, input(content), sandbox('sandbox-echo'));
    expect(result.output).toBe(`Document title: Spring sale\n\n<text>\n${content}\n</text>`);
    expect(result.content).toBe(result.output);
  });

  test('cite (sandbox-writer): a marker on each sentence its source speaks to, and the references', async () => {
    const sources: CitationSource[] = [{ n: 1, url: 'https://example.org/sale', title: 'Sale terms', excerpt: 'Subscription plans are discounted until Sunday.' }];
    const result = await runCommand({ command: 'cite', sources: ['https://example.org/sale'], style: 'mla' }, input(content), sandbox('sandbox-writer'), sources, new Date('2026-01-02T00:00:00Z'));
    expect(result.output).toBe('# Spring sale\n\nEvery subscription plan is discounted until Sunday [1]. The discount covers annual subscription plans too [1].');
    expect(result.content).toBe(`${result.output}\n\n## References\n\n- [1] "Sale terms." *example.org*, <https://example.org/sale>. Accessed 2026-01-02.`);
  });

  test('translate (sandbox-echo keeps the markers): the same Markdown back, in one call', async () => {
    const markdown = '# Title\n\n- one `code`\n- two\n\n```\nkeep\n```\n\n| a | b |\n|---|---|\n| c | d |';
    const calls: number[] = [];
    const echo = sandbox('sandbox-echo');
    const result = await runCommand({ command: 'translate', target_language: 'fr' }, input(markdown), async (messages) => {
      calls.push(1);
      return echo(messages);
    });
    expect(calls).toHaveLength(1);
    expect(result.content).toBe(markdown);
  });

  test('translate (sandbox-writer drops the markers): one call per segment, structure kept', async () => {
    const markdown = '## Title words\n\n> quoted sentence here\n\n```\nkeep this\n```';
    const result = await runCommand({ command: 'translate', target_language: 'fr' }, input(markdown), sandbox('sandbox-writer'));
    const lines = result.content.split('\n');
    expect(lines[0]).toMatch(/^## Draft on /);
    expect(lines[2]).toMatch(/^> Draft on /);
    expect(lines.slice(3)).toEqual(['', '```', 'keep this', '```']);
  });
});

// The type of a request is the contract's: a command's options are checked by the compiler too.
const _typed: CommandRequest[] = [{ command: 'translate', target_language: 'fr', formality: 'formal' }, { command: 'cite', sources: ['https://a.example'], style: 'ieee' }];
void _typed;
