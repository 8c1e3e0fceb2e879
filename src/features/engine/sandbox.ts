// The built-in `sandbox` provider: deterministic models that need no key and no network, so that a fresh server
// answers every content operation (like a payment API's test mode). Their output is derived from the input by the
// rules below (docs/engine.md has them for users), never canned, and goes through the same engine as a real
// provider's: streamed in chunks, cut by `max_tokens` and `stop`, counted and priced.
//
//   sandbox-echo     answers the last user message, as it is.
//   sandbox-writer   writes a short draft from the last user message's key terms: the words of four letters or more
//                    that are not common words, ranked by how often they occur, then by first appearance (at most 5).
//                    "Draft on <t1>, <t2> and <t3>." then, for each term, "<Term>: “<context>”." where the context is
//                    the term's first occurrence with up to three words either side, then "In short: <t1> and <t2>."
//                    A message without key terms is answered "Nothing to draft from: <message>".
//                    With sliders in `providerOptions.sandbox.sliders` (the seven sliders of style.ts, 0 to 100: the
//                    voices feature's engine middleware passes a voice's), the draft is then rewritten toward them by
//                    the rules of src/features/engine/style.ts (`rewriteToward`: contractions, exclamation marks,
//                    hedges, plain or technical words, "you", split sentences).
//
//                    Grounded answers: when the system messages hold a passages block (grounding.ts writes it for the
//                    chatbots) — a line `Knowledge passages:`, entries each starting with a line
//                    `[n] <title>` followed by the passage's text (up to the next entry), and a line `End of passages.`
//                    (the last such block counts; it may have no entry) — sandbox-writer answers from the passages
//                    instead. Each sentence of a passage's text scores the number of distinct key terms of the last user
//                    message it contains, in any case (a term also matches its singular or plural: -s, -es, -ies/-y,
//                    and its -ed and -ing forms). The best sentence, and the next best if it scores too and is not the
//                    same sentence again, are the answer, by score, then passage number, then position, joined by a
//                    space; each is written without its final . ! or ?, then " [n]" (its passage's number), then that
//                    punctuation ("." if it had none):
//                      "Delivery inside the EU takes three to five days [1]. Pause or cancel deliveries at any time [2]."
//                    With no sentence scoring (or no passage, or no key term) the answer is exactly
//                    "I could not find an answer to that in my sources." The voice rewrite does not apply to grounded
//                    answers: it may move text around a marker (a humorous "(yes, really)" goes before the final
//                    punctuation, a long sentence is split away from its marker), and the sentences quote the sources.
//                    Choices and seeds do not change a grounded answer: every choice is the same text.
//
// Choices and seeds: choice i of `n` (and `seed` s) rotate the key terms by i + s, so drafts (and JSON schema values)
// differ and a seed gives the same answer every time. Temperature and the penalties change nothing: the models are
// deterministic.
// JSON: `json_object` answers {"reply": <the text>, "key_terms": [...]}; `json_schema` answers a value of the schema
// built from the same text (docs/engine.md: strings from the terms and sentences, numbers from the word count, …).
import type { JSONSchema7, LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart, LanguageModelV4Usage } from '@ai-sdk/provider';
import { PASSAGES_END, PASSAGES_START } from './grounding.ts';
import { rewriteToward, SLIDER_NAMES, type Sliders } from './style.ts';
import { countPromptTokens, countTokens, truncateTokens } from './tokens.ts';

const STOP_WORDS = new Set(
  'about above after again against also among because been before being below between both cannot could does doing down during each either every from further have having here hers herself himself into itself just like make more most much must myself neither never once only other ought ours ourselves over same shall should some such than that their theirs them themselves then there these they this those through under until upon very wants were what when where which while whom whose will with within without would write your yours yourself yourselves please tell give need want know'.split(' '),
);

interface SandboxInput {
  /** The last user message. */
  message: string;
  /** Every message as text, for the prompt's token count. */
  all: { content: string }[];
  /** The system messages, joined. */
  system: string;
}

