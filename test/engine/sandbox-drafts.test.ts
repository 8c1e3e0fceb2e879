// sandbox-writer's drafts (src/features/engine/providers/sandbox/draft.ts, docs/engine.md "Drafts"): the kind the message asks
// for, around the message's own topic; the same message gives the same draft, a choice or a seed another opening;
// streaming, stop, max_tokens, JSON and a voice's sliders work on it as on any answer.
import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { describe, expect, test } from 'vitest';
import { readRequest } from '../../src/features/engine/providers/sandbox/draft.ts';
import { sandboxModel } from '../../src/features/engine/providers/sandbox/model.ts';
import { countTokens } from '../../src/features/engine/tokens.ts';

function call(message: string, extra: Partial<LanguageModelV4CallOptions> = {}): LanguageModelV4CallOptions {
  return { prompt: [{ role: 'user', content: [{ type: 'text', text: message }] }], ...extra };
}

async function write(message: string, extra: Partial<LanguageModelV4CallOptions> = {}) {
  const result = await sandboxModel('sandbox-writer').doGenerate(call(message, extra));
  return {
    text: result.content.map((part) => (part.type === 'text' ? part.text : '')).join(''),
    finish: result.finishReason.unified,
    output: result.usage.outputTokens.total,
  };
}

const text = async (message: string, extra: Partial<LanguageModelV4CallOptions> = {}) =>
  (await write(message, extra)).text;

