// The intent of a visitor message, by rules: what the sandbox models use (a provider's model classifies messages
// itself, replies.ts), and what takes over when that classification fails. The rules, which the chatbots guide points to:
//
// 0. The message is read case-insensitively, with runs of whitespace as one space and curly apostrophes as straight
//    ones. Patterns match whole words (no letter or digit of any script right before or after). They are English,
//    with the most common German, French and Spanish words for the main intents.
// 1. Asking for a person is checked first and wins whatever else the message says: `human_handoff`, `asksForPerson`
//    true, confidence 0.9. A request for a person is any of:
//    a. "talk", "speak" or "chat" + "to"/"with" + whom, at the very start ("Talk to Anna") or after "I/we want to",
//       "need to", "would like to", "'d like to", "wish to", "have to", "can/could/may/do/should I/we", "let me",
//       "please", "how do/can I"; whom may not be "you", "me", "us", "yourself", "the/a bot", "chatbot" or "AI";
//    b. "connect", "transfer", "put", "forward", "redirect", "pass" or "escalate" + "me"/"us"/"this"/"my call, chat,
//       case or request" (+ "through", "over", "on") + "to"/"with" + whom ("put me through to Anna from sales");
//    c. anywhere, talking to a generic person ("I'd rather talk to a human"); "I want/need/would like", "can/could/may
//       I get/have/see", "get/give me" or "help/an answer/a reply from" + a person ("I need a real person"); "is/are
//       there" + a person + optional "here/available/online/around" ending the sentence ("is there a human?", not
//       "is there a person limit"); "someone/anyone/a human I can talk to"; or a message that is only a person or
//       "Mensch", "humain", "humano", "agente", "persona" (+ "please", "pls", "now"). A person: human, human being, human agent, person, agent, representative, rep
//       or operator, optionally "real", "live" or "actual" before it;
//    d. German "mit einem/einer (echten) Menschen, Mitarbeiter(in), Person, Berater(in) / mit jemandem … sprechen,
//       reden, chatten", "verbinden Sie mich"; French "parler à/avec un(e) (vrai) humain, conseiller, agent,
//       personne / quelqu'un", "un vrai humain", "un conseiller"; Spanish "hablar con una persona, un agente,
//       un humano, un asesor, alguien".
//    `requestedAgent`, for a and b only, is whom they named, as written: cut at the first , ; : ! ? ( or full stop
//    (not the one of Mr./Mrs./Ms./Dr./St.) and before the words "and", "or", "but", "so", "about", "regarding",
//    "concerning", "re", "because", "as", "since", "if", "who", "that", "which", "to", "with", "for", "instead",
//    "now", "today", "asap", "please", "pls", "immediately", "directly", "quickly"; a leading "please" dropped;
//    trimmed; at most 200 characters ("the billing team", "Anna from sales", "someone in billing", "your manager").
//    It is null for nobody in particular: a/an/the/some/any/your/one of your + (real/live/actual/human) + human(s),
//    person, people, agent, representative, rep, operator, someone, somebody, anyone, anybody, staff (member),
//    employee, (customer) support/service/care (+ team/agent/staff/person/rep/representative), optionally + "from/on/
//    in/of/at your/the team/company/staff/side/support" ("someone from your team"); and null for requests c and d.
// 2. Small talk: a message of 1 to 6 words (runs of letters and digits), every one of them in GREETING_WORDS below
//    (greeting, thanks and farewell words and their fillers: "hi", "hello there", "thanks a lot!", "good morning",
//    "ok thanks, bye", "hallo", "guten Tag", "bonjour", "merci beaucoup", "hola", "buenos días", "gracias"), is
//    `greeting`, confidence 0.9. "for your/the/all your help, time, answer, reply, support" is left out before counting
//    ("thank you for your help"). "hi, where is my order?" is not small talk.
// 3. Every other intent has patterns (PATTERNS below), each worth 2 (a phrase that leaves little doubt: "where is my
//    order", "invoice", "does not work") or 1 (a telling but ambiguous word: "delivery", "payment", "error"). An intent
//    scores the sum of its patterns found in the message (each pattern counts once).
// 4. The highest score wins. A tie goes to the intent listed first in PRIORITY: complaint, billing, order_status,
//    technical_support, account, sales_lead, pricing, feedback, product_question (after human_handoff, rule 1: the
//    more urgent or specific need first; a complaint about a bill is a complaint, an invoice for an order is billing).
// 5. Confidence = 0.4 + 0.1 × the winning score + 0.15 × its margin over the runner-up (0 when none scored), at most
//    0.95, two decimals: a strong pattern alone is 0.9, a single weak word 0.65, a tie between two strong ones 0.6.
// 6. Nothing matched: `other`, confidence 0.3.
import type { components } from '../../../generated/openapi.ts';

