// The intent of a visitor message by rules: what the sandbox models use (a provider's model classifies messages
// itself, replies.ts), and what takes over when that classification fails. The rules, which the guide points to:
//
// 1. Small talk: a message of at most six words, all of them greeting or thanks words ("hi", "hello there",
//    "thanks!", "good morning", "hallo", "bonjour", "hola", "merci", "danke", "gracias") is `greeting`.
// 2. Every other intent has patterns (below, in English with the common German, French and Spanish words), each
//    worth 1 (a single telling word) or 2 (a phrase that leaves no doubt). An intent scores the sum of its patterns
//    that match the lower-cased message.
// 3. Asking for a person ("talk to a human", "speak with someone", "connect me to an agent", "transfer me to …",
//    "can I get a real person", "Mitarbeiter", "humain", "persona") is `human_handoff` whatever else the message
//    says, and sets `asksForPerson`. `requestedAgent` is whom they named after "to"/"with" ("the billing team",
//    "Anna from accounting"), trimmed of "please" and punctuation; null for nobody in particular ("a human",
//    "someone", "an agent", "a real person", "customer service").
// 4. The highest score wins; a tie goes to the intent listed first in PRIORITY. No pattern at all: `other`.
// 5. Confidence: 0.3 for `other`; otherwise 0.5 + 0.15 × the winning score − 0.1 × the runner-up's score, kept
//    within 0.4 and 0.95 (a handoff or greeting is 0.9).
import type { components } from '../../../generated/openapi.ts';

export type Intent = components['schemas']['ChatbotIntent'];
export const INTENTS: readonly Intent[] = ['product_question', 'pricing', 'order_status', 'billing', 'technical_support', 'account', 'complaint', 'feedback', 'sales_lead', 'human_handoff', 'greeting', 'other'];

export interface Classification {
  intent: Intent;
  /** How sure the rules are of the intent, 0-1. */
  confidence: number;
  /** Whether the visitor asks to talk to a person. */
  asksForPerson: boolean;
  /** The person or team the visitor named, as written; null when they asked for nobody in particular. */
  requestedAgent: string | null;
}

/** Ties go to the earlier intent: a complaint about a bill is a complaint, a bill about an order is billing. */
const PRIORITY: Intent[] = ['complaint', 'billing', 'order_status', 'technical_support', 'account', 'sales_lead', 'pricing', 'feedback', 'product_question'];

type Pattern = [RegExp, number];
const b = (words: string) => new RegExp(`(?:^|[^\\p{L}\\p{N}])(?:${words})(?![\\p{L}\\p{N}])`, 'u');

const PATTERNS: Record<Exclude<Intent, 'greeting' | 'human_handoff' | 'other'>, Pattern[]> = {
  complaint: [
    [b('complain(?:t|ts|ing|ed)?|unacceptable|disappointed|disappointing|terrible|awful|horrible|worst|furious|ridiculous|beschwerde|réclamation|reclamación|queja'), 2],
    [b('angry|annoyed|frustrated|upset|rude|never again|still waiting|no one answers|nobody answers'), 1],
  ],
  billing: [
    [b('invoices?|receipts?|refunds?|refunded|charged twice|double charged|chargeback|billing|rechnung|erstattung|facture|remboursement|factura|reembolso'), 2],
    [b('payments?|paid|pay|charged?|bill|credit card|card was|vat|money back'), 1],
  ],
  order_status: [
    [b('where is my (?:order|parcel|package)|track(?:ing)? (?:number|my)|has my order|order status|not (?:yet )?arrived|hasn.t arrived|lieferung|sendungsverfolgung|livraison|colis|envío|pedido'), 2],
    [b('orders?|deliver(?:y|ed|ies)?|shipping|shipped|ship|tracking|parcel|package|arrive|dispatch(?:ed)?|courier'), 1],
  ],
  technical_support: [
    [b("does not work|doesn.t work|not working|won.t (?:start|turn on|connect|charge)|stopped working|error (?:code|message)|crash(?:es|ed)?|broken|defect(?:ive)?|kaputt|funktioniert nicht|ne fonctionne pas|no funciona"), 2],
    [b('error|bug|problem|issue|fix|repair|reset|troubleshoot|install(?:ation)?|setup|update'), 1],
  ],
  account: [
    [b("log ?in|sign ?in|password|forgot my|can.t access my account|two.factor|2fa|passwort|mot de passe|contraseña"), 2],
    [b('account|profile|username|e-?mail address|settings|unsubscribe|konto|compte|cuenta'), 1],
  ],
  sales_lead: [
    [b('quote|quotation|demo|bulk order|wholesale|volume (?:pricing|discount)|reseller|partnership|enterprise plan|for (?:our|my) (?:company|team|office)|angebot|devis|presupuesto'), 2],
    [b('buy|purchase|order (?:\\d+|several|many)|interested in buying|trial'), 1],
  ],
  pricing: [
    [b('how much|price list|pricing|what does it cost|how expensive|preis|prix|precio'), 2],
    [b('prices?|cost|costs|cheap(?:er|est)?|expensive|discount|coupon|promo(?:tion)? code|sale|fee'), 1],
  ],
  feedback: [
    [b('feedback|suggestion|suggest|would be nice|feature request|love (?:your|the|it)|great (?:service|product|job)|well done|keep it up'), 2],
    [b('idea|improve|like (?:your|the)|amazing|awesome|excellent'), 1],
  ],
  product_question: [
    [b('does (?:it|the \\w+) (?:have|support|fit|work with)|is (?:it|the \\w+) compatible|which (?:one|model|size)|difference between|recommend|do you (?:sell|have|offer|carry|stock|make)'), 2],
    [b('compatible|size|sizes|colou?r|model|features?|specs?|specifications|available|in stock|material|weight|fit|works with|support'), 1],
  ],
};

