// The intent rules of src/features/chatbots/intents.ts (the sandbox's classification, and the fallback of a
// provider's): realistic visitor messages and their intents (tricky ones and near misses included), the requests for a
// person and whom they name, small talk, the documented confidence, and the escalation keywords.
import { describe, expect, it } from 'vitest';
import { classifyIntent, INTENTS, type Intent, matchKeyword } from '../../src/features/chatbots/intents.ts';

const CASES: Array<[string, Intent]> = [
  // greeting: small talk only
  ['Hi!', 'greeting'],
  ['hello there', 'greeting'],
  ['Thanks a lot!', 'greeting'],
  ['Good morning team', 'greeting'],
  ['ok thanks, bye', 'greeting'],
  ['Hallo', 'greeting'],
  ['Buenos días', 'greeting'],
  ['Merci beaucoup', 'greeting'],
  // order_status
  ['hi, where is my order?', 'order_status'],
  ["Where's my parcel? It was shipped on Monday", 'order_status'],
  ["My package hasn't arrived yet", 'order_status'],
  ['Wo ist meine Lieferung?', 'order_status'],
  ['How long does delivery take to Austria?', 'order_status'],
  ['Can you give me the tracking number for order 10482?', 'order_status'],
  ['¿Cuándo llega mi pedido?', 'order_status'],
  ['Je n’ai pas reçu ma livraison', 'order_status'],
  // billing
  ['I was charged twice for the same order', 'billing'],
  ['Can I get an invoice with our VAT number?', 'billing'],
  ['When do I get my refund?', 'billing'],
  ['Je voudrais une facture', 'billing'],
  ['Ich brauche eine Rechnung für meine Bestellung', 'billing'],
  ['Which payment methods do you accept?', 'billing'],
  // technical_support
  ['The app does not work since the update', 'technical_support'],
  ["My e-bike won't turn on", 'technical_support'],
  ['I get an error code E42 when charging', 'technical_support'],
  ['The display is broken', 'technical_support'],
  ['Die Kaffeemühle funktioniert nicht mehr', 'technical_support'],
  ['The app keeps crashing on Android 14', 'technical_support'],
  // account
  ['I forgot my password', 'account'],
  ["I can't log in to my account", 'account'],
  ['How do I change the email address of my account?', 'account'],
  ['Passwort vergessen', 'account'],
  ['Please delete my account', 'account'],
  ['Olvidé mi contraseña', 'account'],
  // complaint
  ['This is unacceptable, I have been waiting for weeks', 'complaint'],
  ['Your support is terrible', 'complaint'],
  ['I want to complain about the rude driver', 'complaint'],
  ['Very disappointed with the quality', 'complaint'],
  ['Your invoice is wrong again, this is ridiculous', 'complaint'], // a complaint about a bill is a complaint
  ['Je veux faire une réclamation', 'complaint'],
  // sales_lead
  ['Could you send us a quote for 40 bikes for our company?', 'sales_lead'],
  ['Do you offer wholesale accounts?', 'sales_lead'],
  ['Can we book a demo?', 'sales_lead'],
  ['I am interested in buying three of them', 'sales_lead'],
  ['We need 50 licenses, is there a volume discount?', 'sales_lead'],
  ['Könnten Sie uns ein Angebot schicken?', 'sales_lead'],
  // pricing
  ['How much is the Trail E7?', 'pricing'],
  ['Is there a discount code right now?', 'pricing'],
  ['What are your prices for the 2027 models?', 'pricing'],
  ['Quel est le prix ?', 'pricing'],
  ['How much does shipping to Canada cost?', 'pricing'], // shipping cost: a price, not a delivery
  ['¿Cuánto cuesta el modelo grande?', 'pricing'],
  // feedback
  ['Just wanted to say great service, keep it up', 'feedback'],
  ['A suggestion: add a dark mode to the app', 'feedback'],
  ['I love the new design', 'feedback'],
  ['Feature request: export to CSV', 'feedback'],
  ['It would be nice if the app had a widget', 'feedback'],
  // product_question
  ['Does the Trail E7 fit riders under 1.60 m?', 'product_question'],
  ['Is it compatible with Shimano pedals?', 'product_question'],
  ['Which size should I pick?', 'product_question'],
  ['What is the difference between the S and the M model?', 'product_question'],
  ['Do you sell espresso machines?', 'product_question'],
  ['Does the grinder work with a French press?', 'product_question'], // "work with", not "does not work"
  // human_handoff: a request for a person wins over everything else
  ['Can I talk to a human?', 'human_handoff'],
  ['I want to speak with someone in billing about my invoice', 'human_handoff'],
  ['Please connect me to an agent', 'human_handoff'],
  ['Ich möchte mit einem Mitarbeiter sprechen', 'human_handoff'],
  ['Je voudrais parler à un conseiller', 'human_handoff'],
  ['¿Puedo hablar con una persona?', 'human_handoff'],
  ['This is unacceptable, let me speak to your manager!', 'human_handoff'],
  ['agent', 'human_handoff'],
  ['Is there someone I can talk to?', 'human_handoff'],
  // other, and near misses that ask for no person
  ['What is the meaning of life?', 'other'],
  ['asdfgh', 'other'],
  ['Tell me a joke about penguins', 'other'],
  ['Should I keep beans in the fridge?', 'other'],
  ['Is there a person limit for the tasting?', 'other'],
  ['Hi, can you help me?', 'other'], // a greeting with a request is not small talk
  ['Can I talk to you about something?', 'other'], // talking to the chatbot is no request for a person
];

