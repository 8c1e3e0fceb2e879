// Writing style, for brand voices and the sandbox models: what a ~300-word sample measures (sentence lengths, pronouns,
// contractions, hedges…), the seven sliders those measurements map to, the traits and summary shown to users, whether
// a sample is usable for training, a rule-based rewrite toward target sliders (how the sandbox models write in a
// voice), and the conformance check of a text. In the engine because the sandbox writes with it; the voices feature
// measures with it.
// Pure and deterministic on purpose: training, checking and their tests must give the same answer for the same text,
// with no model, no I/O and no randomness. Heuristics are English-only (other languages fail training).

export const SLIDER_NAMES = ['formality', 'warmth', 'humor', 'enthusiasm', 'conciseness', 'complexity', 'assertiveness'] as const;
export type SliderName = (typeof SLIDER_NAMES)[number];
export type Sliders = Record<SliderName, number>;

/** Everything measured in a text. Rates are per 100 lexical words (letter/digit runs) or per sentence. */
export interface Measurements {
  /** Runs of non-whitespace, as counted for the 200..600-word sample bounds. */
  word_count: number;
  sentence_count: number;
  mean_sentence_words: number;
  /** Population standard deviation of the sentence lengths: sentence variety. */
  sentence_words_stdev: number;
  /** Flesch–Kincaid grade level, with a vowel-group syllable heuristic; 0 at least. */
  reading_grade: number;
  /** Share of words of 3 syllables or more. */
  long_word_ratio: number;
  /** Distinct words / words (lower-cased). Length-sensitive, fine within the 200..600-word sample bounds. */
  type_token_ratio: number;
  contractions_per_100_words: number;
  first_person_singular_per_100: number;
  first_person_plural_per_100: number;
  second_person_per_100: number;
  /** Share of sentences ending in "!" (and "?" below). */
  exclamations_per_sentence: number;
  questions_per_sentence: number;
  emoji_per_100_words: number;
  semicolons_and_dashes_per_sentence: number;
  /** Parenthesised asides per sentence. */
  parentheticals_per_sentence: number;
  hedges_per_100_words: number;
  /** Share of sentences starting with a base verb (or "Please"/"Don't" + verb). */
  imperatives_ratio: number;
  /** See HUMOR_* below: laughter words, joke/pun words, playful interjections, laughing emoji, whole-sentence asides. */
  humor_markers_per_100: number;
  /** Warm, personal words (thank, grateful, love, welcome, together…). */
  warm_words_per_100: number;
  /** Excited words (amazing, love, wow, can't wait…). */
  excitement_words_per_100: number;
  /** Ceremonious connectives and vocabulary (therefore, accordingly, herein, shall…). */
  formal_markers_per_100: number;
  /** Slang and chatty words (hey, yep, gonna, stuff…). */
  slang_per_100: number;
  /** Technical terms and code-like tokens (snake_case, camelCase, file.ext, backticked code). */
  technical_terms_per_100: number;
  /** Words of certainty (will, must, always, never, guarantee…). */
  confident_markers_per_100: number;
  /** Share of non-empty lines that are bullet or numbered list items. */
  list_item_ratio: number;
  /** Share of sentences that repeat an earlier sentence exactly. */
  repeated_sentence_ratio: number;
  /** Recurring 2–3-word phrases without stopwords, seen at least twice, most frequent first, up to 5. */
  signature_phrases: string[];
  /** Two-letter language detected by stopword frequency (en, de, fr, es, it, nl, pt), or null when unsure. */
  language: string | null;
}

const words = (list: string) => new Set(list.trim().split(/\s+/));

const STOPWORDS = words(`a about above after again against all almost also am an and any are as at be because been before being below
  between both but by can could did do does doing down during each either else even ever every few for from further get got had has have
  having he her here hers him his how i if in into is it its just least less let like made make many may me might more most much must my
  never no nor not now of off on once one only or other our ours out over own per quite rather really same shall she should since so some
  still such than that the their them then there these they this those though through thus to too under until up upon us very was we
  well were what when where whether which while who whom whose why will with within without would yet you your yours`);

const LANGUAGE_STOPWORDS: Record<string, Set<string>> = {
  en: words('the and of to a in is it that for you with on as are this be was have not but we they at by or from our your will can an which their has would there what all if'),
  de: words('der die das und ist nicht ein eine zu den von mit sich des auf für im dem auch es als wir sie ich werden wird sind oder bei nach aus einen einer noch wie über zum zur hat haben kann uns unsere ihre dass'),
  fr: words('le la les de des et est un une du en que qui dans pour pas sur au avec ce il elle nous vous sont par plus ne se ou mais aux cette leur été être'),
  es: words('el la los las de del y que en un una es por con para no se su al lo como más pero sus le ya o este esta son está muy también nuestro hay'),
  it: words('il lo la i gli le di del della e che è un una per non con sono da in al come più ma anche questo questa nel alla si ci noi siamo hanno essere'),
  nl: words('de het een en van is dat niet op te in voor met zijn er die ook als aan bij om maar wij we ze hij wordt worden kan naar dan nog heeft onze jullie u uw dit deze'),
  pt: words('o a os as de do da dos das e que em um uma para com não no na por se mais como mas ao é são ou seu sua nós você foi muito também está isso este esta'),
};

const FIRST_SINGULAR = words("i me my mine myself i'm i've i'd i'll");
const FIRST_PLURAL = words("we us our ours ourselves we're we've we'd we'll let's");
const SECOND_PERSON = words("you your yours yourself yourselves you're you've you'd you'll y'all");
/** "'s" is a contraction only after these words; elsewhere it is usually a possessive. */
const S_CONTRACTIBLE = words('it that there here what who where how he she let');
/** Single-word hedges; the phrases below add hedges made of words that are not hedges alone. */
const HEDGE_WORDS = words(`maybe perhaps might could may somewhat possibly arguably probably likely seemingly seem seems seemed appear appears
  apparently presumably potentially relatively fairly tentatively admittedly suggest suggests typically generally perchance`);
