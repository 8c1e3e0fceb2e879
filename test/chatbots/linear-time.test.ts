// A chatbot reads a visitor's message in time linear in it: each case feeds what made one of its patterns backtrack
// super-linearly, or a worst case for the keyword patterns built at run time, as long as a message may be (4,000
// characters, ChatbotMessageRequest.content), and checks the result. `npm run lint:redos` finds the patterns and names
// the two that stay quadratic on a message this short (scripts/redos-allowed.ts).
import { describe, expect, test } from 'vitest';
import { classifyIntent, matchKeyword } from '../../src/features/chatbots/intents.ts';

const MESSAGE = 4_000;

describe('a chatbot message as long as one may be', () => {
  test('a person asked for, the name followed by many words that could end it', () => {
    const message = `I want to talk to Anna${'. regarding'.repeat((MESSAGE - 22) / 11)}`;
    expect(classifyIntent(message)).toMatchObject({ intent: 'human_handoff', requestedAgent: 'Anna' });
  });

  test('escalation keywords: many starts of a keyword, each followed by a long run of white space', () => {
    const keywords = Array.from({ length: 50 }, (_, i) => `refund ${'please '.repeat(13)}now${i}`);
    const message = `${`refund${' '.repeat(99)}`.repeat(MESSAGE / 105)}refund`;
    expect(matchKeyword(message, keywords)).toBeNull();
    expect(matchKeyword(`${message} please`, ['refund please'])).toBe('refund please');
  });
});
