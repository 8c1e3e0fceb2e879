// Each document command (src/features/documents/commands.ts) through the real sandbox models, without a server or
// a database.
import { describe, expect, test } from 'vitest';
import type { CitationSource, CommandRequest } from '../../../src/features/documents/commands/types.ts';
import { runCommand } from '../../../src/features/documents/commands.ts';
import { keyTerms } from '../../../src/features/engine/providers/sandbox/model.ts';
import { input, sandbox } from './support.ts';

describe('each command through the real sandbox models', () => {
  const content =
    '# Spring sale\n\nEvery subscription plan is discounted until Sunday. The discount covers annual subscription plans too.';
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
    .flatMap((line) =>
      line
        .replace(/^- /, '')
        .match(/[^.!?]+(?:[.!?]+|$)/g)!
        .map((sentence) => sentence.trim()),
    );
  const sentencesOf = (text: string) =>
    text
      .split('\n')
      .flatMap((line) => line.replace(/^- /, '').match(/[^.!?]+[.!?]*/g) ?? [])
      .map((sentence) => sentence.trim())
      .filter(Boolean);
  const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
  /** No part of the command's prompt, and no Markdown heading, in a draft. */
  const noPrompt = (text: string) => {
    expect(text).not.toMatch(/Document title|<\/?text>|Instruction:|first draft about|Tell me what to write/);
  };

  test.each([
    ['short', 2, 50],
    ['medium', 5, 120],
    ['long', 10, 250],
  ] as const)(
    'summarize %s: sentences of the document, in its order, within %i sentences and %i words',
    async (length, most, budget) => {
      for (const format of ['paragraph', 'bullets'] as const) {
        const result = await runCommand(
          { command: 'summarize', length, format },
          input(SALE),
          sandbox('sandbox-writer'),
        );
        noPrompt(result.output);
        expect(result.output).not.toContain('#');
        const sentences = sentencesOf(result.output);
        expect(sentences.length).toBeGreaterThan(0);
        expect(sentences.length).toBeLessThanOrEqual(most);
        expect(words(result.output.replace(/^- /gm, ''))).toBeLessThanOrEqual(budget);
        // Each is a sentence of the document (a list item gets a full stop), and they keep the document's order.
        const at = sentences.map((sentence) =>
          SALE_SENTENCES.findIndex((own) => own === sentence || `${own}.` === sentence),
        );
        expect(at).not.toContain(-1);
        expect(at).toEqual([...at].sort((a, b) => a - b));
        if (format === 'bullets') expect(result.output.split('\n').every((line) => line.startsWith('- '))).toBe(true);
        // Under the heading the document opens with, as a TL;DR.
        expect(result.content).toBe(SALE.replace('# Spring sale\n\n', `# Spring sale\n\n${result.output}\n\n`));
      }
    },
  );

  test('summarize: the documented examples; a longer summary holds more', async () => {
    const short = await runCommand({ command: 'summarize', length: 'short' }, input(SALE), sandbox('sandbox-writer'));
    expect(short.output).toBe(
      'Our spring sale starts on Monday and runs for two weeks. Customers join the sale from the billing page.',
    );
    const medium = await runCommand({ command: 'summarize' }, input(SALE), sandbox('sandbox-writer'));
    const long = await runCommand({ command: 'summarize', length: 'long' }, input(SALE), sandbox('sandbox-writer'));
    expect(words(medium.output)).toBeGreaterThan(words(short.output));
    expect(words(long.output)).toBeGreaterThan(words(medium.output));
    expect(long.output).toContain('\n\n');
  });

  test('summarize: a line typed in the editor, above the heading or below the text, is not the summary', async () => {
    const content =
      '# Spring sale\n\nEvery plan is 20% off until Sunday. Annual plans also get two extra months.\n\n## Who can use it\n\nNew and existing customers.';
    for (const typed of [`hello from window one\n\n${content}`, `${content}\n\nhello from window one`]) {
      const result = await runCommand(
        { command: 'summarize', length: 'short' },
        input(typed),
        sandbox('sandbox-writer'),
      );
      expect(result.output).toBe('Every plan is 20% off until Sunday.');
    }
  });

  test("outline: the document's own headings, each with its key sentence, under the opening heading", async () => {
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
    expect(result.content).toBe(SALE.replace('# Spring sale\n\n', `# Spring sale\n\n${result.output}\n\n`));
    const one = await runCommand({ command: 'outline', depth: 1 }, input(SALE), sandbox('sandbox-writer'));
    expect(one.output.split('\n').filter((line) => line.startsWith('#'))).toEqual(['## Spring sale']);
  });

  test('outline of a text without headings: a section per paragraph, titled by its words', async () => {
    const text =
      'Orders placed before 2 pm ship the same day. Free shipping applies to orders over $50.\n\nReturns are free within 30 days. Send returns to our Lisbon warehouse.';
    const result = await runCommand({ command: 'outline' }, input(text), sandbox('sandbox-writer'));
    noPrompt(result.output);
    const headings = result.output.split('\n').filter((line) => line.startsWith('## '));
    expect(headings).toHaveLength(2);
    expect(result.output).toMatch(/^## .+\n\n- .+\.\n\n## .+\n\n- .+\.$/);
  });

  test('outline of an empty document: a plan from the title and the instruction', async () => {
    const result = await runCommand(
      { command: 'outline', instruction: 'Plan a post about roasts and subscriptions' },
      input('', 'Spring launch 2027'),
      sandbox('sandbox-writer'),
    );
    expect(result.output).toBe(
      ['## Introduction', '## Spring', '## Launch', '## Roasts', '## Subscriptions', '## Conclusion'].join('\n\n'),
    );
  });

  test('expand: the selection, then related sentences of the document, in place of the selection', async () => {
    const start = SALE.indexOf('Customers join');
    const end = SALE.indexOf('page.') + 'page.'.length;
    const result = await runCommand(
      { command: 'expand', selection: { start, end } },
      input(SALE),
      sandbox('sandbox-writer'),
    );
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
    expect(result.output.split('\n').filter((line) => line.startsWith('#'))).toEqual([
      '# Spring sale',
      '## How to join',
      '## Shipping',
    ]);
    expect(result.output).toContain(
      'Each subscription plan is 20% off, and annual plans also get two more months for free.',
    );
    expect(result.output).toContain("so there's no code to remember.");
    expect(keyTerms(result.output)).toEqual(keyTerms(SALE));
    expect(result.content).toBe(result.output);
    const formal = await runCommand(
      { command: 'rewrite', tone: 'formal' },
      input("We don't ship on Sundays, and it's free."),
      sandbox('sandbox-writer'),
    );
    expect(formal.output).toBe('We do not ship on Sundays, and it is free.');
    // Nothing for the rules to change but an "x and y": it is turned round.
    const swapped = await runCommand(
      { command: 'rewrite' },
      input('New and existing customers.'),
      sandbox('sandbox-writer'),
    );
    expect(swapped.output).toBe('Existing and new customers.');
  });

  test('rewrite (sandbox-echo): the answer is the user message, in place of the content', async () => {
    const result = await runCommand({ command: 'rewrite', tone: 'friendly' }, input(content), sandbox('sandbox-echo'));
    expect(result.output).toBe(`Document title: Spring sale\n\n<text>\n${content}\n</text>`);
    expect(result.content).toBe(result.output);
  });

  test('cite (sandbox-writer): a marker on each sentence its source speaks to, and the references', async () => {
    const sources: CitationSource[] = [
      {
        n: 1,
        url: 'https://example.org/sale',
        title: 'Sale terms',
        excerpt: 'Subscription plans are discounted until Sunday.',
      },
    ];
    const result = await runCommand(
      { command: 'cite', sources: ['https://example.org/sale'], style: 'mla' },
      input(content),
      sandbox('sandbox-writer'),
      sources,
      new Date('2026-01-02T00:00:00Z'),
    );
    expect(result.output).toBe(
      '# Spring sale\n\nEvery subscription plan is discounted until Sunday [1]. The discount covers annual subscription plans too [1].',
    );
    expect(result.content).toBe(
      `${result.output}\n\n## References\n\n- [1] "Sale terms." *example.org*, <https://example.org/sale>. Accessed 2026-01-02.`,
    );
  });

  test('translate (sandbox-echo keeps the markers): the same Markdown back, in one call', async () => {
    const markdown = '# Title\n\n- one `code`\n- two\n\n```\nkeep\n```\n\n| a | b |\n|---|---|\n| c | d |';
    const calls: number[] = [];
    const echo = sandbox('sandbox-echo');
    const result = await runCommand(
      { command: 'translate', target_language: 'fr' },
      input(markdown),
      async (messages) => {
        calls.push(1);
        return echo(messages);
      },
    );
    expect(calls).toHaveLength(1);
    expect(result.content).toBe(markdown);
  });

  test('translate (sandbox-writer drops the markers): one call per segment, structure kept', async () => {
    const markdown = '## Title words\n\n> quoted sentence here\n\n```\nkeep this\n```';
    const result = await runCommand(
      { command: 'translate', target_language: 'fr' },
      input(markdown),
      sandbox('sandbox-writer'),
    );
    const lines = result.content.split('\n');
    expect(lines[0]).toMatch(/^## Here's a first draft about Title words\. /);
    expect(lines[2]).toMatch(/^> Here's a first draft about quoted sentence here\. /);
    expect(lines.slice(3)).toEqual(['', '```', 'keep this', '```']);
  });
});

// The type of a request is the contract's: a command's options are checked by the compiler too.
const _typed: CommandRequest[] = [
  { command: 'translate', target_language: 'fr', formality: 'formal' },
  { command: 'cite', sources: ['https://a.example'], style: 'ieee' },
];
void _typed;