const HEDGE_PHRASES = /\b(?:i|we) (?:think|believe|feel|guess|suppose)\b|\bsort of\b|\bkind of\b|\bto some extent\b|\bin some cases\b|\bmore or less\b|\bit is possible\b/gi;
const CONFIDENT = words('will must always never guarantee guaranteed certainly definitely clearly every exactly');
/** Base verbs that open an instruction. Small on purpose: nouns that look like verbs ("Change is…") are rare openers. */
const IMPERATIVE_VERBS = words(`add use run set install open click check make take try call create configure ensure remember keep start stop read
  send choose pick grab come join visit see note avoid do don't never enable disable define pass return store write build deploy follow
  contact enter select replace remove delete update verify compare limit record skip authenticate subscribe pause swap trust hit taste
  brew grind pour stir enjoy give tell ask let's be book order sign find look get go bring share download upload copy paste`);
const HUMOR_WORDS = words('haha hahaha hehe lol lmao rofl jk kidding joke jokes joking pun puns punny oops whoops yikes voilà wink');
const HUMOR_PHRASES = /\(yes,? really\)|\bplot twist\b|\bspoiler alert\b|\(we checked\)|\([A-Z][^()]{2,80}[.!?]\)/g;
const HUMOR_EMOJI = /[😄😂🤣😆😜😉😅🙃😝😛🤪😁😹]/gu;
const WARM_WORDS = words(`thank thanks thankful grateful gratitude glad happy love loved lovely care caring cares together welcome hope hopes
  sorry understand feel feels family families friend friends heart hearts kindness appreciate appreciated share warm warmly warmth dear
  community comfort safe`);
const EXCITEMENT_WORDS = words('amazing awesome incredible fantastic excited exciting thrilled wow absolutely totally super brilliant wonderful yay huge love');
const FORMAL_MARKERS = words(`hereby herein thereof pursuant therefore thus furthermore moreover accordingly consequently hence shall whom whereas
  notwithstanding respectively regarding nevertheless henceforth aforementioned kindly esteemed undersigned obligations prudent sincere`);
const SLANG = words("hey gonna wanna gotta yeah yep yup nope cool awesome stuff kinda sorta okay ok guys folks tbh btw omg nah huh whoa legit vibe vibes chill dude ya quid");
const TECHNICAL = words(`api apis endpoint endpoints request requests response server token tokens header headers parameter parameters
  configuration config json http https url cache database query schema function variable module dependency deploy deployment latency
  timeout retry retries authentication authorization payload webhook webhooks sdk cli integer string boolean array async asynchronously
  runtime environment instance cluster repository protocol interface idempotent pagination cursor cursors encryption certificate tls
  hash digest hexadecimal credential backoff algorithm`);

// ---------- Tokens and sentences ----------