function readPrompt(options: LanguageModelV4CallOptions): SandboxInput {
  const all: { content: string }[] = [];
  let message = '';
  let system = '';
  for (const entry of options.prompt) {
    const text =
      typeof entry.content === 'string'
        ? entry.content
        : entry.content
            .filter((part): part is { type: 'text'; text: string } => part.type === 'text')
            .map((part) => part.text)
            .join('');
    all.push({ content: text });
    if (entry.role === 'user') message = text;
    if (entry.role === 'system') system += `${text}\n`;
  }
  return { message, all, system };
}

/** The key terms of a text, as the model's rules define them. */
export function keyTerms(text: string): string[] {
  const counts = new Map<string, { count: number; first: number }>();
  const words = text.toLowerCase().match(/\p{L}[\p{L}\p{N}'-]*/gu) ?? [];
  words.forEach((word, index) => {
    if ([...word].length < 4 || STOP_WORDS.has(word)) return;
    const seen = counts.get(word);
    if (seen) seen.count += 1;
    else counts.set(word, { count: 1, first: index });
  });
  return [...counts.entries()]
    .sort(([, a], [, b]) => b.count - a.count || a.first - b.first)
    .slice(0, 5)
    .map(([word]) => word);
}

function sentences(text: string): string[] {
  return (text.match(/[^.!?\n]+[.!?]*/g) ?? []).map((s) => s.trim()).filter(Boolean);
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

function rotate<T>(items: T[], by: number): T[] {
  if (items.length === 0) return items;
  const shift = ((by % items.length) + items.length) % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

function listed(terms: string[]): string {
  return terms.length <= 1 ? (terms[0] ?? '') : `${terms.slice(0, -1).join(', ')} and ${terms[terms.length - 1]}`;
}

function writerText(message: string, rotation: number): { text: string; terms: string[] } {
  const terms = rotate(keyTerms(message), rotation);
  if (terms.length === 0) return { text: `Nothing to draft from: ${message.trim()}`, terms };
  const parts = [`Draft on ${listed(terms.slice(0, 3))}.`];
  const words = message.split(/\s+/).filter(Boolean);
  for (const term of terms) {
    const at = words.findIndex((word) => word.toLowerCase().replace(/[^\p{L}\p{N}'-]/gu, '') === term);
    const context = words.slice(Math.max(0, at - 3), at + 4).join(' ').replace(/[.!?,;:]+$/, '');
    parts.push(`${capitalise(term)}: “${context}”.`);
  }
  parts.push(`In short: ${listed(terms.slice(0, 2))}.`);
  return { text: parts.join(' '), terms };
}

/** A value of `schema` derived from the text and terms (the json_schema rule). */
function valueOf(schema: JSONSchema7 | boolean | undefined, text: string, terms: string[], index: number, name: string): unknown {
  if (typeof schema !== 'object' || schema === null) return text;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[index % schema.enum.length];
  const options = schema.anyOf ?? schema.oneOf;
  if (options && options.length > 0) return valueOf(options.find((o) => typeof o === 'object' && o.type !== 'null') ?? options[0], text, terms, index, name);
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== 'null') ?? 'null') : schema.type;
  const words = text.split(/\s+/).filter(Boolean).length;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, property] of Object.entries(schema.properties ?? {})) out[key] = valueOf(property, text, terms, index, key);
      return out;
    }
    case 'array': {
      const count = Math.min(Math.max(schema.minItems ?? 1, Math.min(terms.length, 3)), schema.maxItems ?? 3);
      const items = Array.isArray(schema.items) ? schema.items[0] : schema.items;
      return Array.from({ length: count }, (_, i) => valueOf(items, text, terms, index + i, name));
    }
    case 'integer':
    case 'number': {
      const low = schema.minimum ?? -Infinity;
      const high = schema.maximum ?? Infinity;
      return Math.min(Math.max(words + index, low), high);
    }
    case 'boolean':
      return text.trim().endsWith('?') === (index % 2 === 0);
    case 'null':
      return null;
    default: {
      const term = terms.length > 0 ? terms[index % terms.length]! : text;
      const short = /name|title|headline|heading|label|tag|term|keyword|topic/i.test(name);
      let value = short ? capitalise(term) : (sentences(text)[index % Math.max(1, sentences(text).length)] ?? text);
      if (schema.maxLength !== undefined) value = [...value].slice(0, schema.maxLength).join('');
      if (schema.minLength !== undefined) value = value.padEnd(schema.minLength, '.');
      return value;
    }
  }
}

const NOT_IN_SOURCES = 'I could not find an answer to that in my sources.';

interface Passage {
  n: number;
  text: string;
}

/** The passages block of the system messages, or null when there is none. The last block counts: the chatbots'
 *  prompt ends with it, after the chatbot's own instructions (which could quote the marker lines). */
function passagesIn(system: string): Passage[] | null {
  const lines = system.split('\n').map((line) => line.replace(/\r$/, ''));
  const end = lines.lastIndexOf(PASSAGES_END);
  const start = end < 0 ? -1 : lines.lastIndexOf(PASSAGES_START, end);
  if (start < 0) return null;
  const passages: Passage[] = [];
  for (const line of lines.slice(start + 1, end)) {
    const entry = /^\[(\d+)\](?: |$)/.exec(line);
    if (entry) passages.push({ n: Number(entry[1]), text: '' });
    else if (passages.length > 0) passages[passages.length - 1]!.text += `${line}\n`;
  }
  return passages;
}

/** The forms a word is matched by: itself, without a plural ending (-s, -es, -ies → -y), and those without an -ed or
 *  -ing ending (with or without a final e, and a doubled consonant undone). Two words match when their forms meet, so
 *  "cookie" matches "cookies", "setting" "settings", "delivery" "deliveries", "take" "takes" and "taking". */
function forms(word: string): Set<string> {
  const out = new Set([word]);
  if ([...word].length < 4) return out;
  const bases = [word];
  if (/[^s]s$/.test(word)) bases.push(word.slice(0, -1));
  if (/(?:s|x|z|ch|sh)es$/.test(word)) bases.push(word.slice(0, -2));
  if (/[^aeiou]ies$/.test(word)) bases.push(`${word.slice(0, -3)}y`);
  for (const base of bases) {
    out.add(base);
    const verb = /^(.{3,}?)(?:ing|ed)$/.exec(base)?.[1];
    if (!verb) continue;
    out.add(verb);
    out.add(`${verb}e`);
    if (/([^aeiou])\1$/.test(verb)) out.add(verb.slice(0, -1));
  }
  return out;
}

const meets = (a: Set<string>, b: Set<string>) => [...a].some((form) => b.has(form));

/** The grounded answer: the one or two passage sentences that share the most key terms with the message. */
function groundedText(message: string, passages: Passage[]): string {
  // Distinct terms: "delivery" and "deliveries" in one message are one term.
  const terms: Set<string>[] = [];
  for (const term of keyTerms(message).map(forms)) if (!terms.some((seen) => meets(seen, term))) terms.push(term);
  const scored = passages
    .flatMap((passage) =>
      sentences(passage.text).map((sentence, position) => {
        const words = (sentence.toLowerCase().match(/\p{L}[\p{L}\p{N}'-]*/gu) ?? []).map(forms);
        return { sentence, n: passage.n, position, score: terms.filter((term) => words.some((word) => meets(term, word))).length };
      }),
    )
    .filter((candidate) => candidate.score > 0)
    .sort((a, b) => b.score - a.score || a.n - b.n || a.position - b.position);
  // The best sentence and the next one that says something else (overlapping passages repeat sentences).
  const same = (a: string, b: string) => a.toLowerCase().replace(/\s+/g, ' ') === b.toLowerCase().replace(/\s+/g, ' ');
  const chosen = scored.filter((candidate, index) => !scored.slice(0, index).some((earlier) => same(earlier.sentence, candidate.sentence))).slice(0, 2);
  if (chosen.length === 0) return NOT_IN_SOURCES;
  return chosen
    .map(({ sentence, n }) => {
      const [, body, end] = /^(.*?)([.!?]*)$/s.exec(sentence)!;
      return `${body!.trim()} [${n}]${end || '.'}`;
    })
    .join(' ');
}

/** The voice's sliders the caller passed in `providerOptions.sandbox.sliders` (every slider, 0 to 100), or null. */
function slidersOf(options: LanguageModelV4CallOptions): Sliders | null {
  const given = (options.providerOptions?.sandbox as { sliders?: Record<string, unknown> } | undefined)?.sliders;
  if (typeof given !== 'object' || given === null) return null;
  const valid = SLIDER_NAMES.every((name) => Number.isInteger(given[name]) && (given[name] as number) >= 0 && (given[name] as number) <= 100);
  return valid ? (given as Sliders) : null;
}

/** What the model answers to this call, before `stop` and `max_tokens`. */
function answer(modelId: string, options: LanguageModelV4CallOptions, input: SandboxInput): string {
  const sandbox = (options.providerOptions?.sandbox ?? {}) as { choice?: number };
  const rotation = (sandbox.choice ?? 0) + (options.seed ?? 0);
  const passages = modelId === 'sandbox-echo' ? null : passagesIn(input.system);
  const written =
    modelId === 'sandbox-echo' ? { text: input.message, terms: keyTerms(input.message) } : passages ? { text: groundedText(input.message, passages), terms: keyTerms(input.message) } : writerText(input.message, rotation);
  const sliders = modelId === 'sandbox-echo' || passages ? null : slidersOf(options);
  const { text, terms } = sliders ? { ...written, text: rewriteToward(written.text, sliders) } : written;
  const format = options.responseFormat;
  if (format?.type !== 'json') return text;
  if (!format.schema) return JSON.stringify({ reply: text, key_terms: terms });
  return JSON.stringify(valueOf(format.schema, text, terms, rotation, format.name ?? ''));
}

interface SandboxOutput {
  text: string;
  finish: 'stop' | 'length';
  usage: LanguageModelV4Usage;
}

function generate(modelId: string, options: LanguageModelV4CallOptions): SandboxOutput {
  const input = readPrompt(options);
  let text = answer(modelId, options, input);
  let finish: SandboxOutput['finish'] = 'stop';
  // `stop`: the output ends before the first stop sequence it contains (which is not returned).
  const cut = Math.min(...(options.stopSequences ?? []).map((s) => text.indexOf(s)).filter((i) => i >= 0));
  if (Number.isFinite(cut)) text = text.slice(0, cut);
  if (options.maxOutputTokens !== undefined) {
    const truncated = truncateTokens(text, options.maxOutputTokens);
    text = truncated.text;
    if (truncated.truncated) finish = 'length';
  }
  const inputTokens = countPromptTokens(input.all);
  const outputTokens = countTokens(text);
  return {
    text,
    finish,
    usage: {
      inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
    },
  };
}

/** The chunks a sandbox answer streams in: one word each, with the space that follows it. */
function chunks(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

export function sandboxModel(modelId: string): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'sandbox',
    modelId,
    supportedUrls: {},
    async doGenerate(options) {
      options.abortSignal?.throwIfAborted();
      const output = generate(modelId, options);
      return {
        content: [{ type: 'text', text: output.text }],
        finishReason: { unified: output.finish, raw: output.finish },
        usage: output.usage,
        warnings: [],
      };
    },
    async doStream(options) {
      options.abortSignal?.throwIfAborted();
      const output = generate(modelId, options);
      const parts: LanguageModelV4StreamPart[] = [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: '0' },
        ...chunks(output.text).map((delta): LanguageModelV4StreamPart => ({ type: 'text-delta', id: '0', delta })),
        { type: 'text-end', id: '0' },
        { type: 'finish', usage: output.usage, finishReason: { unified: output.finish, raw: output.finish } },
      ];
      let next = 0;
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        pull(controller) {
          if (options.abortSignal?.aborted) return controller.error(options.abortSignal.reason);
          if (next < parts.length) controller.enqueue(parts[next++]!);
          else controller.close();
        },
      });
      return { stream };
    },
  };
}
