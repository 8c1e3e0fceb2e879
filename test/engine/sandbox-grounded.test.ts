// The sandbox-writer's grounded answers (src/features/engine/sandbox.ts): with a passages block in its system
// messages it answers with the passage sentences that share the most key terms with the question, each marked with
// its passage's number, or says it found nothing; streamed, the text is the same.
import { generateText, streamText } from 'ai';
import { describe, expect, test } from 'vitest';
import { sandboxModel } from '../../src/features/engine/sandbox.ts';

const block = (...passages: Array<[string, string]>) =>
  ['You answer questions about our coffee shop.', 'Knowledge passages:', ...passages.map(([title, text], i) => `[${i + 1}] ${title}\n${text}\n`), 'End of passages.'].join('\n');

const PASSAGES: Array<[string, string]> = [
  ['Shipping', 'Orders ship within two working days from Lisbon. Delivery inside the EU takes three to five days; tracking numbers arrive by email.'],
  ['Subscriptions', 'A subscription sends fresh coffee every two weeks. Pause or cancel deliveries at any time from your account page.'],
];

async function ask(question: string, system: string): Promise<string> {
  return (await generateText({ model: sandboxModel('sandbox-writer'), instructions: system, prompt: question, maxRetries: 0 })).text;
}

describe('sandbox-writer with knowledge passages', () => {
  test('answers with the sentences that match best, marked with their passage', async () => {
    expect(await ask('How long does delivery take inside the EU?', block(...PASSAGES))).toBe(
      'Delivery inside the EU takes three to five days; tracking numbers arrive by email [1]. Pause or cancel deliveries at any time from your account page [2].',
    );
  });

  test('a plural or -ing form matches its term', async () => {
    // "subscriptions" matches "subscription": both sentences score one, in their order.
    expect(await ask('Can I pause my subscriptions?', block(...PASSAGES))).toBe('A subscription sends fresh coffee every two weeks [2]. Pause or cancel deliveries at any time from your account page [2].');
  });

  test('nothing relevant, no passage, or no key term: it says it found nothing', async () => {
    const nothing = 'I could not find an answer to that in my sources.';
    expect(await ask('Which parking garage is near the opera?', block(...PASSAGES))).toBe(nothing);
    expect(await ask('How long does delivery take?', block())).toBe(nothing);
    expect(await ask('Is it?', block(...PASSAGES))).toBe(nothing);
  });

  test('without the block it writes its usual draft; streamed, the answer is the same', async () => {
    expect(await ask('How long does delivery take?', 'Be brief.')).toMatch(/^Draft on /);
    const streamed = streamText({ model: sandboxModel('sandbox-writer'), instructions: block(...PASSAGES), prompt: 'How long does delivery take inside the EU?' });
    let text = '';
    for await (const piece of streamed.textStream) text += piece;
    expect(text).toBe(await ask('How long does delivery take inside the EU?', block(...PASSAGES)));
  });
});