export type Intent = components['schemas']['ChatbotIntent'];
export const INTENTS: readonly Intent[] = [
  'product_question',
  'pricing',
  'order_status',
  'billing',
  'technical_support',
  'account',
  'complaint',
  'feedback',
  'sales_lead',
  'human_handoff',
  'greeting',
  'other',
];

export interface Classification {
  intent: Intent;
  /** How sure the rules are of the intent, 0..1 (rounded to 2 decimals): e.g. 0.9 for a strong pattern, lower for a single weak word, 0.3 for `other`. */
  confidence: number;
  /** Whether the visitor asks to talk to a person (a human, an agent, someone, the support team, a named person...). */
  asksForPerson: boolean;
  /** The person or team the visitor named when asking for one ("the billing team", "Anna"), as they wrote it (trimmed, at most 200 chars); null when they asked for nobody in particular ("a human", "someone", "an agent", "a real person"). */
  requestedAgent: string | null;
}

type ScoredIntent = Exclude<Intent, 'greeting' | 'human_handoff' | 'other'>;
/** Ties go to the earlier intent (rule 4). */
const PRIORITY: readonly ScoredIntent[] = [
  'complaint',
  'billing',
  'order_status',
  'technical_support',
  'account',
  'sales_lead',
  'pricing',
  'feedback',
  'product_question',
];

/**
 * Any of `alternatives` as whole words: no letter or digit right before or after (`\b` only knows ASCII letters, so
 * it would fail after "contraseña"). Case-insensitive, Unicode-aware.
 */
const w = (...alternatives: string[]) =>
  new RegExp(`(?<![\\p{L}\\p{N}])(?:${alternatives.join('|')})(?![\\p{L}\\p{N}])`, 'iu');
/** A phrase that leaves little doubt counts 2, a telling but ambiguous word 1 (rule 3). */
const strong = (...alternatives: string[]) => [w(...alternatives), 2] as const;
const weak = (...alternatives: string[]) => [w(...alternatives), 1] as const;

