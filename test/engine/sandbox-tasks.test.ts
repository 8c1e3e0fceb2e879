// The sandbox-writer's document tasks (src/features/engine/providers/sandbox/task.ts, docs/engine.md "Document tasks"): with
// `providerOptions.sandbox.task` it writes from the task's text by rules and reads no prompt; sandbox-echo, a call
// without a task and a task of no known shape are answered as before. The examples of docs/engine.md are checked here.
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { describe, expect, test } from 'vitest';
import { sandboxModel } from '../../src/features/engine/providers/sandbox/model.ts';
import { type SandboxTask, textRank } from '../../src/features/engine/providers/sandbox/task.ts';

/** A call as the engine makes it: a prompt the task does not depend on, and the task in the sandbox's options. */
function call(task: unknown, extra: Partial<LanguageModelV4CallOptions> = {}): LanguageModelV4CallOptions {
  return {
    prompt: [
      { role: 'system', content: 'You summarise a text. Document title: Spring sale' },
      {
        role: 'user',
        content: [{ type: 'text', text: 'Document title: Spring sale\n\n<text>\nAnything at all\n</text>' }],
      },
    ],
    ...extra,
    providerOptions: { sandbox: { task: task as never, ...(extra.providerOptions?.sandbox ?? {}) } },
  };
}

