// A rule-based rewrite toward target sliders: how the sandbox models write in a voice, and the check's suggestions.
import { isImperative, measure } from './measure.ts';
import { capitalize, type Span, sentenceSpans, TOKEN, tokensOf } from './sentences.ts';
import { type SliderName, type Sliders, slidersFrom } from './sliders.ts';
import { HEDGE_WORDS, HUMOR_EMOJI, HUMOR_PHRASES, S_CONTRACTIBLE, SECOND_PERSON, WARM_WORDS, words } from './words.ts';

/** Word-for-word substitutions; keys are lower-case, "'" also matches "’", a space any whitespace. */
type Table = Record<string, string>;

const CONTRACT: Table = {
  'do not': "don't",
  'does not': "doesn't",
  'did not': "didn't",
  'is not': "isn't",
  'are not': "aren't",
  'was not': "wasn't",
  'were not': "weren't",
  cannot: "can't",
  'can not': "can't",
  'will not': "won't",
  'would not': "wouldn't",
  'should not': "shouldn't",
  'could not': "couldn't",
  'have not': "haven't",
  'has not': "hasn't",
  'we are': "we're",
  'you are': "you're",
  'they are': "they're",
  'it is': "it's",
  'that is': "that's",
  'there is': "there's",
  'we will': "we'll",
  'you will': "you'll",
  'it will': "it'll",
  'i am': "i'm",
  'i will': "i'll",
  'we have been': "we've been",
  'you have been': "you've been",
};
const EXPAND: Table = {
  "can't": 'cannot',
  "won't": 'will not',
  "shan't": 'shall not',
  "ain't": 'is not',
  "i'm": 'i am',
  "let's": 'let us',
  ...Object.fromEntries([...S_CONTRACTIBLE].filter((w) => w !== 'let').map((w) => [`${w}'s`, `${w} is`])),
};
/**
 * Plain word → elaborate word, read right to left to simplify. Only pairs that swap safely both ways: "before" →
 * "prior to" breaks "before you brew", "many" → "numerous" breaks "many of you", so those are in SIMPLIFY only.
 */