const PATTERNS: Record<ScoredIntent, ReadonlyArray<readonly [RegExp, number]>> = {
  complaint: [
    strong(
      'complain(?:t|ts|ing|ed)?',
      'unacceptable',
      'disappoint(?:ed|ing)',
      'terrible',
      'awful',
      'horrible',
      'worst',
      'furious',
      'ridiculous',
      'scam',
      'rip-?off',
      'waste of (?:money|time)',
      'never (?:again|buying|ordering)',
      '(?:very |so |really )?unhappy',
      'not happy',
      'beschwerde',
      'reklamation',
      'inakzeptabel',
      'réclamation',
      'inadmissible',
      'inacceptable',
      'reclamaci[óo]n',
      'queja',
    ),
    weak(
      'angry',
      'annoyed',
      'frustrat(?:ed|ing)',
      'upset',
      'rude',
      'still waiting',
      'ignored',
      '(?:no one|nobody) (?:answers|replies|responds|called)',
      '(?:poor|bad) service',
      'enttäuscht',
      'déçue?',
      'decepcionad[oa]',
    ),
  ],
  billing: [
    strong(
      'invoices?',
      'receipts?',
      'refund(?:s|ed)?',
      'charged twice',
      'double[- ]charged',
      'overcharged',
      'chargeback',
      'billing',
      'billed',
      'rechnung',
      '(?:rück)?erstattung',
      'abbuchung',
      'facture',
      'remboursement',
      'factura',
      'reembolso',
      'cobro',
    ),
    weak(
      'payments?',
      'paid',
      'pay(?:ing)?',
      'charge[ds]?',
      'bill',
      'credit card',
      'debit',
      'vat',
      'money back',
      'bank transfer',
      'paypal',
      'subscription',
      'return (?:my|the|it|this|an?)',
      'returns? policy',
      'send (?:it|this) back',
      'zahlung',
      'rücksendung',
      'paiement',
      'retour',
      'pago',
      'devoluci[óo]n',
    ),
  ],
  order_status: [
    strong(
      "where(?: is|'s) my (?:order|parcel|package|delivery|shipment)",
      'track(?:ing)? (?:number|my|the|an? order)',
      'has my (?:order|parcel|package)',
      'order status',
      "(?:not|hasn't|haven't|didn't|isn't) (?:yet )?(?:arrived?|been delivered|received?|shipped)",
      'when will (?:it|my \\w+) (?:arrive|ship|be delivered)',
      'how long (?:does|will) (?:the )?(?:delivery|shipping) take',
      'lieferung',
      'sendungsverfolgung',
      'wo ist mein(?:e)? (?:bestellung|paket)',
      'livraison',
      'colis',
      'où est ma commande',
      'env[íi]o',
      'mi pedido',
    ),
    weak(
      'orders?',
      'deliver(?:y|ed|ies)?',
      'shipping',
      'shipped',
      'ship',
      'shipment',
      'tracking',
      'parcel',
      'package',
      'arrive[ds]?',
      'dispatch(?:ed)?',
      'courier',
      'bestellung',
      'paket',
      'commande',
      'pedido',
    ),
  ],
  technical_support: [
    strong(
      "does(?: not|n't) work",
      'not working',
      "won't (?:start|turn on|connect|charge|load|open|pair|sync)",
      'stopped working',
      'error (?:code|message)',
      'crash(?:es|ed|ing)?',
      'broken',
      'defect(?:ive)?',
      'keeps (?:crashing|restarting|disconnecting|freezing)',
      'freez(?:es|ing)',
      'kaputt',
      'defekt',
      'funktioniert nicht',
      'ne (?:fonctionne|marche) pas',
      'en panne',
      'no funciona',
    ),
    weak(
      'errors?',
      'bugs?',
      'problems?',
      'issues?',
      'fix',
      'repair',
      'reset',
      'troubleshoot(?:ing)?',
      'install(?:ation|ing)?',
      'set ?up',
      'update',
      'firmware',
      'not loading',
      'fehler',
      'erreur',
      'problème',
      'problema',
    ),
  ],
  account: [
    strong(
      'log ?in',
      'log-in',
      'logging in',
      'sign ?in',
      'signing in',
      'password',
      'forgot my (?:username|e-?mail)',
      "(?:can't|cannot|can not) access (?:my )?account",
      'locked out',
      'two-factor',
      '2fa',
      '(?:delete|close|deactivate) my account',
      'change my (?:e-?mail|username)',
      'passwort',
      'anmelden',
      'mot de passe',
      'contrase[ñn]a',
      'iniciar sesi[óo]n',
    ),
    weak(
      'account',
      'profile',
      'username',
      'e-?mail address',
      'settings',
      'unsubscribe',
      'newsletter',
      'konto',
      'benutzername',
      'compte',
      'cuenta',
    ),
  ],
  sales_lead: [
    strong(
      'quote',
      'quotation',
      'demo',
      'bulk (?:orders?|purchases?|pricing|discount)',
      'wholesale',
      'volume (?:pricing|discount|licen[cs]es?)',
      'resell(?:er)?',
      'distributor',
      'partnership',
      'enterprise (?:plan|pricing|licen[cs]e)',
      'for (?:our|my) (?:company|team|office|business|staff|employees|school|shop|store)',
      'interested in (?:buying|purchasing|ordering)',
      "(?:want|would like|i'd like|plan) to (?:buy|purchase|order)",
      '(?:\\d{2,}|several|multiple|dozens of|hundreds of) (?:units|pieces|licen[cs]es|seats)',
      'angebot',
      'gro(?:ß|ss)bestellung',
      'devis',
      'presupuesto',
      'cotizaci[óo]n',
    ),
    weak('buy(?:ing)?', 'purchas(?:e|ing)', 'trial', 'b2b', 'tender', 'procurement', 'licen[cs]es', 'seats'),
  ],
  pricing: [
    strong(
      'how much',
      'price list',
      'pricing',
      'what (?:does|do|would) (?:it|this|that|they|the [\\p{L}\\p{N} -]{1,30}) cost',
      'how expensive',
      "what(?:'s| is| are) (?:the|your) (?:prices?|rates|fees)",
      'cost of',
      '(?:discount|promo|coupon|voucher) codes?',
      'preise?',
      'kostet',
      'prix',
      'combien',
      'precios?',
      'cu[áa]nto cuesta',
    ),
    weak(
      'prices?',
      'costs?',
      'cheap(?:er|est)?',
      'expensive',
      'discounts?',
      'coupons?',
      'promo(?:tion)?',
      'vouchers?',
      'sale',
      'fees?',
      'plans?',
      'rabatt',
      'tarifs?',
    ),
  ],
  feedback: [
    strong(
      'feedback',
      'suggestions?',
      'i (?:would )?suggest',
      'would be (?:nice|great|cool|helpful)',
      'feature request',
      'lov(?:e|ed|ing) (?:your|the|it|this)',
      'great (?:service|product|job|work|app|experience|support)',
      'well done',
      'keep it up',
      'vorschlag',
      'sugerencia',
    ),
    weak(
      'ideas?',
      'improve(?:ment)?',
      'like (?:your|the)',
      'amazing',
      'awesome',
      'excellent',
      'fantastic',
      'happy with',
      'satisfied',
      'thank(?:s| you)(?: so much)? for',
    ),
  ],
  product_question: [
    strong(
      '(?:does|do|will|can) (?:it|this|that|they|the(?: [\\p{L}\\p{N}.-]+){1,3}) (?:have|support|fit|work with|come with|include)',
      '(?:is|are) (?:it|this|that|they|the(?: [\\p{L}\\p{N}.-]+){1,3}) (?:compatible|available|in stock|waterproof)',
      'which (?:one|model|size|version|variant)',
      'difference between',
      "what(?:'s| is) the difference",
      '(?:can|could|would) you recommend',
      'do you (?:sell|have|offer|carry|stock|make)',
      'what (?:sizes?|colou?rs?|materials?)',
      'how (?:big|heavy|long|wide|tall) is',
    ),
    weak(
      'compatible',
      'compatibility',
      'sizes?',
      'colou?rs?',
      'models?',
      'features?',
      'specs?',
      'specifications',
      'dimensions',
      'available',
      'availability',
      'in stock',
      'materials?',
      'weight',
      'battery',
      'warranty',
      'versus',
      'vs',
      'kompatibel',
      'unterschied',
      'taille',
      'différence',
      'talla',
      'diferencia',
    ),
  ],
};