async function write(
  task: unknown,
  extra: Partial<LanguageModelV4CallOptions> = {},
  model = 'sandbox-writer',
): Promise<string> {
  const result = await sandboxModel(model).doGenerate(call(task, extra));
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** DOC's short summary: two of its five sentences (a quarter, rounded up), the best-ranked, in order. */
const SHORT = 'Delivery takes 2 to 4 business days. Refunds reach your card within 5 days of the return arriving.';

const DOC = [
  '# Delivery',
  '',
  'Orders placed before 2 pm ship the same day. Delivery takes 2 to 4 business days. Tracking links arrive by email once an order ships.',
  '',
  '## Returns',
  '',
  'Returns are free within 30 days. Refunds reach your card within 5 days of the return arriving.',
].join('\n');

describe('document tasks', () => {
  test('summarize: the documented example; no prompt text; every choice and seed the same', async () => {
    const task: SandboxTask = { kind: 'summarize', text: DOC, length: 'short' };
    expect(await write(task)).toBe(SHORT);
    expect(await write(task, { seed: 3, providerOptions: { sandbox: { choice: 1 } } })).toBe(SHORT);
    expect(await write({ ...task, length: 'medium', format: 'bullets' })).toBe(
      '- Delivery takes 2 to 4 business days.\n- Returns are free within 30 days.\n- Refunds reach your card within 5 days of the return arriving.',
    );
  });

  test('summarize: a best sentence longer than the budget is the summary alone; code and tables are not sentences', async () => {
    const long = `${'Every word of this one sentence counts toward the budget of a short summary, '.repeat(5)}and it ends here.`;
    expect(await write({ kind: 'summarize', text: long, length: 'short' })).toBe(long);
    // One that fits is taken before it.
    expect(await write({ kind: 'summarize', text: `${long}\n\nShort one.`, length: 'short' })).toBe('Short one.');
    const text =
      'Plans renew yearly.\n\n```\nconst plans = renew();\n```\n\n| plan | price |\n|---|---|\n| annual | 90 |';
    expect(await write({ kind: 'summarize', text })).toBe('Plans renew yearly.');
  });

  test('outline: the headings to the depth, each with its key sentence; text before the first heading first', async () => {
    expect(await write({ kind: 'outline', text: DOC })).toBe(
      '## Delivery\n\n- Delivery takes 2 to 4 business days.\n\n### Returns\n\n- Refunds reach your card within 5 days of the return arriving.',
    );
    const intro = `Read this first: orders and returns.\n\n${DOC.replace('# Delivery', '### Delivery').replace('## Returns', '##### Returns')}`;
    const outline = await write({ kind: 'outline', text: intro, depth: 1 });
    // The levels are the text's own, in order (### is the outline's ##); the Returns section, deeper than depth 1,
    // counts as Delivery's.
    expect(outline).toBe(
      '- Read this first: orders and returns.\n\n## Delivery\n\n- Refunds reach your card within 5 days of the return arriving.',
    );
  });

  test('outline of an empty text: a plan from the title and instruction, without words about writing', async () => {
    expect(
      await write({
        kind: 'outline',
        text: '',
        title: 'Coffee subscriptions',
        instruction: 'Write a guide covering grinders and brewing',
      }),
    ).toBe('## Introduction\n\n## Coffee\n\n## Subscriptions\n\n## Grinders\n\n## Brewing\n\n## Conclusion');
    expect(await write({ kind: 'outline', text: '', title: 'FAQ' })).toBe('## FAQ');
  });

  test('expand: the selection and the related sentences of the context, within the words asked', async () => {
    const text = 'Returns are free within 30 days.';
    // "days" is shared with two sentences; together they are within twice the selection's words (at least 50).
    expect(await write({ kind: 'expand', text, context: DOC })).toBe(
      `${text} Delivery takes 2 to 4 business days. Refunds reach your card within 5 days of the return arriving.`,
    );
    const more = await write({ kind: 'expand', text, context: DOC, words: 60 });
    expect(more.startsWith(`${text} `)).toBe(true);
    expect(more.split(/\s+/).length).toBeLessThanOrEqual(60);
    // Nothing else in the document: the selection as it is.
    expect(await write({ kind: 'expand', text, context: text })).toBe(text);
    // A selection that ends in a list: the sentences are a paragraph of their own.
    expect(await write({ kind: 'expand', text: '- Free returns', context: `${DOC}\n\n- Free returns` })).toMatch(
      /^- Free returns\n\n\S/,
    );
  });

  test('rewrite: plain words, contractions, long sentences split; code and headings kept; a voice moves it too', async () => {
    const text =
      '## Getting started\n\nIn order to begin, you will need to utilize the billing page, and you do not need a code for the discount at checkout.\n\n```\ndo not change\n```';
    expect(await write({ kind: 'rewrite', text })).toBe(
      "## Getting started\n\nTo begin, you'll need to use the billing page. You don't need a code for the discount at checkout.\n\n```\ndo not change\n```",
    );
    const sliders = {
      formality: 10,
      warmth: 50,
      humor: 0,
      enthusiasm: 90,
      conciseness: 50,
      complexity: 20,
      assertiveness: 60,
    };
    const voiced = await write(
      { kind: 'rewrite', text: 'Orders ship the same day. Delivery takes two days.' },
      { providerOptions: { sandbox: { sliders } } },
    );
    expect(voiced).toContain('!');
    // The voice changes a rewrite only: a summary quotes the document.
    expect(
      await write({ kind: 'summarize', text: DOC, length: 'short' }, { providerOptions: { sandbox: { sliders } } }),
    ).toBe(SHORT);
  });

  test('cite: a marker where a source shares two key words; nothing else changes', async () => {
    const sources = [
      { n: 1, title: 'Shipping policy', excerpt: 'Orders ship the same day when placed before 2 pm.' },
      { n: 2, title: 'Returns policy', excerpt: 'Returns are free for 30 days; refunds take 5 days.' },
    ];
    expect(await write({ kind: 'cite', text: DOC, sources })).toBe(
      [
        '# Delivery',
        '',
        // "takes" and "days" are in the returns excerpt too ("refunds take 5 days"): the rule counts words, not facts.
        'Orders placed before 2 pm ship the same day [1]. Delivery takes 2 to 4 business days [2]. Tracking links arrive by email once an order ships [1].',
        '',
        '## Returns',
        '',
        'Returns are free within 30 days [2]. Refunds reach your card within 5 days of the return arriving [2].',
      ].join('\n'),
    );
  });

  test('sandbox-echo, a task of no known shape, and no task: answered as before', async () => {
    const task = { kind: 'summarize', text: DOC };
    expect(await write(task, {}, 'sandbox-echo')).toBe(
      'Document title: Spring sale\n\n<text>\nAnything at all\n</text>',
    );
    for (const odd of [
      { kind: 'poem', text: DOC },
      { kind: 'summarize' },
      { kind: 'summarize', text: DOC, length: 'tiny' },
      'summarize',
    ]) {
      expect(await write(odd)).toMatch(/^Here's a first draft about /);
    }
  });

  test('stop, max tokens, JSON and streaming apply to the task text as to a draft', async () => {
    const task = { kind: 'summarize', text: DOC, length: 'short' };
    expect(await write(task, { stopSequences: [' 2 to'] })).toBe('Delivery takes');
    const cut = await sandboxModel('sandbox-writer').doGenerate(call(task, { maxOutputTokens: 2 }));
    expect(cut.finishReason.unified).toBe('length');
    expect(JSON.parse(await write(task, { responseFormat: { type: 'json' } }))).toEqual({
      reply: SHORT,
      key_terms: expect.any(Array),
    });
    const { stream } = await sandboxModel('sandbox-writer').doStream(call(task));
    let text = '';
    for await (const part of stream) if (part.type === 'text-delta') text += part.delta;
    expect(text).toBe(SHORT);
  });

  test('TextRank: a sentence sharing words with the others ranks above one that shares none', () => {
    const words = (...list: string[]) => list.map((word) => new Set([word]));
    const scores = textRank([
      { words: words('coffee', 'beans') },
      { words: words('coffee', 'roast') },
      { words: words('weather') },
      { words: words('beans', 'roast') },
    ]);
    expect(scores[2]).toBeLessThan(Math.min(scores[0]!, scores[1]!, scores[3]!));
    expect(textRank([])).toEqual([]);
  });
});
