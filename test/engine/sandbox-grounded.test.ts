// The sandbox-writer's grounded answers (src/features/engine/providers/sandbox/model.ts, docs/engine.md): with a passages block in its
// system messages it answers with the passage sentences that share the most key terms with the question, each marked
// with its passage's number, or says it found nothing; streamed, cut, in JSON or with a voice, the text is the same.
import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { generateText, streamText } from 'ai';
import { describe, expect, test } from 'vitest';
import { sandboxModel } from '../../src/features/engine/providers/sandbox/model.ts';

const NOTHING = 'I could not find an answer to that in my sources.';

const block = (...passages: Array<[string, string]>) =>
  [
    'You answer questions about our coffee shop.',
    'Knowledge passages:',
    ...passages.map(([title, text], i) => `[${i + 1}] ${title}\n${text}\n`),
    'End of passages.',
  ].join('\n');

const PASSAGES: Array<[string, string]> = [
  [
    'Shipping',
    'Orders ship within two working days from Lisbon. Delivery inside the EU takes three to five days; tracking numbers arrive by email.',
  ],
  [
    'Subscriptions',
    'A subscription sends fresh coffee every two weeks. Pause or cancel deliveries at any time from your account page.',
  ],
];

/** The example of docs/engine.md. */
const DOCS_BLOCK = [
  'Knowledge passages:',
  '[1] Shipping',
  'Orders placed before 2 pm ship the same day. Delivery takes 2 to 4 business days.',
  '',
  '[2] Returns',
  'Returns are free within 30 days.',
  'End of passages.',
].join('\n');

async function ask(question: string, system: string, model = 'sandbox-writer'): Promise<string> {
  return (await generateText({ model: sandboxModel(model), instructions: system, prompt: question, maxRetries: 0 }))
    .text;
}

/** A call straight to the model, as the engine makes it. */
function call(
  question: string,
  system: string,
  extra: Partial<LanguageModelV4CallOptions> = {},
): LanguageModelV4CallOptions {
  return {
    prompt: [
      { role: 'system', content: system },
      { role: 'user', content: [{ type: 'text', text: question }] },
    ],
    ...extra,
  };
}

async function streamed(
  options: LanguageModelV4CallOptions,
): Promise<{ text: string; deltas: number; finish: LanguageModelV4StreamPart | undefined }> {
  const { stream } = await sandboxModel('sandbox-writer').doStream(options);
  let text = '';
  let deltas = 0;
  let finish: LanguageModelV4StreamPart | undefined;
  for await (const part of stream) {
    if (part.type === 'text-delta') (text += part.delta), deltas++;
    if (part.type === 'finish') finish = part;
  }
  return { text, deltas, finish };
}