const GREETING_WORDS = new Set(
  (
    'hi hello hey heya hiya howdy yo there all everyone team guys folks good morning afternoon evening day again how are you doing ' +
    'thanks thank thx ty cheers much very so a lot many ok okay great bye goodbye see later ' +
    'hallo servus moin guten tag morgen abend danke schön vielen dank tschüss ' +
    'bonjour bonsoir salut coucou merci beaucoup au revoir ' +
    'hola buenos buenas días dias tardes noches gracias muchas adiós adios'
  ).split(' '),
);

/** What may follow thanks in small talk ("thanks for your help"). */
const THANKS_FOR = w('for (?:your|the|all (?:your|the)) (?:quick )?(?:help|time|answer|reply|support)');

const PERSON = '(?:(?:real|live|actual) )?(?:human(?: being| agent)?|person|agent|representative|rep|operator)';
const TALK = '(?:talk|speak|chat)';
const ASKING =
  "(?:(?:i|we)(?:'d| would)? (?:want|need|like|wish|have) to|i'd like to|(?:can|could|may|do|should) (?:i|we)|let me|please|how (?:do|can) i|want to|need to)";
/** Each request for a person (rule 1, a to d); group 1, where there is one, is whom the visitor named. */
const HANDOFF: readonly RegExp[] = [
  w(`(?:^|${ASKING} )${TALK}(?: directly| now)? (?:to|with) (.+)`),
  w(
    '(?:connect|transfer|put|forward|redirect|pass|escalate) (?:me|us|this|my (?:call|chat|case|request))(?: through| over| on)? (?:to|with) (.+)',
  ),
  w(`${TALK} (?:to|with) (?:(?:a|an|some|your|one of your) )?(?:${PERSON}|someone|somebody|an employee|staff)`),
  w(
    `(?:i (?:want|need|would like)|i'd like|(?:can|could|may) (?:i|we) (?:get|have|see)|get me|give me|(?:help|an answer|a reply) from) (?:(?:a|an|some|any) )?${PERSON}`,
  ),
  // "Is there a human?", "is there a person here"; not "is there a person limit".
  w(`(?:is|are) there (?:(?:a|an|any) )?${PERSON}s?(?: (?:here|available|online|around))?(?:[.!?]|$)`),
  w(`(?:someone|somebody|anyone|anybody|a (?:real )?(?:human|person)) (?:i|we) (?:can|could) ${TALK} (?:to|with)`),
  new RegExp(`^(?:(?:a|an) )?(?:${PERSON}|mensch|humain|humano|agente|persona)(?: please| pls| now)?[ .!?]*$`, 'iu'),
  w(
    'mit (?:einem |einer )?(?:echten )?(?:menschen?|mitarbeiter(?:in)?|person|berater(?:in)?|jemandem)(?: [^.?!]*)? (?:sprechen|reden|chatten)',
    'verbinden sie mich',
  ),
  w(
    "parler (?:à|a|avec) (?:(?:un|une) (?:vrai |vraie )?(?:humain|conseill(?:er|ère)|agent|personne|opérateur)|quelqu'un)",
    '(?:un|une) (?:vrai |vraie )?(?:humain|conseill(?:er|ère))',
  ),
  w('hablar con (?:(?:una?|el|la) )?(?:persona|agente|humano|asesora?|operador|alguien)'),
];
/** Talking to the chatbot itself (or "please talk to me") is no request for a person. */
const NOT_A_PERSON = /^(?:you|u|yourself|me|us|(?:a|an|the|this) (?:bot|chatbot|robot|machine|ai)|ai|chatgpt)$/iu;
/**
 * Where a named person or team ends: punctuation (a full stop not after Mr/Mrs/Ms/Dr/St), or the rest of the sentence.
 * The rest is `[\s\S]*`, not `.*`: the message's white space is made single spaces before, so no line terminator
 * can stop it, and a `.*$` that could fail would be tried from every such word.
 */