const GREETING_WORDS = new Set('hi hello hey hiya howdy yo hallo hola bonjour salut ciao servus moin thanks thank thx ty cheers merci danke gracias you very much good morning afternoon evening day there all team guys'.split(' '));

/** Asking for a person: a verb of talking or connecting and someone to talk to, or a bare request for a human. */
const HANDOFF =
  /\b(?:talk|speak|chat)(?:ing)?\s+(?:to|with)\s+(.+)$|\b(?:connect|transfer|put)\s+me\s+(?:through\s+)?(?:to|with)\s+(.+)$|\b(?:can|could|may)\s+i\s+(?:get|have)\s+(an?\s+(?:real\s+|live\s+)?(?:human|person|agent|representative|operator)\b.*)$|\b((?:real|live)\s+(?:person|human|agent)|human\s+(?:agent|being)|a\s+human|mitarbeiter|menschen|humain|conseiller|una?\s+persona|agente)\b/u;
const GENERIC_PERSON = /^(?:a|an|some|the|your|one of your)?\s*(?:real |live |actual )?(?:human(?: being| agent)?|person|agent|representative|rep|operator|someone|somebody|anyone|anybody|staff|employee|support(?: agent| team| staff)?|customer (?:service|support)|mitarbeiter|menschen|humain|conseiller|persona|agente)(?:\s+(?:please|now|asap))?$/;
/** What a person the visitor named is not: the rest of a sentence ("to a human about my order"). */
const NAMED_TAIL = /\s+(?:about|regarding|because|as|since|for|on|who|that|to help|right now|now|today|asap|please)\b.*$/;

function requestedAgentOf(match: RegExpExecArray): string | null {
  const raw = (match[1] ?? match[2] ?? match[3] ?? match[4] ?? '').trim();
  const named = raw.replace(/[.!?,;:]+$/g, '').replace(NAMED_TAIL, '').replace(/\s+please$/, '').trim();
  if (!named || GENERIC_PERSON.test(named)) return null;
  return named.slice(0, 200);
}

export function classifyIntent(message: string): Classification {
  const text = message.toLowerCase().normalize('NFKC').replace(/[’‘]/g, "'");
  const words = text.match(/[\p{L}\p{N}']+/gu) ?? [];
  if (words.length > 0 && words.length <= 6 && words.every((word) => GREETING_WORDS.has(word))) {
    return { intent: 'greeting', confidence: 0.9, asksForPerson: false, requestedAgent: null };
  }
  const handoff = HANDOFF.exec(text.trim());
  if (handoff) return { intent: 'human_handoff', confidence: 0.9, asksForPerson: true, requestedAgent: requestedAgentOf(handoff) };

  const scores = PRIORITY.map((intent) => ({ intent, score: PATTERNS[intent as keyof typeof PATTERNS].reduce((sum, [pattern, weight]) => sum + (pattern.test(text) ? weight : 0), 0) }));
  const ranked = scores.filter((s) => s.score > 0).sort((a, b) => b.score - a.score || PRIORITY.indexOf(a.intent) - PRIORITY.indexOf(b.intent));
  if (ranked.length === 0) return { intent: 'other', confidence: 0.3, asksForPerson: false, requestedAgent: null };
  const [best, second] = ranked;
  const confidence = Math.min(0.95, Math.max(0.4, 0.5 + 0.15 * best!.score - 0.1 * (second?.score ?? 0)));
  return { intent: best!.intent, confidence: Math.round(confidence * 100) / 100, asksForPerson: false, requestedAgent: null };
}

/**
 * The first of `keywords` (as configured) that the message contains, case-insensitively: at word boundaries, a word
 * also matching with an ending s, es, ed or ing ("refund" matches "Refunds" and "refunded"); a phrase matches with any
 * spaces between its words. Null when none does.
 */
export function matchKeyword(message: string, keywords: readonly string[]): string | null {
  const text = message.toLowerCase();
  return (
    keywords.find((keyword) => {
      const words = keyword.toLowerCase().trim().split(/\s+/).map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
      if (words.length === 0 || words[0] === '') return false;
      return new RegExp(`(?:^|[^\\p{L}\\p{N}])${words.join('\\s+')}(?:s|es|ed|ing)?(?![\\p{L}\\p{N}])`, 'u').test(text);
    }) ?? null
  );
}
