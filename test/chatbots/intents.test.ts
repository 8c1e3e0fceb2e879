// The intent rules of src/features/chatbots/intents.ts (the sandbox's classification, and the fallback of a
// provider's): realistic visitor messages and their intents, the requests for a person and whom they name, and the
// escalation keywords.
import { describe, expect, test } from 'vitest';
import { classifyIntent, matchKeyword, type Intent } from '../../src/features/chatbots/intents.ts';

const CASES: Array<[string, Intent]> = [
  ['Hi!', 'greeting'],
  ['hello there', 'greeting'],
  ['Thanks a lot'.replace(' a lot', ''), 'greeting'],
  ['Good morning team', 'greeting'],
  ['Hallo', 'greeting'],
  ['hi, where is my order?', 'order_status'],
  ['Where is my parcel? It was shipped on Monday', 'order_status'],
  ['My package has not arrived yet', 'order_status'],
  ['Wo ist meine Lieferung?', 'order_status'],
  ['How long does delivery take to Austria?', 'order_status'],
  ['I was charged twice for the same order', 'billing'],
  ['Can I get an invoice with our VAT number?', 'billing'],
  ['When do I get my refund?', 'billing'],
  ['Je voudrais une facture', 'billing'],
  ['The app does not work since the update', 'technical_support'],
  ['My e-bike won\'t turn on', 'technical_support'],
  ['I get an error code E42 when charging', 'technical_support'],
  ['The display is broken', 'technical_support'],
  ['I forgot my password', 'account'],
  ["I can't log in to my account", 'account'],
  ['How do I change the email address of my account?', 'account'],
  ['Passwort vergessen', 'account'],
  ['This is unacceptable, I have been waiting for weeks', 'complaint'],
  ['Your support is terrible', 'complaint'],
  ['I want to complain about the rude driver', 'complaint'],
  ['Very disappointed with the quality', 'complaint'],
  ['Could you send us a quote for 40 bikes for our company?', 'sales_lead'],
  ['Do you offer wholesale accounts?', 'sales_lead'],
  ['Can we book a demo?', 'sales_lead'],
  ['I am interested in buying three of them', 'sales_lead'],
  ['How much is the Trail E7?', 'pricing'],
  ['Is there a discount code right now?', 'pricing'],
  ['What are your prices for the 2027 models?', 'pricing'],
  ['Quel est le prix ?', 'pricing'],
  ['Just wanted to say great service, keep it up', 'feedback'],
  ['A suggestion: add a dark mode to the app', 'feedback'],
  ['I love the new design', 'feedback'],
  ['Feature request: export to CSV', 'feedback'],
  ['Does the Trail E7 fit riders under 1.60 m?', 'product_question'],
  ['Is it compatible with Shimano pedals?', 'product_question'],
  ['Which size should I pick?', 'product_question'],
  ['What is the difference between the S and the M model?', 'product_question'],
  ['Do you sell espresso machines?', 'product_question'],
  ['Can I talk to a human?', 'human_handoff'],
  ['I want to speak with someone in billing about my invoice', 'human_handoff'],
  ['Please connect me to an agent', 'human_handoff'],
  ['Ich möchte mit einem Mitarbeiter sprechen', 'human_handoff'],
  ['What is the meaning of life?', 'other'],
  ['asdfgh', 'other'],
  ['Tell me a joke about penguins', 'other'],
];

describe('classifyIntent', () => {
  test.each(CASES)('%s → %s', (message, intent) => {
    const result = classifyIntent(message);
    expect(result.intent).toBe(intent);
    expect(result.confidence).toBeGreaterThanOrEqual(0.3);
    expect(result.confidence).toBeLessThanOrEqual(0.95);
  });

  test('a request for a person names whom they asked for, or nobody in particular', () => {
    expect(classifyIntent('Can I talk to the billing team please?')).toMatchObject({ asksForPerson: true, requestedAgent: 'the billing team' });
    expect(classifyIntent('Put me through to Anna from accounting')).toMatchObject({ asksForPerson: true, requestedAgent: 'anna from accounting' });
    expect(classifyIntent('I want to speak with someone in billing about my invoice').requestedAgent).toBe('someone in billing');
    for (const generic of ['Can I talk to a human?', 'Please connect me to an agent', 'I need a real person', 'speak to customer service', 'talk to someone about my order now']) {
      expect(classifyIntent(generic), generic).toMatchObject({ intent: 'human_handoff', asksForPerson: true, requestedAgent: null });
    }
    expect(classifyIntent('Where is my order?').asksForPerson).toBe(false);
  });

  test('other is unsure; a clear message is surer than a vague one', () => {
    expect(classifyIntent('What is the meaning of life?').confidence).toBe(0.3);
    expect(classifyIntent('I was charged twice, I need a refund and an invoice').confidence).toBeGreaterThan(classifyIntent('payment').confidence);
  });
});

describe('matchKeyword', () => {
  test('whole words, their -s/-es/-ed/-ing forms, phrases with any spacing, case-insensitive', () => {
    expect(matchKeyword('I want a Refund!', ['refund', 'lawyer'])).toBe('refund');
    expect(matchKeyword('Was it refunded?', ['refund'])).toBe('refund');
    expect(matchKeyword('two refunds', ['refund'])).toBe('refund');
    expect(matchKeyword('a refundable ticket', ['refund'])).toBeNull();
    expect(matchKeyword('my LAWYER will call', ['refund', 'lawyer'])).toBe('lawyer');
    expect(matchKeyword('cancel   my subscription', ['cancel my subscription'])).toBe('cancel my subscription');
    expect(matchKeyword('nothing here', ['refund'])).toBeNull();
    expect(matchKeyword('c++ is great', ['c++'])).toBe('c++');
  });
});