describe('sandbox-writer drafts', () => {
  test('the examples of docs/engine.md, one per kind', async () => {
    expect(await text('Announce our spring sale on coffee roasts')).toBe(
      "Introducing our spring sale on coffee roasts!\n\nWe're excited to share it with you. Find every detail at [link], from [date].\n\nQuestions? Reply to this message: we'd love to hear what you think.",
    );
    expect(await text('Write an email to customers about the price change')).toBe(
      "Subject: The price change\n\nHi [first name],\n\nWe wanted to let you know about the price change. [One or two sentences on what it means for you.]\n\nYou'll find the details at [link]. If you have any questions, just reply to this email.\n\nBest regards,\n[Your name]",
    );
    expect(await text('Write a blog intro about cold brew at home')).toBe(
      "# Cold brew at home\n\nIf you've ever wondered about cold brew at home, you're not alone. In this post we look at what it is, why it matters and how to get the most out of it, with examples you can use today.",
    );
    expect(await text('Draft a tagline for our coffee roasts')).toBe(
      "1. Meet our coffee roasts.\n2. Coffee roasts, done right.\n3. Don't miss our coffee roasts.",
    );
    expect(await text('Write a short post about the new export')).toBe(
      "Say hello to the new export! We think you'll love it. Learn more at [link]. #NewExport",
    );
    expect(await text('Describe our cold brew kit')).toBe(
      'Meet our cold brew kit: made for [who it is for], and built to [what it does]. [One detail that sets it apart: a material, a number or a result.] Available now at [link].',
    );
    expect(
      await text(
        'Summarize: Every plan is 20% off until Sunday. Annual plans also get two extra months. New and existing customers can use it. The sale ends at midnight on Sunday.',
      ),
    ).toBe('Every plan is 20% off until Sunday. Annual plans also get two extra months.');
    expect(
      await text('Rewrite in a friendly tone: In order to utilize the discount, enter the code at checkout.'),
    ).toBe('To use the discount, enter the code at checkout!');
    expect(await text('How long does delivery take?')).toBe(
      "Thanks for asking. [Answer “How long does delivery take?” in one or two sentences.] If you need anything else, just reply and we'll help.",
    );
    expect(await text('Write a poem about autumn leaves')).toBe(
      "Here's a first draft about autumn leaves. The short version: [the one thing your reader should know]. The longer one: [a detail or an example that makes it concrete].",
    );
    expect(await text('Hello')).toBe(
      'Hello! Tell me what to write and what it is about (an announcement, an email, a blog intro, a headline, a social post, a summary or a rewrite), and I will draft it.',
    );
  });

  test('the kind is the one the message names first; a name with nothing after it is the topic of a draft', () => {
    const kinds = (message: string) => {
      const { kind, topic } = readRequest(message);
      return [kind, topic];
    };
    expect(kinds('A launch note for our spring coffee sale')).toEqual(['announcement', 'our spring coffee sale']);
    expect(kinds('Write an email announcing our spring sale')).toEqual(['email', 'our spring sale']);
    expect(kinds('Write a blog post announcing the new export')).toEqual(['blog', 'the new export']);
    expect(kinds('Write a post about our launch')).toEqual(['social', 'our launch']);
    expect(kinds('A subject line for the spring sale')).toEqual(['headline', 'the spring sale']);
    expect(kinds('Please summarize this: the text')).toEqual(['summary', 'this']);
    expect(kinds('Could you rewrite this: the text')).toEqual(['rewrite', 'this']);
    expect(kinds('Write an email')).toEqual(['email', '']);
    // A heading of a document: "launch" names nothing here.
    expect(kinds('Spring launch')).toEqual(['draft', 'Spring launch']);
    expect(kinds('weather in Paris')).toEqual(['draft', 'weather in Paris']);
    expect(kinds('Hello from the AI SDK')).toEqual(['greeting', '']);
    expect(kinds('?!')).toEqual(['greeting', '']);
  });

  test('without a topic or a text: placeholders, or what to send', async () => {
    expect(await text('Write an email')).toMatch(
      /^Subject: \[topic\]\n\nHi \[first name\],\n\nWe wanted to let you know/,
    );
    expect(await text('Summarize')).toBe(
      'Send me the text to summarize after a colon ("Summarize: …"), and I will summarize it.',
    );
    expect(await text('?!')).toBe(
      'Tell me what to write and what it is about (an announcement, an email, a blog intro, a headline, a social post, a summary or a rewrite), and I will draft it.',
    );
  });

  test('deterministic; a choice or a seed picks another opening', async () => {
    const message = 'Announce our spring sale on coffee roasts';
    expect(await text(message)).toBe(await text(message));
    const openings = await Promise.all(
      [0, 1, 2, 3].map(
        async (choice) => (await text(message, { providerOptions: { sandbox: { choice } } })).split('\n')[0],
      ),
    );
    expect(openings).toEqual([
      'Introducing our spring sale on coffee roasts!',
      "It's here: our spring sale on coffee roasts.",
      "Big news: we're launching our spring sale on coffee roasts.",
      'Introducing our spring sale on coffee roasts!',
    ]);
    expect(await text(message, { seed: 1 })).toBe(await text(message, { providerOptions: { sandbox: { choice: 1 } } }));
    const tagline = await text('Draft a tagline for our coffee roasts', { seed: 2 });
    expect(tagline).toBe(
      "1. Don't miss our coffee roasts.\n2. Why everyone is talking about our coffee roasts.\n3. Coffee roasts: everything you need to know.",
    );
  });

  test('tokens, max_tokens, stop, JSON and streaming work on the draft', async () => {
    const message = 'Write an email to customers about the price change';
    const whole = await write(message);
    expect(whole.output).toBe(countTokens(whole.text));
    expect(whole.finish).toBe('stop');
    const cut = await write(message, { maxOutputTokens: 5 });
    expect(cut.finish).toBe('length');
    expect(cut.output).toBe(5);
    expect(whole.text.startsWith(cut.text)).toBe(true);
    expect(await text(message, { stopSequences: ['\n\nHi'] })).toBe('Subject: The price change');
    expect(JSON.parse(await text(message, { responseFormat: { type: 'json' } }))).toEqual({
      reply: whole.text,
      key_terms: ['email', 'customers', 'price', 'change'],
    });
    const { stream } = await sandboxModel('sandbox-writer').doStream(call(message));
    const parts: LanguageModelV4StreamPart[] = [];
    for await (const part of stream) parts.push(part);
    const deltas = parts.flatMap((part) => (part.type === 'text-delta' ? [part.delta] : []));
    expect(deltas.join('')).toBe(whole.text);
    expect(deltas.length).toBeGreaterThan(20);
  });

  test("a voice's sliders rewrite the draft", async () => {
    const sliders = {
      formality: 95,
      warmth: 50,
      humor: 50,
      enthusiasm: 5,
      conciseness: 50,
      complexity: 50,
      assertiveness: 50,
    };
    const message = 'Write an email to customers about the price change';
    expect(await text(message)).toContain("You'll find the details at [link].");
    expect(await text(message, { providerOptions: { sandbox: { sliders } } })).toContain(
      'You will find the details at [link], and if you have any questions, just reply to this email.',
    );
  });
});