const TOKEN = /[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu;
const EMOJI = /\p{Extended_Pictographic}/gu;
const NOT_EMOJI = new Set(['©', '®', '™']);
const BULLET_LINE = /^[ \t]*(?:[-*•▪‣◦]|\d{1,3}[.)])[ \t]+/;
/** A sentence ends at . ! ? … (plus closing quotes and trailing emoji) before whitespace, at a blank line, or before a list item. */
const BOUNDARY = /[.!?…]+["'”’)\]]*(?:[ \t]*[\p{Extended_Pictographic}\u{FE0F}\u{200D}\p{Emoji_Modifier}]+)*(?=\s|$)|\n[ \t]*\n\s*|\n(?=[ \t]*(?:[-*•▪‣◦]|\d{1,3}[.)])[ \t])/gu;
const ABBREVIATION = /(?:^|[\s(])(?:e\.g|i\.e|etc|vs|mr|mrs|ms|dr|prof|st|approx|cf|inc|ltd)$/i;

/** A sentence with UTF-16 offsets into its text. */
export interface Span {
  start: number;
  end: number;
  text: string;
}

function tokensOf(text: string): string[] {
  return (text.match(TOKEN) ?? []).map((t) => t.toLowerCase().replace(/’/g, "'"));
}

/** The sentences of a text, with their offsets (abbreviations such as "e.g." and "Dr." do not end one). */
export function sentenceSpans(text: string): Span[] {
  const spans: Span[] = [];
  const push = (from: number, to: number) => {
    while (from < to && /\s/.test(text[from]!)) from++;
    while (to > from && /\s/.test(text[to - 1]!)) to--;
    if (to > from) spans.push({ start: from, end: to, text: text.slice(from, to) });
  };
  let from = 0;
  for (const m of text.matchAll(BOUNDARY)) {
    const punctuation = !m[0].startsWith('\n');
    // "e.g. this" and "Dr. Smith" do not end a sentence.
    if (m[0] === '.' && ABBREVIATION.test(text.slice(from, m.index))) continue;
    push(from, punctuation ? m.index + m[0].length : m.index);
    from = m.index + m[0].length;
  }
  push(from, text.length);
  return spans;
}

/** Vowel groups, minus a silent final e; at least one. Good enough for Flesch–Kincaid on everyday English. */
function syllables(word: string): number {
  const w = word.toLowerCase().replace(/[^a-z]/g, '');
  if (w.length <= 3) return 1;
  const trimmed = w.replace(/(?:[^laeiouy]es|[^laeiouy]ed|[^laeiouy]e)$/, (s) => s[0]!).replace(/^y/, '');
  return Math.max(1, (trimmed.match(/[aeiouy]+/g) ?? []).length);
}

const round = (value: number, digits = 3) => Number(value.toFixed(digits));

export function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function isContraction(token: string): boolean {
  if (/n't$/.test(token) || /'(?:re|ve|ll|d|m)$/.test(token)) return true;
  const s = /^(\p{L}+)'s$/u.exec(token);
  return s !== null && S_CONTRACTIBLE.has(s[1]!);
}

function isImperative(sentence: string): boolean {
  if (/\?\s*$/.test(sentence)) return false;
  const [first = '', second = ''] = tokensOf(sentence.replace(BULLET_LINE, '').replace(/^["'“‘(]+/, '')).slice(0, 2);
  if (first === 'please' || (first === 'do' && second === 'not')) return true;
  return IMPERATIVE_VERBS.has(first);
}

function detectLanguage(tokens: string[]): string | null {
  if (tokens.length < 20) return null;
  const scores = Object.entries(LANGUAGE_STOPWORDS)
    .map(([lang, list]) => [lang, tokens.filter((t) => list.has(t)).length / tokens.length] as const)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const [best, second] = [scores[0]!, scores[1]!];
  // Sure only when stopwords are common (prose, not a keyword list) and one language clearly leads.
  return best[1] >= 0.15 && best[1] >= second[1] * 1.25 ? best[0] : null;
}

function signaturePhrases(sentences: Span[]): string[] {
  // Counted in lower case, shown as written inside a sentence ("Harbour Lights"), where a capital is not just the sentence's.
  const counts = new Map<string, { count: number; first: number; n: number; shown: string }>();
  let position = 0;
  for (const sentence of sentences) {
    const raw = (sentence.text.match(TOKEN) ?? []).map((t) => t.replace(/’/g, "'"));
    const tokens = raw.map((t) => t.toLowerCase());
    for (let i = 0; i < tokens.length; i++, position++) {
      for (const n of [2, 3]) {
        const gram = tokens.slice(i, i + n);
        if (gram.length < n || gram.some((t) => STOPWORDS.has(t) || t.length < 2 || /['\d]/.test(t))) continue;
        const key = gram.join(' ');
        const seen = counts.get(key) ?? { count: 0, first: position, n, shown: key };
        counts.set(key, { ...seen, count: seen.count + 1, shown: i > 0 && seen.shown === key ? raw.slice(i, i + n).join(' ') : seen.shown });
      }
    }
  }
  const ranked = [...counts.values()].filter((v) => v.count >= 2).sort((a, b) => b.count - a.count || b.n - a.n || a.first - b.first);
  const chosen: string[] = [];
  for (const { shown } of ranked) {
    // "small batches" and "roast small batches" (or "fresh coffee beans" and "coffee beans roasted") are one signature.
    const parts = shown.toLowerCase().split(' ');
    const pairs = parts.slice(1).map((word, i) => ` ${parts[i]} ${word} `);
    if (chosen.some((c) => pairs.some((pair) => ` ${c.toLowerCase()} `.includes(pair)))) continue;
    if (chosen.push(shown) === 5) break;
  }
  return chosen;
}

export function measure(text: string): Measurements {
  const sentences = sentenceSpans(text);
  const tokens = tokensOf(text);
  const n = tokens.length;
  const s = sentences.length;
  const per100 = (count: number) => (n ? round((count * 100) / n) : 0);
  const perSentence = (count: number) => (s ? round(count / s) : 0);
  const countIn = (set: Set<string>) => tokens.filter((t) => set.has(t)).length;
  const lengths = sentences.map((sentence) => tokensOf(sentence.text).length);
  const mean = s ? lengths.reduce((a, b) => a + b, 0) / s : 0;
  const variance = s ? lengths.reduce((a, b) => a + (b - mean) ** 2, 0) / s : 0;
  const syllableCounts = tokens.map(syllables);
  const totalSyllables = syllableCounts.reduce((a, b) => a + b, 0);
  const grade = n ? 0.39 * (n / Math.max(1, s)) + 11.8 * (totalSyllables / n) - 15.59 : 0;
  const ends = sentences.map((sentence) => sentence.text.replace(/[\s\p{Extended_Pictographic}\u{FE0F}\u{200D}\p{Emoji_Modifier}"'”’)\]]+$/u, ''));
  const emoji = (text.match(EMOJI) ?? []).filter((e) => !NOT_EMOJI.has(e)).length;
  const codeLike = text.split(/\s+/).filter((w) => /`[^`]+`|_\w|[a-z][A-Z]|[a-z]{2,}\.[a-z]{2,}|\w\/\w/.test(w)).length;
  const humor =
    tokens.filter((t) => HUMOR_WORDS.has(t) || /^(?:ha){2,}h?$|^(?:he){2,}$/.test(t)).length +
    (text.match(HUMOR_PHRASES) ?? []).length +
    (text.match(HUMOR_EMOJI) ?? []).length;
  const lines = text.split('\n').filter((line) => line.trim());
  const normalised = sentences.map((sentence) => tokensOf(sentence.text).join(' '));
  return {
    word_count: countWords(text),
    sentence_count: s,
    mean_sentence_words: round(mean, 2),
    sentence_words_stdev: round(Math.sqrt(variance), 2),
    reading_grade: round(Math.max(0, grade), 2),
    long_word_ratio: n ? round(syllableCounts.filter((c) => c >= 3).length / n) : 0,
    type_token_ratio: n ? round(new Set(tokens).size / n) : 0,
    contractions_per_100_words: per100(tokens.filter(isContraction).length),
    first_person_singular_per_100: per100(countIn(FIRST_SINGULAR)),
    first_person_plural_per_100: per100(countIn(FIRST_PLURAL)),
    second_person_per_100: per100(countIn(SECOND_PERSON)),
    exclamations_per_sentence: perSentence(ends.filter((e) => e.endsWith('!')).length),
    questions_per_sentence: perSentence(ends.filter((e) => /\?!?$/.test(e)).length),
    emoji_per_100_words: per100(emoji),
    semicolons_and_dashes_per_sentence: perSentence((text.match(/;|—|–|(?<=\S)[ \t]+-{1,2}[ \t]+(?=\S)/g) ?? []).length),
    parentheticals_per_sentence: perSentence((text.match(/\([^()]*\)/g) ?? []).length),
    hedges_per_100_words: per100(countIn(HEDGE_WORDS) + (text.match(HEDGE_PHRASES) ?? []).length),
    imperatives_ratio: perSentence(sentences.filter((sentence) => isImperative(sentence.text)).length),
    humor_markers_per_100: per100(humor),
    warm_words_per_100: per100(countIn(WARM_WORDS)),
    excitement_words_per_100: per100(countIn(EXCITEMENT_WORDS) + (text.match(/\bcan['’]t wait\b/gi) ?? []).length),
    formal_markers_per_100: per100(countIn(FORMAL_MARKERS)),
    slang_per_100: per100(countIn(SLANG)),
    technical_terms_per_100: per100(countIn(TECHNICAL) + codeLike),
    confident_markers_per_100: per100(countIn(CONFIDENT)),
    list_item_ratio: lines.length ? round(lines.filter((line) => BULLET_LINE.test(line)).length / lines.length) : 0,
    repeated_sentence_ratio: perSentence(normalised.filter((t, i) => t && normalised.indexOf(t) < i).length),
    signature_phrases: signaturePhrases(sentences),
    language: detectLanguage(tokens),
  };
}

// ---------- Sliders ----------

const clamp = (value: number) => Math.min(100, Math.max(0, Math.round(value)));

/**
 * Each slider is a clamped linear sum of measurements: every term is monotonic in its measurement, so more of a
 * trait never moves a slider the other way. Coefficients were set so that typical copy spans the scale (see the
 * samples in test/voices/samples).
 */
export function slidersFrom(m: Measurements): Sliders {
  if (m.word_count === 0) return { formality: 50, warmth: 0, humor: 0, enthusiasm: 0, conciseness: 50, complexity: 0, assertiveness: 50 };
  return {
    // Contractions, slang, exclamations and emoji make it casual; ceremonious connectives, long sentences and long words formal.
    formality: clamp(
      45 - 6 * m.contractions_per_100_words - 6 * m.slang_per_100 - 25 * m.exclamations_per_sentence - 4 * m.emoji_per_100_words +
        8 * m.formal_markers_per_100 + 0.8 * (m.mean_sentence_words - 12) + 60 * m.long_word_ratio,
    ),
    // Talking to "you" and as "we"/"I", and warm words (thank, grateful, love, welcome…).
    warmth: clamp(5 + 3 * m.second_person_per_100 + 2 * m.first_person_plural_per_100 + 1.5 * m.first_person_singular_per_100 + 7 * m.warm_words_per_100),
    // Humor markers (laughter, jokes, playful asides, laughing emoji), helped a little by slang and exclamations.
    humor: clamp(30 * m.humor_markers_per_100 + 4 * m.slang_per_100 + 15 * m.exclamations_per_sentence + 3 * m.emoji_per_100_words),
    // Exclamation marks first, then excited words and emoji.
    enthusiasm: clamp(10 + 110 * m.exclamations_per_sentence + 6 * m.excitement_words_per_100 + 6 * m.emoji_per_100_words),
    // Short sentences are concise; asides (parentheses, semicolons, dashes) make it expansive.
    conciseness: clamp(100 - 3 * (m.mean_sentence_words - 6) - 15 * m.parentheticals_per_sentence - 15 * m.semicolons_and_dashes_per_sentence),
    // Reading grade (sentence length × syllables), long words and technical terms.
    complexity: clamp(-10 + 3 * m.reading_grade + 60 * m.long_word_ratio + 4 * m.technical_terms_per_100),
    // Hedges pull it down; imperatives and words of certainty push it up.
    assertiveness: clamp(60 - 7 * m.hedges_per_100_words + 50 * m.imperatives_ratio + 3 * m.confident_markers_per_100 - 15 * m.questions_per_sentence),
  };
}

// ---------- Traits and summary ----------

/** Short traits, strongest first: each candidate's strength is how far its measurement is past the trait's threshold. */
export function traitsFrom(m: Measurements, sliders: Sliders): string[] {
  const found: Array<{ strength: number; trait: string }> = [];
  const add = (value: number, threshold: number, trait: string) => {
    if (value >= threshold) found.push({ strength: value / threshold, trait });
  };
  const pronouns = m.second_person_per_100 + m.first_person_plural_per_100 + m.first_person_singular_per_100;
  add(m.second_person_per_100, 2, 'second person');
  add(m.first_person_plural_per_100, 2, 'speaks as "we"');
  add(m.first_person_singular_per_100, 1.5, 'first person ("I")');
  if (m.word_count >= 50 && pronouns < 0.5) found.push({ strength: 2, trait: 'third person' });
  add(m.contractions_per_100_words, 1.5, 'uses contractions');
  if (m.word_count >= 100 && m.contractions_per_100_words === 0) found.push({ strength: 1.5, trait: 'no contractions' });
  if (m.sentence_count) add(12 / Math.max(1, m.mean_sentence_words), 1, 'short sentences');
  add(m.mean_sentence_words, 22, 'long sentences');
  if (m.mean_sentence_words) add(m.sentence_words_stdev / m.mean_sentence_words, 0.6, 'varied sentence length');
  add(m.exclamations_per_sentence, 0.1, 'exclamatory');
  add(m.questions_per_sentence, 0.1, 'asks questions');
  add(m.emoji_per_100_words, 0.3, 'uses emoji');
  add(m.hedges_per_100_words, 2, 'hedged');
  add(m.imperatives_ratio, 0.2, 'imperative instructions');
  add(m.technical_terms_per_100, 2, 'technical vocabulary');
  if (m.word_count >= 20) add(0.08 / Math.max(0.02, m.long_word_ratio), 1, 'plain words');
  add(m.humor_markers_per_100, 0.3, 'playful asides and jokes');
  add(m.semicolons_and_dashes_per_sentence + m.parentheticals_per_sentence, 0.3, 'asides, semicolons and dashes');
  add(m.warm_words_per_100, 1.5, 'warm, appreciative words');
  add(m.formal_markers_per_100, 0.8, 'formal connectives');
  add(m.slang_per_100, 0.7, 'chatty slang');
  add(sliders.formality, 75, 'formal register');
  add(100 - sliders.formality, 75, 'conversational');
  add(sliders.enthusiasm, 60, 'energetic');
  add(sliders.assertiveness, 80, 'direct and confident');
  m.signature_phrases.forEach((phrase, i) => found.push({ strength: 1.4 - i * 0.05, trait: `signature phrase "${phrase.slice(0, 40)}"` }));
  // A stable sort keeps the order above among equals, so the result is deterministic.
  return found.sort((a, b) => b.strength - a.strength).slice(0, 12).map((f) => f.trait.slice(0, 60));
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
const listed = (items: string[]) => (items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`);

/** Up to four sentences built from the measurements: tone, sentences and vocabulary, person, habits. */
export function summaryFrom(m: Measurements, sliders: Sliders): string {
  const tone = [
    sliders.formality >= 70 ? 'formal' : sliders.formality <= 30 ? 'casual' : 'neutral in register',
    sliders.warmth >= 60 ? 'warm' : sliders.warmth <= 20 ? 'impersonal' : null,
    sliders.humor >= 35 ? 'playful' : null,
    sliders.enthusiasm >= 60 ? 'energetic' : sliders.enthusiasm <= 20 ? 'calm' : null,
    sliders.assertiveness >= 75 ? 'direct' : sliders.assertiveness <= 30 ? 'tentative' : null,
  ].filter((t): t is string => t !== null);
  const vocabulary = m.technical_terms_per_100 >= 2 ? 'technical' : m.long_word_ratio >= 0.2 ? 'elaborate' : m.long_word_ratio <= 0.08 ? 'plain' : 'everyday';
  const variety = m.mean_sentence_words && m.sentence_words_stdev / m.mean_sentence_words >= 0.6 ? 'of very varied length' : 'of fairly even length';
  const sentences = [
    `${capitalize(listed(tone))}.`,
    `Sentences average ${Math.round(m.mean_sentence_words)} words, ${variety}, at a reading grade of about ${Math.round(m.reading_grade)}, with ${vocabulary} vocabulary.`,
  ];
  const you = m.second_person_per_100 >= 1.5;
  const we = m.first_person_plural_per_100 >= 1.5;
  const i = m.first_person_singular_per_100 >= 1.5;
  const person = you && we ? 'Speaks to the reader as "you" and about itself as "we"' : you ? 'Speaks to the reader as "you"' : we ? 'Writes as "we"' : i ? 'Writes as "I"' : 'Writes in the third person';
  const contractions = m.contractions_per_100_words >= 1.5 ? 'uses contractions freely' : m.contractions_per_100_words === 0 ? 'never uses contractions' : 'uses few contractions';
  sentences.push(`${person}, and ${contractions}.`);
  const habits = [
    m.hedges_per_100_words >= 2 ? 'hedges often (maybe, might, could)' : null,
    m.imperatives_ratio >= 0.2 ? 'gives instructions in the imperative' : null,
    m.exclamations_per_sentence >= 0.1 ? `ends ${Math.round(m.exclamations_per_sentence * 100)}% of sentences with "!"` : null,
    m.humor_markers_per_100 >= 0.3 ? 'slips in jokes and playful asides' : null,
    m.signature_phrases[0] ? `comes back to "${m.signature_phrases[0]}"` : null,
  ].filter((h): h is string => h !== null);
  if (habits.length) sentences.push(`${capitalize(listed(habits.slice(0, 3)))}.`);
  return sentences.join(' ').slice(0, 1000);
}

// ---------- Training verdict ----------

export type TrainingVerdict = { ok: true } | { ok: false; reason: 'sample_not_distinctive' | 'unsupported_language'; message: string };

const LANGUAGE_NAMES: Record<string, string> = { de: 'German', fr: 'French', es: 'Spanish', it: 'Italian', nl: 'Dutch', pt: 'Portuguese' };
const SEND_PROSE = 'send about 300 words of typical copy in full sentences, as you would write to a customer';

/** Whether a sample can train a voice: English prose of several distinct sentences (the API checks the word bounds). */
export function trainingVerdict(m: Measurements): TrainingVerdict {
  const fail = (reason: 'sample_not_distinctive' | 'unsupported_language', message: string): TrainingVerdict => ({ ok: false, reason, message });
  if (m.language !== null && m.language !== 'en') {
    return fail('unsupported_language', `The sample looks like ${LANGUAGE_NAMES[m.language] ?? m.language} (${m.language}); voices can only be trained on English so far: ${SEND_PROSE}, in English.`);
  }
  if (m.list_item_ratio >= 0.5) {
    return fail('sample_not_distinctive', `The sample is mostly a list (${Math.round(m.list_item_ratio * 100)}% of its lines are list items), which shows little of how you write: ${SEND_PROSE}.`);
  }
  // Below 0.3 distinct words per word, 200+ words of prose are the same passage over and over.
  if (m.repeated_sentence_ratio >= 0.3 || (m.word_count >= 100 && m.type_token_ratio < 0.3)) {
    return fail('sample_not_distinctive', `The sample repeats itself (${Math.round(m.repeated_sentence_ratio * 100)}% repeated sentences, ${Math.round(m.type_token_ratio * 100)}% distinct words): ${SEND_PROSE}, without repeating passages.`);
  }
  if (m.sentence_count < 5) {
    return fail('sample_not_distinctive', `The sample has only ${m.sentence_count} sentence${m.sentence_count === 1 ? '' : 's'}, too few to tell a style from: ${SEND_PROSE}.`);
  }
  if (m.language === null) {
    return fail('unsupported_language', `The language of the sample could not be recognised as English; voices can only be trained on English so far: ${SEND_PROSE}, in English.`);
  }
  return { ok: true };
}

// ---------- Rewriting toward target sliders ----------

/** Word-for-word substitutions; keys are lower-case, "'" also matches "’", a space any whitespace. */
type Table = Record<string, string>;

const CONTRACT: Table = {
  'do not': "don't", 'does not': "doesn't", 'did not': "didn't", 'is not': "isn't", 'are not': "aren't", 'was not': "wasn't",
  'were not': "weren't", cannot: "can't", 'can not': "can't", 'will not': "won't", 'would not': "wouldn't", 'should not': "shouldn't",
  'could not': "couldn't", 'have not': "haven't", 'has not': "hasn't", 'we are': "we're", 'you are': "you're", 'they are': "they're",
  'it is': "it's", 'that is': "that's", 'there is': "there's", 'we will': "we'll", 'you will': "you'll", 'it will': "it'll",
  'i am': "i'm", 'i will': "i'll", 'we have been': "we've been", 'you have been': "you've been",
};
const EXPAND: Table = {
  "can't": 'cannot', "won't": 'will not', "shan't": 'shall not', "ain't": 'is not', "i'm": 'i am', "let's": 'let us',
  ...Object.fromEntries([...S_CONTRACTIBLE].filter((w) => w !== 'let').map((w) => [`${w}'s`, `${w} is`])),
};
/**
 * Plain word → elaborate word, read right to left to simplify. Only pairs that swap safely both ways: "before" →
 * "prior to" breaks "before you brew", "many" → "numerous" breaks "many of you", so those are in SIMPLIFY only.
 */
const ELABORATE: Table = {
  use: 'utilize', uses: 'utilizes', used: 'utilized', using: 'utilizing', start: 'commence', starts: 'commences', help: 'assist',
  helps: 'assists', buy: 'purchase', show: 'demonstrate', shows: 'demonstrates', get: 'obtain', gets: 'obtains', need: 'require',
  needs: 'requires', extra: 'additional', later: 'subsequently',
};
const SIMPLIFY: Table = {
  ...Object.fromEntries(Object.entries(ELABORATE).map(([plain, long]) => [long, plain])),
  utilise: 'use', utilises: 'uses', approximately: 'about', 'in order to': 'to', facilitate: 'help', regarding: 'about',
  moreover: 'also', furthermore: 'also', 'therefore,': 'so', 'accordingly,': 'so', 'consequently,': 'so', nevertheless: 'still', 'however,': 'but',
  assistance: 'help', indicate: 'show', indicates: 'show', endeavour: 'try', endeavor: 'try', initiate: 'start', commence: 'start',
  terminate: 'end', modification: 'change', numerous: 'many', sufficient: 'enough', additional: 'more', components: 'parts',
  component: 'part', individuals: 'people', methodology: 'method', objective: 'goal', 'prior to': 'before', 'due to the fact that': 'because',
};
const CASUAL: Table = {
  // "Therefore," opens a sentence and becomes "So,"; "the Directors therefore consider" has no casual word-for-word swap.
  'therefore,': 'so', 'accordingly,': 'so', 'hence,': 'so', 'thus,': 'so', furthermore: 'also', moreover: 'also', regarding: 'about',
  purchase: 'buy', assist: 'help', assistance: 'help', require: 'need', requires: 'need', obtain: 'get', approximately: 'about', herein: 'here',
};
const FORMAL: Table = {
  gonna: 'going to', wanna: 'want to', gotta: 'have to', yeah: 'yes', yep: 'yes', yup: 'yes', nope: 'no', hey: 'hello', stuff: 'things',
  folks: 'everyone', guys: 'everyone', quid: 'pounds', awesome: 'excellent', cool: 'good', kinda: 'somewhat', sorta: 'somewhat',
};
const WARMER: Table = {
  'the customer is': 'you are', 'the user is': 'you are', 'the customer has': 'you have', 'the user has': 'you have',
  'our customers': 'you', customers: 'you', 'the customer': 'you', clients: 'you', users: 'you', 'the user': 'you', readers: 'you',
  "customers'": 'your', "customer's": 'your', "users'": 'your', "user's": 'your', 'the organisation': 'your organisation',
  'the organization': 'your organization', 'the company': 'your company', 'the business': 'your business', 'the team': 'your team',
};
/** Certainty for hedges. "may" is handled apart: capitalised, it is usually the month. */
const ASSERT: Table = {
  'would suggest': 'recommend', 'is likely to': 'will', 'are likely to': 'will', 'might well': 'will', might: 'will', could: 'can',
  'could not': 'cannot', would: 'will', 'would like': 'would like', 'would love': 'would love', 'seem to be': 'are',
  'seems to be': 'is', 'not necessarily': 'not',
};
const HEDGE: Table = { will: 'might', must: 'should', always: 'usually', never: 'rarely', can: 'could' };
const CALMER: Table = { amazing: 'good', awesome: 'good', incredible: 'remarkable', fantastic: 'good', thrilled: 'pleased', excited: 'pleased', brilliant: 'good' };
/** Removed outright (with the commas around them) when toning down hedges, filler or excitement. */
const HEDGES_REMOVED = ['i think', 'we think', 'i believe', 'we believe', 'i feel', 'it seems that', 'it is possible that', 'it seems possible that', 'perhaps', 'maybe', 'possibly', 'somewhat', 'arguably', 'probably', 'likely', 'potentially', 'presumably', 'apparently', 'tentatively', 'admittedly', 'relatively', 'fairly', 'seemingly', 'to some extent'];
const FILLER_REMOVED = ['really', 'very', 'just', 'actually', 'basically', 'quite', 'simply', 'literally', 'honestly', 'of course'];
const EXCITEMENT_REMOVED = ['absolutely', 'totally', 'super', 'wow', 'yay'];
const HUMOR_REMOVED = ['haha', 'hahaha', 'hehe', 'lol', 'lmao', 'rofl', 'jk', 'just kidding', 'pun intended', 'no pun intended'];

const FORMAL_OPENERS: Record<string, string> = { So: 'Therefore,', But: 'However,', Also: 'Furthermore,', Plus: 'In addition,' };
const EMOJI_RUN = /[ \t]*\p{Extended_Pictographic}[\u{FE0F}\u{200D}\p{Extended_Pictographic}\p{Emoji_Modifier}]*/gu;

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const WORD_EDGE_BEFORE = "(?<![\\p{L}\\p{N}'’])";
const WORD_EDGE_AFTER = "(?![\\p{L}\\p{N}'’])";
const phrasePattern = (keys: string[]) =>
  keys.sort((a, b) => b.length - a.length || a.localeCompare(b)).map((k) => escapeRe(k).replace(/'/g, "['’]").replace(/ /g, '\\s+')).join('|');

/** Replaces the table's words, keeping a capital first letter, ALL CAPS and the curly apostrophe of the original. */
function replaceTable(text: string, table: Table, lookahead = ''): string {
  const re = new RegExp(`${WORD_EDGE_BEFORE}(?:${phrasePattern(Object.keys(table))})${WORD_EDGE_AFTER}${lookahead}`, 'giu');
  return text.replace(re, (match) => {
    let out = table[match.toLowerCase().replace(/’/g, "'").replace(/\s+/g, ' ')] ?? match;
    if (match.includes('’')) out = out.replace(/'/g, '’');
    if (/\p{L}{2}/u.test(match) && match === match.toUpperCase()) return out.toUpperCase();
    return /^\p{Lu}/u.test(match) ? capitalize(out) : out;
  });
}

/** Removes words; ", perhaps, " (an aside) becomes " ", and the sentence start is re-capitalised later. */
function removeWords(text: string, list: string[]): string {
  const re = new RegExp(`(,[ \\t]*)?${WORD_EDGE_BEFORE}(?:${phrasePattern([...list])})${WORD_EDGE_AFTER}([ \\t]*,)?[ \\t]*`, 'giu');
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
const SUBJECT_START = words('i we you he she it they there this that these those the a an our your their its my his her each every some all no one');

/** Splits a long sentence at ", and" / ", but" / ";" / " — " (not ", so that") where both parts keep six words and the second its subject. */
function splitLong(sentence: string): string {
  if (tokensOf(sentence).length <= 16) return sentence;
  let from = 0; // where the current part starts
  return sentence.replace(/(,\s+(and|but)\s+|;\s+|\s+[—–]\s+)/gi, (sep, _sep, conj: string | undefined, offset: number) => {
    const rest = sentence.slice(offset + sep.length);
    const subject = sep.trim() === ';' || SUBJECT_START.has(tokensOf(rest)[0] ?? '') || /^\p{Lu}/u.test(rest);
    if (!subject || tokensOf(sentence.slice(from, offset)).length < 6 || tokensOf(rest).length < 6) return sep;
    from = offset + sep.length;
    return conj && conj.toLowerCase() !== 'and' ? `. ${capitalize(conj.toLowerCase())} ` : '. ';
  });
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
  const names = new Set(sentenceSpans(text).flatMap((s) => (s.text.match(TOKEN) ?? []).slice(1).filter((t) => /^\p{Lu}/u.test(t))));
  const lowerFirst = (sentence: string) =>
    sentence.replace(LEAD, (all, lead: string, word: string, offset: number, whole: string) =>
      /^\p{Lu}\p{Ll}*$/u.test(word) && word !== 'I' && !names.has(word) && !/^\s+\p{Lu}/u.test(whole.slice(offset + all.length)) ? lead + word.toLowerCase() : all,
    );
  // "Perhaps" fits a statement of some length that opens with a word rather than an interjection ("Well,", "Please").
  const hedgeable = (s: string, i: number) =>
    (isImperative(s) || i % 2 === 0) && tokensOf(s).length >= 4 && !/\?\s*$/.test(s) && !/^\W*\p{L}+,|^\W*please\b/iu.test(s) && !tokensOf(s).some((t) => HEDGE_WORDS.has(t));
  let out = text;

  if (down('humor')) out = removeWords(out.replace(HUMOR_EMOJI, '').replace(HUMOR_PHRASES, ''), HUMOR_REMOVED);
  if (up('assertiveness')) out = removeWords(replaceTable(out, ASSERT).replace(/\bmay\b/g, 'will'), HEDGES_REMOVED);
  if (down('assertiveness')) {
    // Fewer certainties, and "Perhaps" before every instruction and every other statement.
    out = replaceTable(mapSentences(out, (s, i) => (hedgeable(s, i) ? `Perhaps ${lowerFirst(s)}` : s)), HEDGE);
  }
  if (down('complexity')) out = replaceTable(out, SIMPLIFY);
  if (up('complexity')) out = replaceTable(out, ELABORATE);
  if (down('formality')) out = replaceTable(replaceTable(out, CASUAL), CONTRACT, '(?=\\s+[\\p{L}])');
  if (up('formality')) {
    out = replaceTable(replaceTable(out, EXPAND), FORMAL)
      .replace(/(\p{L})n['’]t\b/gu, '$1 not')
      .replace(/(\p{L})['’](re|ve|ll|d|m)\b/gu, (_m, l: string, c: string) => `${l} ${{ re: 'are', ve: 'have', ll: 'will', d: 'would', m: 'am' }[c]}`)
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
    out = replaceTable(removeWords(out.replace(/[ \t]*\([^()]*\)/g, ''), FILLER_REMOVED), { 'in order to': 'to', 'due to the fact that': 'because', 'at this point in time': 'now' });
    out = mapSentences(out, splitLong);
  }
  if ((up('complexity') || down('conciseness')) && !up('conciseness')) {
    // Two short statements in a row on one line become one: "We roast on Tuesdays. We ship the same day." → "…, and we ship…".
    const current = out;
    const short = (t: string) => /[^.]\.$/.test(t) && tokensOf(t).length <= 12;
    const joined = (all: Span[], i: number) => i % 2 === 0 && all[i + 1] !== undefined && short(all[i]!.text) && short(all[i + 1]!.text) && /^[ \t]+$/.test(current.slice(all[i]!.end, all[i + 1]!.start));
    out = mapSentences(current, (s, i, all) => (joined(all, i) ? `${s.slice(0, -1)},` : i % 2 === 1 && joined(all, i - 1) ? `and ${lowerFirst(s)}` : s));
  }
  if (up('enthusiasm')) out = mapSentences(out, (s, i) => (i % 2 === 0 ? s.replace(/(?<!\.)\.(["'”’)\]]*)$/, '!$1') : s));
  if (down('enthusiasm')) {
    out = removeWords(replaceTable(out.replace(/!+/g, '.'), CALMER), EXCITEMENT_REMOVED).replace(EMOJI_RUN, '');
  }
  if (up('humor')) out = mapSentences(out, (s, i, all) => (i % 5 === 1 || all.length === 1 ? s.replace(/(?<!\))([.!?]+["'”’]*)$/, ' (yes, really)$1') : s));

  // Tidy what the rules left: doubled spaces, spaces before punctuation, empty brackets, doubled commas.
  out = out
    .replace(/\(\s*\)/g, '')
    .replace(/[ \t]{2,}/g, ' ')
    .replace(/[ \t]+([,.;:!?])/g, '$1')
    .replace(/,(?=\s*[,.;:!?])/g, '')
    .replace(/[ \t]+$/gm, '');
  // Sentence starts get their capital back (after "Perhaps" was removed, say); a first word the author writes in lower case keeps it.
  out = mapSentences(out, (s) =>
    s.replace(/^[,;:]\s*/, '').replace(LEAD, (all, lead: string, word: string) => (/^\p{Ll}+$/u.test(word) && !lowerStarts.has(word) ? lead + capitalize(word) : all)),
  );
  return out;
}

/** Plain words for stiff ones, used by `clarify` only: each swap keeps the meaning in any sentence it appears in. */
const PLAIN: Table = {
  ...SIMPLIFY,
  every: 'each', extra: 'more', purchase: 'buy', purchases: 'buys', receive: 'get', receives: 'gets', provide: 'give', provides: 'gives',
  require: 'need', requires: 'needs', assist: 'help', assists: 'helps', obtain: 'get', obtains: 'gets', currently: 'now', immediately: 'at once',
  demonstrate: 'show', demonstrates: 'show', 'a number of': 'some', 'in addition,': 'also,', 'as well as': 'and', 'at the moment': 'now',
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
    .replace(/[ \t]+([,.;:!?])/g, '$1')
    .replace(/,(?=\s*[,.;:!?])/g, '');
  return mapSentences(out, (s) =>
    s.replace(/^[,;:]\s*/, '').replace(LEAD, (all, lead: string, word: string) => (/^\p{Ll}+$/u.test(word) && !lowerStarts.has(word) ? lead + capitalize(word) : all)),
  );
}

// ---------- Checking a text against a voice ----------

export interface SliderDeviation {
  target: number;
  measured: number;
  /** measured - target: positive when the text is further right on the scale than the voice. */
  deviation: number;
}
export interface Suggestion {
  /** Code-point offsets into the checked text, start inclusive, end exclusive. */
  start: number;
  end: number;
  original: string;
  replacement: string | null;
  reason: string;
  slider: SliderName | null;
}
export interface CheckResult {
  score: number;
  rating: 'on_voice' | 'close' | 'off_voice';
  word_count: number;
  sliders: Record<SliderName, SliderDeviation>;
  suggestions: Suggestion[];
}

/** Score points lost per point of mean absolute slider deviation: on_voice within 10 points on average, close within 20. */
const DEVIATION_PENALTY = 2;
const BANNED_PENALTY = 15;
/** A sentence is worth a suggestion when its own mean deviation would make it score below 70 alone. */
const SENTENCE_DEVIATION = 15;
const ADJECTIVES: Record<SliderName, string> = {
  formality: 'formal', warmth: 'warm', humor: 'playful', enthusiasm: 'enthusiastic', conciseness: 'concise', complexity: 'complex', assertiveness: 'assertive',
};

const meanDeviation = (measured: Sliders, target: Sliders) => SLIDER_NAMES.reduce((sum, name) => sum + Math.abs(measured[name] - target[name]), 0) / SLIDER_NAMES.length;

export function checkText(text: string, target: Sliders, options: { bannedMatches: number; maxSuggestions: number }): CheckResult {
  const m = measure(text);
  const measured = slidersFrom(m);
  const sliders = Object.fromEntries(
    SLIDER_NAMES.map((name) => [name, { target: target[name], measured: measured[name], deviation: measured[name] - target[name] }]),
  ) as Record<SliderName, SliderDeviation>;
  if (m.word_count === 0) return { score: 0, rating: 'off_voice', word_count: 0, sliders, suggestions: [] };
  const score = Math.max(0, Math.min(100, Math.round(100 - DEVIATION_PENALTY * meanDeviation(measured, target) - BANNED_PENALTY * options.bannedMatches)));
  const rating = score >= 80 ? 'on_voice' : score >= 60 ? 'close' : 'off_voice';
  return { score, rating, word_count: m.word_count, sliders, suggestions: suggestionsFor(text, target, options.maxSuggestions) };
}

/** The most off-voice sentences, each rewritten toward the voice; in order of position, never overlapping. */
function suggestionsFor(text: string, target: Sliders, max: number): Suggestion[] {
  if (max <= 0) return [];
  // Offsets count code points (an emoji is two UTF-16 units but one code point); sentence bounds never split a pair.
  const toCodePoint = (utf16: number) => Array.from(text.slice(0, utf16)).length;
  const ranked = sentenceSpans(text)
    .map((span) => {
      const own = slidersFrom(measure(span.text));
      const slider = SLIDER_NAMES.reduce((worst, name) => (Math.abs(own[name] - target[name]) > Math.abs(own[worst] - target[worst]) ? name : worst));
      return { span, own, slider, deviation: meanDeviation(own, target) };
    })
    .filter((c) => c.deviation >= SENTENCE_DEVIATION)
    .sort((a, b) => b.deviation - a.deviation || a.span.start - b.span.start);
  const suggestions: Suggestion[] = [];
  for (const { span, own, slider } of ranked) {
    if (suggestions.length >= max) break;
    const replacement = rewriteToward(span.text, target);
    if (replacement === span.text) continue; // nothing the rules can do: not a useful suggestion
    const direction = own[slider] > target[slider] ? 'More' : 'Less';
    suggestions.push({
      start: toCodePoint(span.start),
      end: toCodePoint(span.end),
      original: span.text,
      replacement,
      reason: `${direction} ${ADJECTIVES[slider]} than the voice (${slider} ${own[slider]}, target ${target[slider]}).`,
      slider,
    });
  }
  return suggestions.sort((a, b) => a.start - b.start);
}