const ELABORATE: Table = {
  use: 'utilize',
  uses: 'utilizes',
  used: 'utilized',
  using: 'utilizing',
  start: 'commence',
  starts: 'commences',
  help: 'assist',
  helps: 'assists',
  buy: 'purchase',
  show: 'demonstrate',
  shows: 'demonstrates',
  get: 'obtain',
  gets: 'obtains',
  need: 'require',
  needs: 'requires',
  extra: 'additional',
  later: 'subsequently',
};
const SIMPLIFY: Table = {
  ...Object.fromEntries(Object.entries(ELABORATE).map(([plain, long]) => [long, plain])),
  utilise: 'use',
  utilises: 'uses',
  approximately: 'about',
  'in order to': 'to',
  facilitate: 'help',
  regarding: 'about',
  moreover: 'also',
  furthermore: 'also',
  'therefore,': 'so',
  'accordingly,': 'so',
  'consequently,': 'so',
  nevertheless: 'still',
  'however,': 'but',
  assistance: 'help',
  indicate: 'show',
  indicates: 'show',
  endeavour: 'try',
  endeavor: 'try',
  initiate: 'start',
  commence: 'start',
  terminate: 'end',
  modification: 'change',
  numerous: 'many',
  sufficient: 'enough',
  additional: 'more',
  components: 'parts',
  component: 'part',
  individuals: 'people',
  methodology: 'method',
  objective: 'goal',
  'prior to': 'before',
  'due to the fact that': 'because',
};
const CASUAL: Table = {
  // "Therefore," opens a sentence and becomes "So,"; "the Directors therefore consider" has no casual word-for-word swap.
  'therefore,': 'so',
  'accordingly,': 'so',
  'hence,': 'so',
  'thus,': 'so',
  furthermore: 'also',
  moreover: 'also',
  regarding: 'about',
  purchase: 'buy',
  assist: 'help',
  assistance: 'help',
  require: 'need',
  requires: 'need',
  obtain: 'get',
  approximately: 'about',
  herein: 'here',
};
const FORMAL: Table = {
  gonna: 'going to',
  wanna: 'want to',
  gotta: 'have to',
  yeah: 'yes',
  yep: 'yes',
  yup: 'yes',
  nope: 'no',
  hey: 'hello',
  stuff: 'things',
  folks: 'everyone',
  guys: 'everyone',
  quid: 'pounds',
  awesome: 'excellent',
  cool: 'good',
  kinda: 'somewhat',
  sorta: 'somewhat',
};
const WARMER: Table = {
  'the customer is': 'you are',
  'the user is': 'you are',
  'the customer has': 'you have',
  'the user has': 'you have',
  'our customers': 'you',
  customers: 'you',
  'the customer': 'you',
  clients: 'you',
  users: 'you',
  'the user': 'you',
  readers: 'you',
  "customers'": 'your',
  "customer's": 'your',
  "users'": 'your',
  "user's": 'your',
  'the organisation': 'your organisation',
  'the organization': 'your organization',
  'the company': 'your company',
  'the business': 'your business',
  'the team': 'your team',
};
/** Certainty for hedges. "may" is handled apart: capitalised, it is usually the month. */
const ASSERT: Table = {
  'would suggest': 'recommend',
  'is likely to': 'will',
  'are likely to': 'will',
  'might well': 'will',
  might: 'will',
  could: 'can',
  'could not': 'cannot',
  would: 'will',
  'would like': 'would like',
  'would love': 'would love',
  'seem to be': 'are',
  'seems to be': 'is',
  'not necessarily': 'not',
};
const HEDGE: Table = { will: 'might', must: 'should', always: 'usually', never: 'rarely', can: 'could' };
const CALMER: Table = {
  amazing: 'good',
  awesome: 'good',
  incredible: 'remarkable',
  fantastic: 'good',
  thrilled: 'pleased',
  excited: 'pleased',
  brilliant: 'good',
};
/** Removed outright (with the commas around them) when toning down hedges, filler or excitement. */
const HEDGES_REMOVED = [
  'i think',
  'we think',
  'i believe',
  'we believe',
  'i feel',
  'it seems that',
  'it is possible that',
  'it seems possible that',
  'perhaps',
  'maybe',
  'possibly',
  'somewhat',
  'arguably',
  'probably',
  'likely',
  'potentially',
  'presumably',
  'apparently',
  'tentatively',
  'admittedly',
  'relatively',
  'fairly',
  'seemingly',
  'to some extent',
];
const FILLER_REMOVED = [
  'really',
  'very',
  'just',
  'actually',
  'basically',
  'quite',
  'simply',
  'literally',
  'honestly',
  'of course',
];
const EXCITEMENT_REMOVED = ['absolutely', 'totally', 'super', 'wow', 'yay'];
const HUMOR_REMOVED = [
  'haha',
  'hahaha',
  'hehe',
  'lol',
  'lmao',
  'rofl',
  'jk',
  'just kidding',
  'pun intended',
  'no pun intended',
];

const FORMAL_OPENERS: Record<string, string> = {
  So: 'Therefore,',
  But: 'However,',
  Also: 'Furthermore,',
  Plus: 'In addition,',
};
const EMOJI_RUN =
  // biome-ignore lint/suspicious/noMisleadingCharacterClass: U+FE0F and U+200D are listed on their own and the class repeats, so a whole emoji sequence is consumed in order (the u flag is set).
  /(?<![ \t])[ \t]*\p{Extended_Pictographic}[\u{FE0F}\u{200D}\p{Extended_Pictographic}\p{Emoji_Modifier}]*/gu;

const NON_WORD = /^\W$/iu;
const LETTER = /^\p{L}$/u;
const PLEASE = /please\b/iuy;

/**
 * Whether a sentence opens with a word and a comma, or "please", after any non-word characters ("Well, …", "— Please
 * …"): what `/^\W*\p{L}+,|^\W*please\b/iu` tests, in linear time. The pattern would try every split of a run of letters
 * that are also non-word characters (é, ß: \W is not ASCII's \w) between its two parts, quadratic in such a run.
 * Here: a run of letters that starts within the leading non-word characters and ends at a comma.
 */
