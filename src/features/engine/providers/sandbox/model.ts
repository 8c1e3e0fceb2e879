// The built-in `sandbox` provider: deterministic models (sandbox-echo, sandbox-writer) that need no key and no network,
// so that a fresh server answers every content operation (like a payment API's test mode) and the tests run offline.
// Their output is derived from the input by rules, never canned, and goes through the same engine as a real
// provider's: streamed in chunks, cut by `max_tokens` and `stop`, counted and priced.
// Users rely on the rules, so they are written once, in docs/engine.md ("The sandbox models" with its "Drafts",
// "Document tasks", "Tools" and "Images"); change the doc with the code. Beside this file: sandbox-draft.ts (drafts
// by kind), sandbox-task.ts (document tasks), sandbox-tools.ts (which tool, and its arguments), sandbox-words.ts (key
// terms), style.ts (the voice rewrite), image-info.ts (image headers and tokens). Provider tools are never called.
import type {
  JSONSchema7,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FilePart,
  LanguageModelV4FunctionTool,
  LanguageModelV4ProviderTool,
  LanguageModelV4StreamPart,
  LanguageModelV4ToolResultOutput,
  LanguageModelV4Usage,
} from '@ai-sdk/provider';
import { workerPool } from '../../../../platform/worker-pool.ts';
import { PASSAGES_END, PASSAGES_START } from '../../grounding.ts';
import { type ImageInfo, imageInfo, imageTokens } from '../../image-info.ts';
import { wireTokenLogprob } from '../../logprobs.ts';
import { rewriteToward, SLIDER_NAMES, type Sliders } from '../../style/index.ts';
import { countPromptTokens, countTokens, truncateTokens } from '../../tokens.ts';
import { draftText } from './draft.ts';
import { sandboxLogprobChunks, sandboxLogprobs } from './logprobs.ts';
import { taskOf, taskText } from './task.ts';
import { argumentFragments, type SandboxToolCall, toolCalls } from './tools.ts';
import { forms, keyTerms, meets } from './words.ts';
import type * as SandboxWorker from './worker.ts';

export { keyTerms };

interface SandboxInput {
  /** The last user message's text (its text parts, joined). */
  message: string;
  /** The last user message as sandbox-echo repeats it: its text, each image a marker in its place. */
  echo: string;
  /** The last user message's images, in order. */
  images: ImageNote[];
  /** Every message as text, for the prompt's token count. */
  all: { content: string }[];
  /** The tokens of the images of every user message. */
  imageTokens: number;
  /** The system messages, joined. */
  system: string;
  /** Whether the prompt ends with a user message. */
  endsWithUser: boolean;
  /** The results the prompt ends with (the tool messages after the last assistant message), or null when it does
   *  not end with a tool message. */
  results: ToolResult[] | null;
}

interface ToolResult {
  toolName: string;
  /** The result as text: text as it is, JSON compact, an error as "error: …", a denial as "denied[: reason]". */
  text: string;
}

/** What the sandbox knows of an image: its header (null when unreadable), its size in bytes, or the link or provider
 *  reference it was given as (never fetched). */
interface ImageNote {
  info: ImageInfo | null;
  bytes: number;
  url?: string;
  reference?: boolean;
  detail: 'auto' | 'low' | 'high';
}

function imageNote(part: LanguageModelV4FilePart): ImageNote {
  const options = part.providerOptions as
    | { sandbox?: { imageDetail?: unknown }; openai?: { imageDetail?: unknown } }
    | undefined;
  const asked = options?.sandbox?.imageDetail ?? options?.openai?.imageDetail;
  const detail = asked === 'low' || asked === 'high' ? asked : 'auto';
  // The tagged file data of the v4 interface; the bare forms of earlier versions (bytes, base64, a URL) are read too.
  const data = part.data as LanguageModelV4FilePart['data'] | Uint8Array | string | URL;
  const bytesOf = (content: Uint8Array | string) =>
    typeof content === 'string' ? new Uint8Array(Buffer.from(content, 'base64')) : content;
  if (data instanceof URL) return { info: null, bytes: 0, url: data.href, detail };
  if (data instanceof Uint8Array || typeof data === 'string') {
    const bytes = bytesOf(data);
    return { info: imageInfo(bytes), bytes: bytes.length, detail };
  }
  switch (data.type) {
    case 'data': {
      const bytes = bytesOf(data.data);
      return { info: imageInfo(bytes), bytes: bytes.length, detail };
    }
    case 'text':
      return { info: null, bytes: Buffer.byteLength(data.text), detail };
    case 'url':
      return { info: null, bytes: 0, url: data.originalUrl ?? data.url.href, detail };
    default:
      return { info: null, bytes: 0, reference: true, detail };
  }
}