const NAME_END = new RegExp(
  '(?:[,;:!?()]|(?<!(?:^| )(?:mr|mrs|ms|dr|st))\\.| (?:and|or|but|so|about|regarding|concerning|re|because|as|since|if|who|that|which|to|with|for|' +
    'instead|right now|now|today|asap|please|pls|immediately|directly|quickly)(?![\\p{L}\\p{N}]))[\\s\\S]*$',
  'iu',
);
const GENERIC_PERSON = new RegExp(
  '^(?:(?:a|an|the|some|any|your|one of your|one of the) )?(?:(?:real|live|actual|human) )?' +
    '(?:human(?: being| agent)?s?|person|people|agents?|representatives?|reps?|operators?|someone|somebody|anyone|anybody|staff(?: member)?|employees?|' +
    '(?:customer )?(?:support|service|care)(?: (?:team|agent|staff|person|rep|representative))?)' +
    '(?: (?:from|on|in|of|at) (?:your|the) (?:team|company|staff|side|support))?$',
  'iu',
);

/** Whom a request named (null: nobody in particular), or undefined when it addressed the chatbot itself. */
function namedIn(target: string): string | null | undefined {
  const named = target
    .replace(NAME_END, '')
    .replace(/^please /iu, '')
    .trim()
    .slice(0, 200)
    .trim();
  if (NOT_A_PERSON.test(named)) return undefined;
  return named === '' || GENERIC_PERSON.test(named) ? null : named;
}