export function opensWithAddress(sentence: string): boolean {
  const chars = Array.from(sentence);
  let lead = 0;
  while (lead < chars.length && NON_WORD.test(chars[lead]!)) lead++;
  PLEASE.lastIndex = chars.slice(0, lead).join('').length;
  if (PLEASE.test(sentence)) return true;
  let runEnd = -1;
  for (let i = 0; i <= lead && i < chars.length; i++) {
    if (!LETTER.test(chars[i]!)) continue;
    if (runEnd <= i) for (runEnd = i; runEnd < chars.length && LETTER.test(chars[runEnd]!); ) runEnd++;
    if (chars[runEnd] === ',') return true;
  }
  return false;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const WORD_EDGE_BEFORE = "(?<![\\p{L}\\p{N}'’])";
const WORD_EDGE_AFTER = "(?![\\p{L}\\p{N}'’])";
const phrasePattern = (keys: string[]) =>
  keys
    .sort((a, b) => b.length - a.length || a.localeCompare(b))
    .map((k) => escapeRe(k).replace(/'/g, "['’]").replace(/ /g, '\\s+'))
    .join('|');

/** Replaces the table's words, keeping a capital first letter, ALL CAPS and the curly apostrophe of the original. */
function replaceTable(text: string, table: Table, lookahead = ''): string {
  const re = new RegExp(
    `${WORD_EDGE_BEFORE}(?:${phrasePattern(Object.keys(table))})${WORD_EDGE_AFTER}${lookahead}`,
    'giu',
  );
  return text.replace(re, (match) => {
    let out = table[match.toLowerCase().replace(/’/g, "'").replace(/\s+/g, ' ')] ?? match;
    if (match.includes('’')) out = out.replace(/'/g, '’');
    if (/\p{L}{2}/u.test(match) && match === match.toUpperCase()) return out.toUpperCase();
    return /^\p{Lu}/u.test(match) ? capitalize(out) : out;
  });
}

/** Removes words; ", perhaps, " (an aside) becomes " ", and the sentence start is re-capitalised later. */
function removeWords(text: string, list: string[]): string {
  const re = new RegExp(
    `(,[ \\t]*)?${WORD_EDGE_BEFORE}(?:${phrasePattern([...list])})${WORD_EDGE_AFTER}([ \\t]*,)?[ \\t]*`,
    'giu',
  );
  return text.replace(re, (_match, before?: string, after?: string) => (before && after ? ' ' : before ? ', ' : ''));
}

/** Applies fn to each sentence, keeping what lies between sentences (spaces, line breaks) as it is. */
function mapSentences(text: string, fn: (sentence: string, index: number, all: Span[]) => string): string {
  const spans = sentenceSpans(text);
  let out = '';
  let at = 0;
  spans.forEach((span, i) => {
    out += text.slice(at, span.start) + fn(span.text, i, spans);
    at = span.end;
  });
  return out + text.slice(at);
}

/** Words that open a clause with its own subject: splitting "X, and we ship" is safe, "X, and processes the payload" is not. */
const SUBJECT_START = words(
  'i we you he she it they there this that these those the a an our your their its my his her each every some all no one',
);

/** Splits a long sentence at ", and" / ", but" / ";" / " — " (not ", so that") where both parts keep six words and the second its subject. */
function splitLong(sentence: string): string {
  if (tokensOf(sentence).length <= 16) return sentence;
  let from = 0; // where the current part starts
  return sentence.replace(
    /(,\s+(and|but)\s+|;\s+|(?<!\s)\s+[—–]\s+)/gi,
    (sep, _sep, conj: string | undefined, offset: number) => {
      const rest = sentence.slice(offset + sep.length);
      const subject = sep.trim() === ';' || SUBJECT_START.has(tokensOf(rest)[0] ?? '') || /^\p{Lu}/u.test(rest);
      if (!subject || tokensOf(sentence.slice(from, offset)).length < 6 || tokensOf(rest).length < 6) return sep;
      from = offset + sep.length;
      return conj && conj.toLowerCase() !== 'and' ? `. ${capitalize(conj.toLowerCase())} ` : '. ';
    },
  );
}

/** Where a sentence's first word starts, past list markers, quotes and brackets. */
const LEAD = /^((?:[ \t]*(?:[-*•▪‣◦]|\d{1,3}[.)])[ \t]+)?["'“‘(]*)(\p{L}+)/u;

export function rewriteToward(text: string, target: Sliders): string {
  const measured = slidersFrom(measure(text));
  // Only sliders more than 10 points off are acted on: a rewrite should not churn text that is already close.
  const up = (s: SliderName) => target[s] - measured[s] > 10;
  const down = (s: SliderName) => measured[s] - target[s] > 10;
  const sentenceCount = sentenceSpans(text).length;
  // Words the author starts a sentence with in lower case (a brand name like "iPhone", "npm") stay that way.
  const lowerStarts = new Set(sentenceSpans(text).flatMap((s) => LEAD.exec(s.text)?.[2]?.match(/^\p{Ll}+$/u) ?? []));
  // A sentence's first word loses its capital after "Perhaps" or "and", unless it is "I", an acronym or a name: a
  // capitalised word seen inside a sentence ("Sam"), or followed by another ("Harbour Lights").
  const names = new Set(
    sentenceSpans(text).flatMap((s) => (s.text.match(TOKEN) ?? []).slice(1).filter((t) => /^\p{Lu}/u.test(t))),
  );
  const lowerFirst = (sentence: string) =>
    sentence.replace(LEAD, (all, lead: string, word: string, offset: number, whole: string) =>
      /^\p{Lu}\p{Ll}*$/u.test(word) &&
      word !== 'I' &&
      !names.has(word) &&
      !/^\s+\p{Lu}/u.test(whole.slice(offset + all.length))
        ? lead + word.toLowerCase()
        : all,
    );
  // "Perhaps" fits a statement of some length that opens with a word rather than an interjection ("Well,", "Please").
  const hedgeable = (s: string, i: number) =>
    (isImperative(s) || i % 2 === 0) &&
    tokensOf(s).length >= 4 &&
    !/\?\s*$/.test(s) &&
    !opensWithAddress(s) &&
    !tokensOf(s).some((t) => HEDGE_WORDS.has(t));
  let out = text;

  if (down('humor')) out = removeWords(out.replace(HUMOR_EMOJI, '').replace(HUMOR_PHRASES, ''), HUMOR_REMOVED);
  if (up('assertiveness')) out = removeWords(replaceTable(out, ASSERT).replace(/\bmay\b/g, 'will'), HEDGES_REMOVED);
  if (down('assertiveness')) {
    // Fewer certainties, and "Perhaps" before every instruction and every other statement.
    out = replaceTable(
      mapSentences(out, (s, i) => (hedgeable(s, i) ? `Perhaps ${lowerFirst(s)}` : s)),
      HEDGE,
    );
  }
  if (down('complexity')) out = replaceTable(out, SIMPLIFY);
  if (up('complexity')) out = replaceTable(out, ELABORATE);
  if (down('formality')) out = replaceTable(replaceTable(out, CASUAL), CONTRACT, '(?=\\s+[\\p{L}])');
  if (up('formality')) {
    out = replaceTable(replaceTable(out, EXPAND), FORMAL)
      .replace(/(\p{L})n['’]t\b/gu, '$1 not')
      .replace(
        /(\p{L})['’](re|ve|ll|d|m)\b/gu,
        (_m, l: string, c: string) => `${l} ${{ re: 'are', ve: 'have', ll: 'will', d: 'would', m: 'am' }[c]}`,
      )
      .replace(/!+/g, '.')
      .replace(EMOJI_RUN, '');
    // Ceremonious connectives for chatty ones at the start of a sentence.
    out = mapSentences(out, (s) => s.replace(/^(So|But|Also|Plus),?\s+/, (_m, w: string) => `${FORMAL_OPENERS[w]} `));
  }
  if (up('warmth')) {
    out = replaceTable(out, WARMER);
    const first = sentenceSpans(out)[0]?.text ?? '';
    // An opener greets a whole text; a single sentence (a check suggestion) is a passage, not a text.
    if (sentenceCount >= 3 && !tokensOf(first).some((t) => SECOND_PERSON.has(t) || WARM_WORDS.has(t))) {
      // As short or as long as the voice's sentences, so that it does not move conciseness the wrong way.
      out = `${target.conciseness >= 50 ? 'Thank you for being with us.' : 'Thank you for being with us, and for the trust that you place in our work.'} ${out}`;
    }
  }
  if (down('warmth')) out = replaceTable(out, { your: 'the', 'you are': 'customers are' });
  if (up('conciseness') || (down('complexity') && !down('conciseness'))) {
    out = replaceTable(removeWords(out.replace(/(?<![ \t])[ \t]*\([^()]*\)/g, ''), FILLER_REMOVED), {
      'in order to': 'to',
      'due to the fact that': 'because',
      'at this point in time': 'now',
    });
    out = mapSentences(out, splitLong);
  }
  if ((up('complexity') || down('conciseness')) && !up('conciseness')) {
    // Two short statements in a row on one line become one: "We roast on Tuesdays. We ship the same day." → "…, and we ship…".
    const current = out;
    const short = (t: string) => /[^.]\.$/.test(t) && tokensOf(t).length <= 12;
    const joined = (all: Span[], i: number) =>
      i % 2 === 0 &&
      all[i + 1] !== undefined &&
      short(all[i]!.text) &&
      short(all[i + 1]!.text) &&
      /^[ \t]+$/.test(current.slice(all[i]!.end, all[i + 1]!.start));
    out = mapSentences(current, (s, i, all) =>
      joined(all, i) ? `${s.slice(0, -1)},` : i % 2 === 1 && joined(all, i - 1) ? `and ${lowerFirst(s)}` : s,
    );
  }
  if (up('enthusiasm'))
    out = mapSentences(out, (s, i) => (i % 2 === 0 ? s.replace(/(?<!\.)\.(["'”’)\]]*)$/, '!$1') : s));
  if (down('enthusiasm')) {
    out = removeWords(replaceTable(out.replace(/!+/g, '.'), CALMER), EXCITEMENT_REMOVED).replace(EMOJI_RUN, '');
  }
  if (up('humor'))
    out = mapSentences(out, (s, i, all) =>
      i % 5 === 1 || all.length === 1
        ? s.replace(/(?:(?<![.!?)])|(?<=\)[.!?]))([.!?]+["'”’]*)$/, ' (yes, really)$1')
        : s,
    );

  // Tidy what the rules left: doubled spaces, spaces before punctuation, empty brackets, doubled commas.
  out = out
    .replace(/\(\s*\)/g, '')
    .replace(/[ \t]{2,}/g, ' ')
    .replace(/(?<![ \t])[ \t]+([,.;:!?])/g, '$1')
    .replace(/,(?=\s*[,.;:!?])/g, '')
    .replace(/(?<![ \t])[ \t]+$/gm, '');
  // Sentence starts get their capital back (after "Perhaps" was removed, say); a first word the author writes in lower case keeps it.
  out = mapSentences(out, (s) =>
    s
      .replace(/^[,;:]\s*/, '')
      .replace(LEAD, (all, lead: string, word: string) =>
        /^\p{Ll}+$/u.test(word) && !lowerStarts.has(word) ? lead + capitalize(word) : all,
      ),
  );
  return out;
}

/** Plain words for stiff ones, used by `clarify` only: each swap keeps the meaning in any sentence it appears in. */
const PLAIN: Table = {
  ...SIMPLIFY,
  every: 'each',
  extra: 'more',
  purchase: 'buy',
  purchases: 'buys',
  receive: 'get',
  receives: 'gets',
  provide: 'give',
  provides: 'gives',
  require: 'need',
  requires: 'needs',
  assist: 'help',
  assists: 'helps',
  obtain: 'get',
  obtains: 'gets',
  currently: 'now',
  immediately: 'at once',
  demonstrate: 'show',
  demonstrates: 'show',
  'a number of': 'some',
  'in addition,': 'also,',
  'as well as': 'and',
  'at the moment': 'now',
};
const EXPANDED: Record<string, string> = { re: 'are', ve: 'have', ll: 'will', d: 'would', m: 'am' };

/**
 * The sandbox's rewrite of a passage for clarity: filler words removed, wordy phrases and stiff words made plain
 * ("utilize" → "use", "every" → "each"), contractions ("do not" → "don't"), and long sentences split at ", and", ", but",
 * ";" or a dash. `formal` keeps the words and writes contractions out instead ("don't" → "do not").
 */
export function clarify(text: string, formal = false): string {
  const lowerStarts = new Set(sentenceSpans(text).flatMap((s) => LEAD.exec(s.text)?.[2]?.match(/^\p{Ll}+$/u) ?? []));
  let out = removeWords(text, FILLER_REMOVED);
  out = replaceTable(out, { 'in order to': 'to', 'due to the fact that': 'because', 'at this point in time': 'now' });
  out = formal
    ? replaceTable(out, EXPAND)
        .replace(/(\p{L})n['’]t\b/gu, '$1 not')
        .replace(/(\p{L})['’](re|ve|ll|d|m)\b/gu, (_m, l: string, c: string) => `${l} ${EXPANDED[c]}`)
    : replaceTable(replaceTable(out, PLAIN), CONTRACT, '(?=\\s+[\\p{L}])');
  out = mapSentences(out, splitLong)
    .replace(/[ \t]{2,}/g, ' ')
    .replace(/(?<![ \t])[ \t]+([,.;:!?])/g, '$1')
    .replace(/,(?=\s*[,.;:!?])/g, '');
  return mapSentences(out, (s) =>
    s
      .replace(/^[,;:]\s*/, '')
      .replace(LEAD, (all, lead: string, word: string) =>
        /^\p{Ll}+$/u.test(word) && !lowerStarts.has(word) ? lead + capitalize(word) : all,
      ),
  );
}