describe('classifyIntent', () => {
  it.each(CASES)('%s → %s', (message, intent) => {
    const result = classifyIntent(message);
    expect(result.intent).toBe(intent);
    expect(result.asksForPerson).toBe(intent === 'human_handoff');
    expect(result.confidence).toBeGreaterThanOrEqual(0.3);
    expect(result.confidence).toBeLessThanOrEqual(0.95);
    expect(Math.round(result.confidence * 100) / 100).toBe(result.confidence);
  });

  it('covers every intent of the contract with at least four messages', () => {
    for (const intent of INTENTS)
      expect(CASES.filter(([, expected]) => expected === intent).length, intent).toBeGreaterThanOrEqual(4);
  });

  const PERSONS: Array<[string, string | null]> = [
    ['Can I talk to the billing team please?', 'the billing team'],
    ['Put me through to Anna from sales.', 'Anna from sales'],
    ['I want to speak with someone in billing about my invoice', 'someone in billing'],
    ["I'd like to speak with Mr. Okafor, he handled my order", 'Mr. Okafor'],
    ['Transfer me to TECH SUPPORT now', 'TECH SUPPORT'],
    ['Could you escalate this to your manager? Nobody answers my emails', 'your manager'],
    ['Talk to Lena', 'Lena'],
    ['Can I talk to a human?', null],
    ['Please connect me to an agent', null],
    ['I need a real person', null],
    ['Is there a human here?', null],
    ['Thank you. Can you pass this on to the returns department?', 'the returns department'],
    ['speak to customer service', null],
    ['talk to someone about my order now', null],
    ['Can I chat with someone from your team?', null],
    ['Human please!!', null],
    ['I don’t want to talk to a bot, get me a human', null],
    ['Ich möchte mit einem Mitarbeiter sprechen', null],
  ];
  it.each(PERSONS)('a request for a person: %s → %s', (message, requestedAgent) => {
    expect(classifyIntent(message)).toEqual({
      intent: 'human_handoff',
      confidence: 0.9,
      asksForPerson: true,
      requestedAgent,
    });
  });

  it('keeps a named person to 200 characters', () => {
    const agent = classifyIntent(`Please put me through to ${'Bartholomew '.repeat(30)}`).requestedAgent;
    expect(agent).toHaveLength(200);
    expect(agent).toMatch(/^Bartholomew/);
  });

  it.each([
    'Where is my order?',
    'I was talking to my wife about buying two bikes',
    'Is the support team open on Sundays?',
    'Can I talk to you about pricing?',
    'Which customer service hours do you have?',
  ])('asks for no person: %s', (message) => {
    expect(classifyIntent(message)).toMatchObject({ asksForPerson: false, requestedAgent: null });
  });

  it('computes confidence as documented: 0.4 + 0.1 × score + 0.15 × margin, at most 0.95', () => {
    expect(classifyIntent('I need an invoice').confidence).toBe(0.9); // one strong pattern
    expect(classifyIntent('payment').confidence).toBe(0.65); // one weak word
    expect(classifyIntent('Do you offer wholesale?').confidence).toBe(0.6); // a tie of strong patterns, sales_lead by priority
    expect(classifyIntent('Do you offer wholesale?').intent).toBe('sales_lead');
    expect(classifyIntent('I was charged twice, I need a refund and an invoice').confidence).toBe(0.95); // strong + weak, capped
    expect(classifyIntent('What is the meaning of life?').confidence).toBe(0.3);
    expect(classifyIntent('hello').confidence).toBe(0.9);
  });
});

describe('matchKeyword', () => {
  const KEYWORDS: Array<[string, string[], string | null]> = [
    ['I want a Refund!', ['refund', 'lawyer'], 'refund'],
    ['Was it refunded?', ['refund'], 'refund'],
    ['two refunds please', ['refund'], 'refund'],
    ['I am refunding it', ['Refund'], 'Refund'], // returned as configured
    ['a refundable ticket', ['refund'], null],
    ['crowdfund', ['fund'], null], // must start a word
    ['my LAWYER will call', ['refund', 'lawyer'], 'lawyer'],
    ['my lawyer and a refund', ['refund', 'lawyer'], 'refund'], // the first keyword in the list wins
    ['You charged me twice', ['charge'], 'charge'],
    ['stop charging my card', ['charge'], 'charge'],
    ['feed the cat', ['fee'], null], // only a single final "e" takes "d"
    ['the fees are high', ['fee'], 'fee'],
    ['cancel   my\nsubscription', ['cancel my subscription'], 'cancel my subscription'],
    ['cancel my subscriptions', ['cancel my subscription'], 'cancel my subscription'],
    ['cancel your subscription', ['cancel my subscription'], null],
    ['C++17 crashes', ['c++'], 'c++'],
    ['Rückerstattung bitte', ['rückerstattung'], 'rückerstattung'],
    ['Ich will Geld zurück', ['Geld zurück'], 'Geld zurück'],
    ['I don’t want this', ["don't want"], "don't want"],
    ['nothing here', ['refund', '  '], null],
    ['anything', [], null],
  ];
  it.each(KEYWORDS)('%s with %j → %s', (message, keywords, expected) => {
    expect(matchKeyword(message, keywords)).toBe(expected);
  });
});