/** sandbox-echo's marker for an image: "[image: PNG, 640×480]". */
function imageMarker(image: ImageNote): string {
  if (image.info) return `[image: ${image.info.format}, ${image.info.width}×${image.info.height}]`;
  if (image.url !== undefined) return `[image: ${image.url}, not fetched]`;
  if (image.reference) return '[image: provider reference, not read]';
  return `[image: unreadable, ${image.bytes} bytes]`;
}

/** sandbox-writer's sentence about an image: "The image is a PNG of 640×480 pixels (landscape)." */
function imageSentence(image: ImageNote, index: number, count: number): string {
  const subject = count === 1 ? 'The image' : `Image ${index + 1}`;
  if (image.info) {
    const { format, width, height } = image.info;
    const shape = width > height ? 'landscape' : width < height ? 'portrait' : 'square';
    return `${subject} is a ${format} of ${width}×${height} pixels (${shape}).`;
  }
  if (image.url !== undefined) return `${subject} is a link the sandbox does not fetch (${image.url}).`;
  if (image.reference) return `${subject} is a file stored at a provider, which the sandbox does not read.`;
  return `${subject} is in no format the sandbox reads (${image.bytes} bytes).`;
}

function resultText(output: LanguageModelV4ToolResultOutput): string {
  switch (output.type) {
    case 'text':
      return output.value;
    case 'json':
      return JSON.stringify(output.value);
    case 'error-text':
      return `error: ${output.value}`;
    case 'error-json':
      return `error: ${JSON.stringify(output.value)}`;
    case 'execution-denied':
      return output.reason ? `denied: ${output.reason}` : 'denied';
    case 'content':
      return output.value.flatMap((item) => (item.type === 'text' ? [item.text] : [])).join(' ');
  }
}

const isImage = (part: { type: string; mediaType?: string }): part is LanguageModelV4FilePart =>
  part.type === 'file' && /^image(?:\/|$)/i.test(part.mediaType ?? '');