/** Rule 1: whether the message asks for a person, and whom. */
function handoffOf(text: string): { requestedAgent: string | null } | null {
  for (const pattern of HANDOFF) {
    const match = pattern.exec(text);
    if (!match) continue;
    if (match[1] === undefined) return { requestedAgent: null };
    const requestedAgent = namedIn(match[1]);
    if (requestedAgent !== undefined) return { requestedAgent };
  }
  return null;
}

const round2 = (value: number) => Math.round(value * 100) / 100;

export function classifyIntent(message: string): Classification {
  const text = message.normalize('NFC').replace(/[’‘]/g, "'").replace(/\s+/g, ' ').trim();
  const handoff = handoffOf(text);
  if (handoff)
    return { intent: 'human_handoff', confidence: 0.9, asksForPerson: true, requestedAgent: handoff.requestedAgent };

  const words =
    text
      .replace(THANKS_FOR, ' ')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  if (words.length > 0 && words.length <= 6 && words.every((word) => GREETING_WORDS.has(word))) {
    return { intent: 'greeting', confidence: 0.9, asksForPerson: false, requestedAgent: null };
  }

  // PRIORITY order plus a stable sort: equal scores keep the earlier intent first (rule 4).
  const scoreOf = (intent: ScoredIntent) =>
    PATTERNS[intent].reduce((sum, [pattern, weight]) => sum + (pattern.test(text) ? weight : 0), 0);
  const ranked = PRIORITY.map((intent) => ({ intent, score: scoreOf(intent) }))
    .filter((entry) => entry.score > 0)
    .sort((a, b) => b.score - a.score);
  const [best, second] = ranked;
  if (!best) return { intent: 'other', confidence: 0.3, asksForPerson: false, requestedAgent: null };
  const confidence = Math.min(0.95, 0.4 + 0.1 * best.score + 0.15 * (best.score - (second?.score ?? 0)));
  return { intent: best.intent, confidence: round2(confidence), asksForPerson: false, requestedAgent: null };
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The first of `keywords` (returned as configured, case kept) that the message contains, case-insensitively; null when
 * none does. Blank keywords are skipped; curly apostrophes count as straight ones.
 * - A keyword that starts with a letter or digit must start a word there ("fund" does not match "refund"); one that
 *   ends with a letter or digit must end a word there, or be followed by the ending s, es, ed or ing ("refund" matches
 *   "Refund!", "refunds", "refunded", but not "refundable"). A keyword ending in a single "e" also matches with "d" and
 *   with that "e" replaced by "ing" ("charge": "charged", "charging"; "fee" does not match "feed"). Doubled consonants are not ("ship" misses "shipped").
 * - A keyword of several words matches with any run of whitespace between them; the ending applies to the last word.
 * - Other characters (punctuation, symbols) match as they are: "c++" matches "C++17".
 */
export function matchKeyword(message: string, keywords: readonly string[]): string | null {
  const text = message.normalize('NFC').replace(/[’‘]/g, "'");
  for (const keyword of keywords) {
    const wanted = keyword.normalize('NFC').replace(/[’‘]/g, "'").trim();
    if (wanted === '') continue;
    let source = wanted.split(/\s+/).map(escapeRegExp).join('\\s+');
    if (/^[\p{L}\p{N}]/u.test(wanted)) source = `(?<![\\p{L}\\p{N}])${source}`;
    if (/\p{L}$/u.test(wanted))
      source = /[^e]e$/iu.test(wanted) ? `${source.slice(0, -1)}(?:e[sd]?|ing)` : `${source}(?:s|es|ed|ing)?`;
    if (/[\p{L}\p{N}]$/u.test(wanted)) source = `${source}(?![\\p{L}\\p{N}])`;
    if (new RegExp(source, 'iu').test(text)) return keyword;
  }
  return null;
}
