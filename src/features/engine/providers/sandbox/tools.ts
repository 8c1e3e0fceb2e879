// The sandbox models' tool calls: which tool they call, and the arguments they read from the last user message. The
// rules are documented in sandbox.ts's header and docs/engine.md ("The sandbox models"); they are deterministic, so a
// whole agent loop (call, result, answer) runs offline, through the same AI SDK interface a real provider implements.
import { createHash } from 'node:crypto';
import type {
  JSONSchema7,
  JSONSchema7Definition,
  LanguageModelV4FunctionTool,
  LanguageModelV4ToolChoice,
} from '@ai-sdk/provider';
import { forms, keyWords, meets } from './words.ts';

export interface SandboxToolCall {
  toolCallId: string;
  toolName: string;
  /** The arguments object as JSON text. */
  input: string;
}

/** At most this many calls are made in parallel, one per value listed in the message. */
const MAX_PARALLEL_CALLS = 4;

/** The words of a tool's (or a property's) name: split on `_`, `-`, `.`, spaces and camelCase, lower-cased. */
export function nameWords(name: string): string[] {
  return name
    .replace(/(\p{Ll}|\p{N})(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** The words a tool is known by: the key-term kind of words of its name and description, as their forms. */
function toolWords(tool: LanguageModelV4FunctionTool): Set<string>[] {
  return keyWords(`${nameWords(tool.name).join(' ')} ${tool.description ?? ''}`).map(forms);
}

/** The distinct key-term kind of words of a message, a word and its plural (or -ed, -ing form) being one. */
function distinctTerms(message: string): Set<string>[] {
  const terms: Set<string>[] = [];
  for (const term of keyWords(message).map(forms)) if (!terms.some((seen) => meets(seen, term))) terms.push(term);
  return terms;
}

/** How many distinct words of the key-term kind the message shares with the tool's name and description. */
export function toolScore(tool: LanguageModelV4FunctionTool, message: string): number {
  const words = toolWords(tool);
  return distinctTerms(message).filter((term) => words.some((word) => meets(term, word))).length;
}

/** The best-scoring tool (the first offered among equals) and its score. */
function bestTool(
  tools: LanguageModelV4FunctionTool[],
  message: string,
): { tool: LanguageModelV4FunctionTool; score: number } {
  let best = { tool: tools[0]!, score: toolScore(tools[0]!, message) };
  for (const tool of tools.slice(1)) {
    const score = toolScore(tool, message);
    if (score > best.score) best = { tool, score };
  }
  return best;
}

export interface ToolDecision {
  modelId: string;
  tools: LanguageModelV4FunctionTool[];
  toolChoice: LanguageModelV4ToolChoice;
  /** The last user message's text. */
  message: string;
  /** Whether the prompt ends with a user message (rather than tool results or an assistant message). */
  endsWithUser: boolean;
}

/** The tool the model calls, or null when it answers in text. */
export function chosenTool({
  modelId,
  tools,
  toolChoice,
  message,
  endsWithUser,
}: ToolDecision): LanguageModelV4FunctionTool | null {
  if (tools.length === 0) return null;
  switch (toolChoice.type) {
    case 'none':
      return null;
    case 'tool':
      return tools.find((tool) => tool.name === toolChoice.toolName) ?? null;
    case 'required':
      return modelId === 'sandbox-echo' ? tools[0]! : bestTool(tools, message).tool;
    case 'auto': {
      if (modelId === 'sandbox-echo' || !endsWithUser) return null;
      const best = bestTool(tools, message);
      return best.score > 0 ? best.tool : null;
    }
  }
}

// ————— Arguments —————

type Schema = JSONSchema7;

/** What the message offers the arguments, taken in order as properties use them. */
interface Sources {
  message: string;
  /** Lists of capitalised names after a preposition ("in Paris and Berlin"), in order. */
  places: string[][];
  /** Groups of quoted phrases (joined by commas, "and" or "or"), in order. */
  quoted: string[][];
  numbers: number[];
  taken: { places: number; quoted: number; numbers: number };
  /** The message's key-term kind of words that are not the tool's own words (else all of them), at most 5. */
  terms: string[];
  /** Every word of the message, as its forms (for booleans). */
  words: Set<string>[];
}

const PREPOSITIONS = new Set(['in', 'at', 'for', 'to', 'from', 'about', 'near', 'of']);
/** A string property whose name has one of these words holds a place, read from the names after a preposition. */
const PLACE_WORDS = ['location', 'city', 'place', 'country', 'region', 'destination', 'origin', 'address', 'town'].map(
  forms,
);

const capitalised = (token: string | undefined) => token !== undefined && token !== 'I' && /^\p{Lu}/u.test(token);

/** Each run of capitalised names right after a preposition: "weather in Paris, Berlin and New York" → [Paris, Berlin,
 *  New York]; "from Lisbon to Porto" → [Lisbon], [Porto]. A name is one or more capitalised words in a row. */
function placeLists(message: string): string[][] {
  const tokens = message.match(/[\p{L}\p{N}'’-]+|[^\s\p{L}\p{N}]/gu) ?? [];
  const lists: string[][] = [];
  let at = 0;
  const name = (): string | null => {
    const words: string[] = [];
    while (capitalised(tokens[at])) words.push(tokens[at++]!);
    return words.length > 0 ? words.join(' ') : null;
  };
  while (at < tokens.length) {
    if (!PREPOSITIONS.has(tokens[at]!.toLowerCase()) || !capitalised(tokens[at + 1])) {
      at += 1;
      continue;
    }
    at += 1;
    const list = [name()!];
    for (;;) {
      const back = at;
      if (tokens[at] === ',') at += 1;
      if (/^(?:and|or)$/i.test(tokens[at] ?? '')) at += 1;
      const next = at > back ? name() : null;
      if (next === null) {
        at = back;
        break;
      }
      list.push(next);
    }
    lists.push(list);
  }
  return lists;
}

/**
 * The phrases in "…" or “…” (not empty), left to right: what `/"([^"]+)"|“([^”]+)”/g` finds, in linear time (that
 * pattern searched to the end of the message from every opening quote left unclosed). Where no closing quote follows
 * a position, none follows a later one: each quote character's next occurrence is looked up once.
 */
export function quotedPhrases(message: string): { phrase: string; index: number; end: number }[] {
  const found: { phrase: string; index: number; end: number }[] = [];
  const next = new Map<string, number>();
  const nextOf = (char: string, from: number) => {
    const known = next.get(char);
    if (known !== undefined && (known === -1 || known >= from)) return known;
    const at = message.indexOf(char, from);
    next.set(char, at);
    return at;
  };
  for (let at = 0; at < message.length; at++) {
    const close = message[at] === '"' ? '"' : message[at] === '“' ? '”' : null;
    if (close === null) continue;
    const end = nextOf(close, at + 1);
    if (end > at + 1) {
      found.push({ phrase: message.slice(at + 1, end), index: at, end: end + 1 });
      at = end;
    }
  }
  return found;
}

/** The quoted phrases ("…" or “…”), grouped when only commas, "and" or "or" stand between them. */
function quotedGroups(message: string): string[][] {
  const groups: string[][] = [];
  let end = -1;
  for (const match of quotedPhrases(message)) {
    const phrase = match.phrase.trim();
    const between = end < 0 ? null : message.slice(end, match.index);
    if (between !== null && /^\s*(?:,\s*)?(?:(?:and|or)\s+)?$/i.test(between)) groups[groups.length - 1]!.push(phrase);
    else groups.push([phrase]);
    end = match.end;
  }
  return groups;
}

/** The numbers of the message, in order: "-3", "2.5", "12,000" (a thousands separator), not the digits in a word. */
function numbersIn(message: string): number[] {
  return [...message.matchAll(/(?<![\p{L}\p{N}.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?/gu)].map((match) =>
    Number(match[0].replaceAll(',', '')),
  );
}

function sourcesOf(message: string, tool: LanguageModelV4FunctionTool): Sources {
  const own = toolWords(tool);
  const all = keyWords(message);
  const notOwn = all.filter((word) => !own.some((form) => meets(forms(word), form)));
  return {
    message,
    places: placeLists(message),
    quoted: quotedGroups(message),
    numbers: numbersIn(message),
    taken: { places: 0, quoted: 0, numbers: 0 },
    terms: (notOwn.length > 0 ? notOwn : all).slice(0, 5),
    words: (message.toLowerCase().match(/\p{L}[\p{L}\p{N}'-]*/gu) ?? []).map(forms),
  };
}

const asSchema = (definition: JSONSchema7Definition | undefined): Schema =>
  typeof definition === 'object' && definition !== null ? definition : {};

/** anyOf / oneOf: their first option that is not `null`. */
function resolved(schema: Schema): Schema {
  const options = schema.anyOf ?? schema.oneOf;
  if (!options || options.length === 0) return schema;
  const option = options.map(asSchema).find((candidate) => candidate.type !== 'null') ?? asSchema(options[0]);
  return resolved(option);
}

type Kind = 'const' | 'enum' | 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null';

function kindOf(schema: Schema): Kind {
  if (schema.const !== undefined) return 'const';
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return 'enum';
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== 'null') ?? 'null') : schema.type;
  if (type) return type;
  if (schema.properties) return 'object';
  if (schema.items) return 'array';
  return 'string';
}

/** A value of one property, whether the message supplied it (an optional property is set only then), and for a
 *  string the whole list it was the first of. */
interface Filled {
  value: unknown;
  found: boolean;
  list?: string[];
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const mentions = (message: string, value: string) =>
  value.length > 0 && new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(value)}(?![\\p{L}\\p{N}])`, 'iu').test(message);

/** Cut to `maxLength`, padded with "." to `minLength`. */
function fitted(value: string, schema: Schema): string {
  let out = value;
  if (schema.maxLength !== undefined) out = [...out].slice(0, schema.maxLength).join('');
  if (schema.minLength !== undefined && [...out].length < schema.minLength)
    out += '.'.repeat(schema.minLength - [...out].length);
  return out;
}

function bounded(value: number, schema: Schema, integer: boolean): number {
  let out = integer ? Math.round(value) : value;
  if (schema.minimum !== undefined && out < schema.minimum) out = integer ? Math.ceil(schema.minimum) : schema.minimum;
  if (typeof schema.exclusiveMinimum === 'number' && out <= schema.exclusiveMinimum)
    out = Math.floor(schema.exclusiveMinimum) + 1;
  if (schema.maximum !== undefined && out > schema.maximum) out = integer ? Math.floor(schema.maximum) : schema.maximum;
  if (typeof schema.exclusiveMaximum === 'number' && out >= schema.exclusiveMaximum)
    out = Math.ceil(schema.exclusiveMaximum) - 1;
  return out;
}

/** The string values for a property: a place list (place names), else the next quoted group, else the key terms
 *  (one value, the terms joined by spaces; or each term a value for an array), else the message, else the name. */
function stringValues(name: string, sources: Sources, asItems: boolean): { values: string[]; found: boolean } {
  const isPlace = nameWords(name).some((word) => PLACE_WORDS.some((place) => meets(forms(word), place)));
  if (isPlace && sources.taken.places < sources.places.length)
    return { values: sources.places[sources.taken.places++]!, found: true };
  if (sources.taken.quoted < sources.quoted.length)
    return { values: sources.quoted[sources.taken.quoted++]!, found: true };
  if (sources.terms.length > 0) return { values: asItems ? sources.terms : [sources.terms.join(' ')], found: false };
  return { values: [sources.message.trim() || name], found: false };
}

function fill(name: string, definition: JSONSchema7Definition | undefined, sources: Sources): Filled {
  const schema = resolved(asSchema(definition));
  const kind = kindOf(schema);
  switch (kind) {
    case 'const':
      return { value: schema.const, found: true };
    case 'enum': {
      const named = schema.enum!.filter((value) => mentions(sources.message, String(value)));
      return { value: named[0] ?? schema.enum![0], found: named.length > 0 };
    }
    case 'null':
      return { value: null, found: false };
    case 'boolean': {
      const yes = nameWords(name).some(
        (word) => word.length >= 3 && sources.words.some((form) => meets(forms(word), form)),
      );
      return { value: yes, found: yes };
    }
    case 'integer':
    case 'number': {
      const number = sources.numbers[sources.taken.numbers];
      if (number !== undefined) sources.taken.numbers += 1;
      return { value: bounded(number ?? schema.minimum ?? 1, schema, kind === 'integer'), found: number !== undefined };
    }
    case 'string': {
      const { values, found } = stringValues(name, sources, false);
      return { value: fitted(values[0]!, schema), found, list: values.map((value) => fitted(value, schema)) };
    }
    case 'array': {
      const items = asSchema(Array.isArray(schema.items) ? schema.items[0] : schema.items);
      const { values, found } = arrayItems(name, items, sources);
      const kept = values.slice(0, schema.maxItems ?? values.length);
      while (kept.length < (schema.minItems ?? 0))
        kept.push(kept.length > 0 ? kept[kept.length - 1] : fill(name, items, sources).value);
      return { value: kept, found };
    }
    case 'object': {
      const { value, found } = fillObject(schema, sources);
      return { value, found };
    }
  }
}

/** An array's items: a string list, the enum values named, the numbers left, or one item by the item's rule. */
function arrayItems(name: string, items: Schema, sources: Sources): { values: unknown[]; found: boolean } {
  const item = resolved(items);
  const kind = kindOf(item);
  if (kind === 'string') {
    const { values, found } = stringValues(name, sources, true);
    return { values: values.map((value) => fitted(value, item)), found };
  }
  if (kind === 'enum') {
    const named = item.enum!.filter((value) => mentions(sources.message, String(value)));
    return named.length > 0 ? { values: named, found: true } : { values: [item.enum![0]], found: false };
  }
  if (kind === 'number' || kind === 'integer') {
    const left = sources.numbers.slice(sources.taken.numbers);
    sources.taken.numbers = sources.numbers.length;
    const values = (left.length > 0 ? left : [item.minimum ?? 1]).map((value) =>
      bounded(value, item, kind === 'integer'),
    );
    return { values, found: left.length > 0 };
  }
  const one = fill(name, items, sources);
  return { values: [one.value], found: one.found };
}

function fillObject(
  schema: Schema,
  sources: Sources,
): { value: Record<string, unknown>; found: boolean; filled: Map<string, Filled> } {
  const value: Record<string, unknown> = {};
  const filled = new Map<string, Filled>();
  const required = new Set(schema.required ?? []);
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    const one = fill(key, property, sources);
    filled.set(key, one);
    if (required.has(key) || one.found) value[key] = one.value;
  }
  return { value, found: [...filled.values()].some((one) => one.found), filled };
}

/**
 * The arguments objects of the calls the model makes to `tool`: one, or with `parallel` one per value listed for the
 * first required string property ("in Paris and Berlin"), at most MAX_PARALLEL_CALLS.
 */
export function toolArguments(
  tool: LanguageModelV4FunctionTool,
  message: string,
  parallel: boolean,
): Record<string, unknown>[] {
  const sources = sourcesOf(message, tool);
  const schema = resolved(tool.inputSchema);
  const { value, filled } = fillObject(schema, sources);
  if (!parallel) return [value];
  const required = new Set(schema.required ?? []);
  const key = Object.keys(schema.properties ?? {}).find(
    (name) => required.has(name) && filled.get(name)?.list !== undefined,
  );
  const list = key === undefined ? undefined : filled.get(key)!.list!;
  if (!list || list.length < 2) return [value];
  return list.slice(0, MAX_PARALLEL_CALLS).map((item) => ({ ...value, [key!]: item }));
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `call_` and 24 letters and digits from the SHA-256 of the model, the prompt's length in messages, the message, the
 *  tool's name and the call's position. */
export function toolCallId(
  modelId: string,
  promptLength: number,
  message: string,
  toolName: string,
  position: number,
): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([modelId, promptLength, message, toolName, position]))
    .digest();
  return `call_${[...digest.subarray(0, 24)].map((byte) => ID_ALPHABET[byte % ID_ALPHABET.length]).join('')}`;
}

/** The calls the model makes on this turn (none when it answers in text). */
export function toolCalls(decision: ToolDecision & { parallel: boolean; promptLength: number }): SandboxToolCall[] {
  const tool = chosenTool(decision);
  if (!tool) return [];
  return toolArguments(tool, decision.message, decision.parallel).map((args, position) => ({
    toolCallId: toolCallId(decision.modelId, decision.promptLength, decision.message, tool.name, position),
    toolName: tool.name,
    input: JSON.stringify(args),
  }));
}

/** The fragments a call's arguments stream in: the text is cut after each `:` and `,`. */
export function argumentFragments(input: string): string[] {
  return input.match(/[^,:]*[,:]|[^,:]+$/g) ?? [];
}