function readPrompt(options: LanguageModelV4CallOptions): SandboxInput {
  const all: { content: string }[] = [];
  let message = '';
  let echo = '';
  let images: ImageNote[] = [];
  let imageTokenCount = 0;
  let system = '';
  for (const entry of options.prompt) {
    if (entry.role === 'system') {
      all.push({ content: entry.content });
      system += `${entry.content}\n`;
    } else if (entry.role === 'user') {
      const notes: ImageNote[] = [];
      // sandbox-echo's text: each image's marker stands apart from the text around it by a space.
      let marked = '';
      let afterMarker = false;
      for (const part of entry.content) {
        if (part.type === 'text') {
          marked += afterMarker && part.text !== '' && !/^\s/.test(part.text) ? ` ${part.text}` : part.text;
          afterMarker = part.text === '' && afterMarker;
        } else if (isImage(part)) {
          const note = imageNote(part);
          notes.push(note);
          imageTokenCount += imageTokens(note.info, note.detail);
          marked += `${marked === '' || /\s$/.test(marked) ? '' : ' '}${imageMarker(note)}`;
          afterMarker = true;
        }
      }
      echo = marked;
      message = entry.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
      images = notes;
      all.push({ content: message });
    } else if (entry.role === 'assistant') {
      const lines = entry.content.flatMap((part) => {
        if (part.type === 'text') return [part.text];
        if (part.type === 'tool-call')
          return [`${part.toolName} ${typeof part.input === 'string' ? part.input : JSON.stringify(part.input)}`];
        return [];
      });
      all.push({ content: lines.join('\n') });
    } else {
      all.push({
        content: entry.content
          .flatMap((part) => (part.type === 'tool-result' ? [resultText(part.output)] : []))
          .join('\n'),
      });
    }
  }
  const last = options.prompt[options.prompt.length - 1];
  let results: ToolResult[] | null = null;
  if (last?.role === 'tool') {
    results = [];
    for (let at = options.prompt.length - 1; at >= 0; at--) {
      const entry = options.prompt[at]!;
      if (entry.role !== 'tool') break;
      const parts = entry.content.flatMap((part) =>
        part.type === 'tool-result' ? [{ toolName: part.toolName, text: resultText(part.output) }] : [],
      );
      results.unshift(...parts);
    }
  }
  return {
    message,
    echo,
    images,
    all,
    imageTokens: imageTokenCount,
    system,
    endsWithUser: last?.role === 'user',
    results,
  };
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

/** sandbox-writer's draft of a message (sandbox-draft.ts), and the message's key terms, rotated by the choice and
 *  seed (the JSON modes use them). */
function writerText(message: string, rotation: number): { text: string; terms: string[] } {
  return { text: draftText(message, rotation), terms: rotate(keyTerms(message), rotation) };
}

/** A value of `schema` derived from the text and terms (the json_schema rule). */
function valueFor(
  schema: JSONSchema7 | boolean | undefined,
  text: string,
  terms: string[],
  index: number,
  name: string,
): unknown {
  if (typeof schema !== 'object' || schema === null) return text;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[index % schema.enum.length];
  const options = schema.anyOf ?? schema.oneOf;
  if (options && options.length > 0)
    return valueFor(
      options.find((o) => typeof o === 'object' && o.type !== 'null') ?? options[0],
      text,
      terms,
      index,
      name,
    );
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== 'null') ?? 'null') : schema.type;
  const words = text.split(/\s+/).filter(Boolean).length;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, property] of Object.entries(schema.properties ?? {}))
        out[key] = valueFor(property, text, terms, index, key);
      return out;
    }
    case 'array': {
      const count = Math.min(Math.max(schema.minItems ?? 1, Math.min(terms.length, 3)), schema.maxItems ?? 3);
      const items = Array.isArray(schema.items) ? schema.items[0] : schema.items;
      return Array.from({ length: count }, (_, i) => valueFor(items, text, terms, index + i, name));
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

/** The grounded answer: the one or two passage sentences that share the most key terms with the message. */
function groundedText(message: string, passages: Passage[]): string {
  // Distinct terms: "delivery" and "deliveries" in one message are one term.
  const terms: Set<string>[] = [];
  for (const term of keyTerms(message).map(forms)) if (!terms.some((seen) => meets(seen, term))) terms.push(term);
  const scored = passages
    .flatMap((passage) =>
      sentences(passage.text).map((sentence, position) => {
        const words = (sentence.toLowerCase().match(/\p{L}[\p{L}\p{N}'-]*/gu) ?? []).map(forms);
        return {
          sentence,
          n: passage.n,
          position,
          score: terms.filter((term) => words.some((word) => meets(term, word))).length,
        };
      }),
    )
    .filter((candidate) => candidate.score > 0)
    .sort((a, b) => b.score - a.score || a.n - b.n || a.position - b.position);
  // The best sentence and the next one that says something else (overlapping passages repeat sentences).
  const same = (a: string, b: string) => a.toLowerCase().replace(/\s+/g, ' ') === b.toLowerCase().replace(/\s+/g, ' ');
  const chosen = scored
    .filter((candidate, index) => !scored.slice(0, index).some((earlier) => same(earlier.sentence, candidate.sentence)))
    .slice(0, 2);
  if (chosen.length === 0) return NOT_IN_SOURCES;
  return chosen
    .map(({ sentence, n }) => {
      const stop = /(?<![.!?])[.!?]*$/.exec(sentence)!;
      const body = sentence.slice(0, stop.index);
      const end = stop[0];
      return `${body.trim()} [${n}]${end || '.'}`;
    })
    .join(' ');
}

/** The answer after tool results: sandbox-echo's is the last result's text; sandbox-writer's is
 *  "<tool name>: <result text>." for each result, in order, joined by a space (no "." added after . ! or ?). */
function resultsAnswer(modelId: string, results: ToolResult[]): string {
  if (modelId === 'sandbox-echo') return results[results.length - 1]?.text ?? '';
  if (results.length === 0) return 'No tool results.';
  return results.map(({ toolName, text }) => `${toolName}: ${text}${/[.!?]$/.test(text) ? '' : '.'}`).join(' ');
}

/** sandbox-writer's sentences about the message's images, before its draft (or alone, when the message's text has
 *  no key term). */
function withImages(text: string, terms: string[], images: ImageNote[]): string {
  if (images.length === 0) return text;
  const about = images.map((image, index) => imageSentence(image, index, images.length)).join(' ');
  return terms.length === 0 ? about : `${about} ${text}`;
}

/** The text in the response format asked for. */
function formatted(options: LanguageModelV4CallOptions, text: string, terms: string[], rotation: number): string {
  const format = options.responseFormat;
  if (format?.type !== 'json') return text;
  if (!format.schema) return JSON.stringify({ reply: text, key_terms: terms });
  return JSON.stringify(valueFor(format.schema, text, terms, rotation, format.name ?? ''));
}

/** The voice's sliders the caller passed in `providerOptions.sandbox.sliders` (every slider, 0 to 100), or null. */
function slidersOf(options: LanguageModelV4CallOptions): Sliders | null {
  const given = (options.providerOptions?.sandbox as { sliders?: Record<string, unknown> } | undefined)?.sliders;
  if (typeof given !== 'object' || given === null) return null;
  const valid = SLIDER_NAMES.every(
    (name) => Number.isInteger(given[name]) && (given[name] as number) >= 0 && (given[name] as number) <= 100,
  );
  return valid ? (given as Sliders) : null;
}

/** What the model answers to this call, before `stop` and `max_tokens`. */
function answer(modelId: string, options: LanguageModelV4CallOptions, input: SandboxInput): string {
  const sandbox = (options.providerOptions?.sandbox ?? {}) as { choice?: number };
  const rotation = (sandbox.choice ?? 0) + (options.seed ?? 0);
  if (input.results) {
    const text = resultsAnswer(modelId, input.results);
    return formatted(options, text, keyTerms(text), rotation);
  }
  // A document task says what to write: its text alone is read, and the voice's sliders change only a rewrite.
  const task = modelId === 'sandbox-echo' ? null : taskOf(options.providerOptions?.sandbox);
  if (task) {
    const text = taskText(task, slidersOf(options));
    return formatted(options, text, keyTerms(task.text), rotation);
  }
  const passages = modelId === 'sandbox-echo' ? null : passagesIn(input.system);
  const written =
    modelId === 'sandbox-echo'
      ? { text: input.echo, terms: keyTerms(input.message) }
      : passages
        ? { text: groundedText(input.message, passages), terms: keyTerms(input.message) }
        : writerText(input.message, rotation);
  const sliders = modelId === 'sandbox-echo' || passages ? null : slidersOf(options);
  const { text, terms } = sliders ? { ...written, text: rewriteToward(written.text, sliders) } : written;
  return formatted(options, modelId === 'sandbox-echo' ? text : withImages(text, terms, input.images), terms, rotation);
}

type SandboxFinish = 'stop' | 'length' | 'tool-calls';

export interface SandboxOutput {
  text: string;
  calls: SandboxToolCall[];
  finish: SandboxFinish;
  usage: LanguageModelV4Usage;
}

const isFunctionTool = (
  tool: LanguageModelV4FunctionTool | LanguageModelV4ProviderTool,
): tool is LanguageModelV4FunctionTool => tool.type === 'function';

/** A tool definition counts the tokens of its name, its description and its input schema as compact JSON. */
const toolDefinitionTokens = (tools: LanguageModelV4FunctionTool[]) =>
  tools.reduce(
    (sum, tool) =>
      sum +
      countTokens(tool.name) +
      countTokens(tool.description ?? '') +
      countTokens(JSON.stringify(tool.inputSchema)),
    0,
  );

function usageOf(inputTokens: number, outputTokens: number): LanguageModelV4Usage {
  return {
    inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
  };
}

/**
 * The calls within `max` output tokens (a call's name and its arguments count): the calls that fit whole, then the
 * one that crosses the bound with its arguments cut to the tokens left, its name written first; none after it.
 */
function withinTokens(
  calls: SandboxToolCall[],
  max: number | undefined,
): { calls: SandboxToolCall[]; tokens: number; truncated: boolean } {
  const kept: SandboxToolCall[] = [];
  let tokens = 0;
  for (const call of calls) {
    const name = countTokens(call.toolName);
    const input = countTokens(call.input);
    if (max === undefined || tokens + name + input <= max) {
      kept.push(call);
      tokens += name + input;
      continue;
    }
    const left = Math.max(0, max - tokens - name);
    if (tokens + name <= max) {
      kept.push({ ...call, input: truncateTokens(call.input, left).text });
      tokens += name + left;
    }
    return { calls: kept, tokens, truncated: true };
  }
  return { calls: kept, tokens, truncated: false };
}

export function generate(modelId: string, options: LanguageModelV4CallOptions): SandboxOutput {
  const input = readPrompt(options);
  const tools = (options.tools ?? []).filter(isFunctionTool);
  const inputTokens = countPromptTokens(input.all) + input.imageTokens + toolDefinitionTokens(tools);
  const sandbox = (options.providerOptions?.sandbox ?? {}) as { parallelToolCalls?: unknown };
  const calls = toolCalls({
    modelId,
    tools,
    toolChoice: options.toolChoice ?? { type: 'auto' },
    message: input.message,
    endsWithUser: input.endsWithUser,
    parallel: sandbox.parallelToolCalls !== false,
    promptLength: options.prompt.length,
  });
  // `stop` applies to text answers only; `max_tokens` cuts tool calls too, as OpenAI's models do (the call's
  // arguments end where the tokens do, `finish_reason: length`), so a call never costs more than its reservation.
  if (calls.length > 0) {
    const cut = withinTokens(calls, options.maxOutputTokens);
    return {
      text: '',
      calls: cut.calls,
      finish: cut.truncated ? 'length' : 'tool-calls',
      usage: usageOf(inputTokens, cut.tokens),
    };
  }
  let text = answer(modelId, options, input);
  let finish: SandboxFinish = 'stop';
  // `stop`: the output ends before the first stop sequence it contains (which is not returned).
  const cut = Math.min(...(options.stopSequences ?? []).map((s) => text.indexOf(s)).filter((i) => i >= 0));
  if (Number.isFinite(cut)) text = text.slice(0, cut);
  if (options.maxOutputTokens !== undefined) {
    const truncated = truncateTokens(text, options.maxOutputTokens);
    text = truncated.text;
    if (truncated.truncated) finish = 'length';
  }
  return { text, calls: [], finish, usage: usageOf(inputTokens, countTokens(text)) };
}

const finishReason = (finish: SandboxFinish) => ({
  unified: finish,
  raw: finish === 'tool-calls' ? 'tool_calls' : finish,
});

/** The chunks a sandbox answer streams in: one word each, with the space that follows it. */
function chunks(text: string): string[] {
  return text.match(/(?:^\s*)?\S+\s*/g) ?? (text ? [text] : []);
}

/** The log probabilities a call asks for: how many alternatives at each position (0 to 20), or null for none. */
function logprobsAsked(options: LanguageModelV4CallOptions): number | null {
  const asked = (options.providerOptions?.sandbox as { logprobs?: unknown } | undefined)?.logprobs;
  return typeof asked === 'number' && Number.isInteger(asked) && asked >= 0 ? Math.min(asked, 20) : null;
}

/** The text parts of an answer: a word a part, or with log probabilities a token a part, each with its own. */
function textParts(text: string, logprobs: number | null): LanguageModelV4StreamPart[] {
  if (logprobs === null)
    return chunks(text).map((delta): LanguageModelV4StreamPart => ({ type: 'text-delta', id: '0', delta }));
  return sandboxLogprobChunks(text, logprobs).map(
    (chunk): LanguageModelV4StreamPart => ({
      type: 'text-delta',
      id: '0',
      delta: chunk.text,
      providerMetadata: { sandbox: { logprobs: chunk.logprobs.map(wireTokenLogprob) } },
    }),
  );
}

/** A text answer streams one word a part (a token a part with log probabilities); tool calls stream as OpenAI's do:
 *  each call's start, its arguments in fragments (cut after each `:` and `,`), its end, then the whole call. */
function streamParts(output: SandboxOutput, logprobs: number | null): LanguageModelV4StreamPart[] {
  const body: LanguageModelV4StreamPart[] =
    output.calls.length > 0
      ? output.calls.flatMap((call): LanguageModelV4StreamPart[] => [
          { type: 'tool-input-start', id: call.toolCallId, toolName: call.toolName },
          ...argumentFragments(call.input).map(
            (delta): LanguageModelV4StreamPart => ({ type: 'tool-input-delta', id: call.toolCallId, delta }),
          ),
          { type: 'tool-input-end', id: call.toolCallId },
          { type: 'tool-call', toolCallId: call.toolCallId, toolName: call.toolName, input: call.input },
        ])
      : [{ type: 'text-start', id: '0' }, ...textParts(output.text, logprobs), { type: 'text-end', id: '0' }];
  return [
    { type: 'stream-start', warnings: [] },
    ...body,
    { type: 'finish', usage: output.usage, finishReason: finishReason(output.finish) },
  ];
}

/**
 * The characters of a prompt's text (its messages, tool calls and results, and tools' schemas) from which the sandbox
 * writes its answer in a worker thread: its reading, counting and drafting cost grows with the prompt, and one
 * tenant's long prompt must not hold the event loop every other request is served on. Less is written in place, where
 * a thread's round trip would cost more than the writing.
 */
export const SANDBOX_OFF_LOOP_CHARS = 8 * 1024;

const offLoop = workerPool<typeof SandboxWorker>(new URL('./worker.ts', import.meta.url));

/** Whether the strings in `value` (walked, not serialised) have at least `limit` characters: stops once they do. */
function hasChars(value: unknown, limit: number): boolean {
  let total = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') {
      total += next.length;
      if (total >= limit) return true;
    } else if (next instanceof Uint8Array || next instanceof URL) {
      // An image's bytes are read for their header only; a link is not read.
    } else if (Array.isArray(next)) for (const item of next) pending.push(item);
    else if (next !== null && typeof next === 'object')
      for (const key in next) pending.push((next as Record<string, unknown>)[key]);
  }
  return false;
}

/** The options generate reads, in a form that crosses to a worker thread: links as plain objects (a URL does not). */
function portable(options: LanguageModelV4CallOptions): LanguageModelV4CallOptions {
  const { abortSignal: _signal, headers: _headers, ...rest } = options;
  const link = (url: URL) => ({ href: url.href }) as URL;
  const prompt = options.prompt.map((message) => {
    if (message.role !== 'user') return message;
    const content = message.content.map((part) => {
      if (part.type !== 'file') return part;
      const data = part.data as LanguageModelV4FilePart['data'] | URL;
      if (data instanceof URL) return { ...part, data: { type: 'url', url: link(data) } };
      if (typeof data === 'object' && 'type' in data && data.type === 'url')
        return { ...part, data: { ...data, url: link(data.url) } };
      return part;
    });
    return { ...message, content };
  }) as LanguageModelV4CallOptions['prompt'];
  return { ...rest, prompt };
}

/** generate, in a worker thread when the prompt is long (SANDBOX_OFF_LOOP_CHARS). */
async function output(modelId: string, options: LanguageModelV4CallOptions): Promise<SandboxOutput> {
  if (!hasChars([options.prompt, options.tools], SANDBOX_OFF_LOOP_CHARS)) return generate(modelId, options);
  return offLoop('generate', { modelId, options: portable(options) });
}

export function sandboxModel(modelId: string): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'sandbox',
    modelId,
    // Image links reach the model as links (the AI SDK would otherwise download them first): the sandbox fetches
    // nothing, and says so.
    supportedUrls: { 'image/*': [/^https?:\/\//] },
    async doGenerate(options) {
      options.abortSignal?.throwIfAborted();
      const written = await output(modelId, options);
      options.abortSignal?.throwIfAborted();
      const logprobs = logprobsAsked(options);
      return {
        content:
          written.calls.length > 0
            ? written.calls.map((call) => ({
                type: 'tool-call' as const,
                toolCallId: call.toolCallId,
                toolName: call.toolName,
                input: call.input,
              }))
            : [
                {
                  type: 'text',
                  text: written.text,
                  ...(logprobs === null
                    ? {}
                    : {
                        providerMetadata: {
                          sandbox: { logprobs: sandboxLogprobs(written.text, logprobs).map(wireTokenLogprob) },
                        },
                      }),
                },
              ],
        finishReason: finishReason(written.finish),
        usage: written.usage,
        warnings: [],
      };
    },
    async doStream(options) {
      options.abortSignal?.throwIfAborted();
      const written = await output(modelId, options);
      options.abortSignal?.throwIfAborted();
      const parts = streamParts(written, logprobsAsked(options));
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