describe('sandbox-writer with knowledge passages', () => {
  test('answers with the sentences that match best, marked with their passage', async () => {
    expect(await ask('How long does delivery take inside the EU?', block(...PASSAGES))).toBe(
      'Delivery inside the EU takes three to five days; tracking numbers arrive by email [1]. Pause or cancel deliveries at any time from your account page [2].',
    );
    // One sentence only when no other scores; ! and ? are kept after the marker, a sentence without one gets ".".
    expect(await ask('When does my order ship?', DOCS_BLOCK)).toBe('Orders placed before 2 pm ship the same day [1].');
    const marks = block([
      'FAQ',
      'Is the roastery open on Sundays? Yes, every Sunday from ten!\nSunday brunch is served in the garden',
    ]);
    expect(await ask('Which Sunday hours?', marks)).toBe(
      'Is the roastery open on Sundays [1]? Yes, every Sunday from ten [1]!',
    );
    expect(await ask('Is brunch served?', marks)).toBe('Sunday brunch is served in the garden [1].');
  });

  test('the example of docs/engine.md', async () => {
    // "days" matches "day": the first sentence of passage 1 and the one of passage 2 score 1 each, passage 1 first.
    expect(await ask('How many business days does delivery take?', DOCS_BLOCK)).toBe(
      'Delivery takes 2 to 4 business days [1]. Orders placed before 2 pm ship the same day [1].',
    );
    expect(await ask('How long do returns take?', DOCS_BLOCK)).toBe(
      'Delivery takes 2 to 4 business days [1]. Returns are free within 30 days [2].',
    );
  });

  test('a plural or -ing form matches its term, in any case', async () => {
    // "subscriptions" matches "subscription": both sentences score one, in their order.
    expect(await ask('Can I pause my subscriptions?', block(...PASSAGES))).toBe(
      'A subscription sends fresh coffee every two weeks [2]. Pause or cancel deliveries at any time from your account page [2].',
    );
    const forms = block(
      ['Cookies', 'COOKIES keep you signed in.'],
      ['Settings', 'The setting for alerts is on the profile page.'],
      ['Addresses', 'Each account holds one billing address.'],
    );
    expect(await ask('What does a cookie do?', forms)).toBe('COOKIES keep you signed in [1].');
    expect(await ask('Where are my alert settings?', forms)).toBe('The setting for alerts is on the profile page [2].');
    expect(await ask('How many billing addresses?', forms)).toBe('Each account holds one billing address [3].');
  });

  test('a term counts once, and a sentence repeated by overlapping passages is given once', async () => {
    // "deliveries" and "delivery" are one term: the second passage's sentence does not outscore the first's.
    const overlap = block(
      ['Shipping', 'Delivery is free over 30 euros. Couriers deliver on weekdays.'],
      ['Shipping (continued)', 'Delivery is free over 30 euros.'],
    );
    expect(await ask('Delivery fees and deliveries?', overlap)).toBe('Delivery is free over 30 euros [1].');
    expect(await ask('Is delivery free, and do couriers deliver?', overlap)).toBe(
      'Delivery is free over 30 euros [1]. Couriers deliver on weekdays [1].',
    );
  });

  test('nothing relevant, no passage, or no key term: it says it found nothing', async () => {
    expect(await ask('Which parking garage is near the opera?', block(...PASSAGES))).toBe(NOTHING);
    expect(await ask('How long does delivery take?', block())).toBe(NOTHING);
    expect(await ask('How long does delivery take?', 'Knowledge passages:\nEnd of passages.')).toBe(NOTHING);
    expect(await ask('Is it?', block(...PASSAGES))).toBe(NOTHING);
  });

  test('an entry may have no title; the last block counts', async () => {
    expect(await ask('Opening hours?', 'Knowledge passages:\n[1]\nOpening hours are 8 to 18.\nEnd of passages.')).toBe(
      'Opening hours are 8 to 18 [1].',
    );
    // Instructions that quote the markers do not hide the prompt's own block, which comes last.
    const quoted = `Passages come as:\nKnowledge passages:\n[1] Example\nOpening hours are never listed.\nEnd of passages.\n\n${block(['Hours', 'Opening hours are 8 to 18.'])}`;
    expect(await ask('Opening hours?', quoted)).toBe('Opening hours are 8 to 18 [1].');
  });

  test('without the block it writes its usual draft; sandbox-echo ignores the block', async () => {
    expect(await ask('How long does delivery take?', 'Be brief.')).toBe(await ask('How long does delivery take?', ''));
    expect(await ask('How long does delivery take?', 'Be brief.')).toBe(
      "Thanks for asking. [Answer “How long does delivery take?” in one or two sentences.] If you need anything else, just reply and we'll help.",
    );
    expect(await ask('How long does delivery take?', block(...PASSAGES), 'sandbox-echo')).toBe(
      'How long does delivery take?',
    );
  });

  test('a voice does not rewrite a grounded answer; choices and seeds give the same answer', async () => {
    const voice = {
      sandbox: {
        sliders: {
          formality: 0,
          warmth: 100,
          humor: 100,
          enthusiasm: 100,
          conciseness: 100,
          complexity: 0,
          assertiveness: 100,
        },
      },
    };
    const question = 'How long does delivery take inside the EU?';
    const plain = await ask(question, block(...PASSAGES));
    const model = sandboxModel('sandbox-writer');
    const text = async (system: string) => {
      const [content] = (await model.doGenerate(call(question, system, { providerOptions: voice }))).content;
      return content?.type === 'text' ? content.text : '';
    };
    // The voice changes a draft, not a grounded answer.
    expect(await text('')).not.toBe(await ask(question, ''));
    expect(await text(block(...PASSAGES))).toBe(plain);
    for (const extra of [
      { providerOptions: { sandbox: { choice: 1 } } },
      { providerOptions: { sandbox: { choice: 2 } } },
      { seed: 7 },
    ]) {
      const result = await model.doGenerate(call(question, block(...PASSAGES), extra));
      expect(result.content).toEqual([{ type: 'text', text: plain }]);
    }
  });

  test('JSON mode holds the grounded text', async () => {
    const result = await sandboxModel('sandbox-writer').doGenerate(
      call('When does my order ship?', DOCS_BLOCK, { responseFormat: { type: 'json' } }),
    );
    const [content] = result.content;
    expect(content?.type === 'text' && JSON.parse(content.text)).toEqual({
      reply: 'Orders placed before 2 pm ship the same day [1].',
      key_terms: ['order', 'ship'],
    });
  });

  test('streamed, the answer is the same, word by word; stop and max_tokens cut it', async () => {
    const question = 'How long does delivery take inside the EU?';
    const whole = await ask(question, block(...PASSAGES));
    const streaming = streamText({
      model: sandboxModel('sandbox-writer'),
      instructions: block(...PASSAGES),
      prompt: question,
    });
    let text = '';
    for await (const piece of streaming.textStream) text += piece;
    expect(text).toBe(whole);

    const direct = await streamed(call(question, block(...PASSAGES)));
    expect(direct.text).toBe(whole);
    expect(direct.deltas).toBe(whole.split(' ').length);
    expect(direct.finish).toMatchObject({ finishReason: { unified: 'stop' } });
    expect((await streamed(call(question, block(...PASSAGES), { stopSequences: [' [1]'] }))).text).toBe(
      'Delivery inside the EU takes three to five days; tracking numbers arrive by email',
    );
    const cut = await streamed(call(question, block(...PASSAGES), { maxOutputTokens: 3 }));
    expect(cut.text).toBe('Delivery inside the');
    expect(cut.finish).toMatchObject({ finishReason: { unified: 'length' } });
  });
});
