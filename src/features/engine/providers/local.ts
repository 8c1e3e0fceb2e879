// The `local` provider: a GGUF file run in-process by llama.cpp (node-llama-cpp), on the CPU, with no network at all:
// `getLlama` may neither build from source nor download, so only the prebuilt binary from the npm package
// (@node-llama-cpp/linux-x64) is used. The prompt is rendered with the model's own chat template (the jinja template in
// the GGUF, else node-llama-cpp's pick from its name and architecture) and completed with LlamaCompletion, so usage is
// counted by the model's tokenizer and max_tokens, stop sequences, seeds and aborts act on the generation itself.

import { statSync } from 'node:fs';
import { basename } from 'node:path';
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
  SharedV4Warning,
} from '@ai-sdk/provider';
import type { ChatHistoryItem, ChatWrapper, GbnfJsonSchema, Llama, LlamaGrammar, LlamaModel } from 'node-llama-cpp';
import { type Provider, positiveInteger } from './provider.ts';

export interface LocalModelSettings {
  /** Upper bound of a call's context (prompt + answer) in tokens; a call allocates only what it needs, up to this. */
  contextSize?: number;
  /** CPU threads per call; llama.cpp's default (every core) crawls when the cores are busy with other work. */
  threads?: number;
}

/** The prompt does not fit the context, counted by the model's own tokenizer (the engine's check counts with
 *  gpt-tokenizer, which can count fewer). */
export class LocalContextExceeded extends Error {
  readonly promptTokens: number;
  readonly contextSize: number;
  constructor(promptTokens: number, contextSize: number) {
    super(`the prompt has ${promptTokens} tokens of this model, its context holds ${contextSize}`);
    this.promptTokens = promptTokens;
    this.contextSize = contextSize;
  }
}

type Loaded = { llama: Llama; model: LlamaModel; wrapper: ChatWrapper };
type Message = LanguageModelV4CallOptions['prompt'][number];

// node-llama-cpp is imported on first use: a server that never calls a local model never loads the native addon.
let llamaPromise: Promise<Llama> | undefined;
const models = new Map<string, Promise<Loaded>>();

/** The model at `modelPath`, loaded once (its weights are mmapped and shared by every call's context). */
function load(modelPath: string): Promise<Loaded> {
  let loaded = models.get(modelPath);
  if (!loaded) {
    loaded = (async () => {
      const { getLlama, resolveChatWrapper } = await import('node-llama-cpp');
      const llama = await (llamaPromise ??= getLlama({ gpu: false, build: 'never' }));
      const model = await llama.loadModel({ modelPath });
      return { llama, model, wrapper: resolveChatWrapper(model) };
    })();
    loaded.catch(() => models.delete(modelPath)); // a failed load is retried by the next call, not cached
    models.set(modelPath, loaded);
  }
  return loaded;
}

const textOf = (content: Message['content']): string =>
  typeof content === 'string' ? content : content.map((part) => (part.type === 'text' ? part.text : '')).join('');

/** The AI SDK prompt as chat history, ending with the assistant turn to write (empty, or prefilled by the caller). */
function history(prompt: Message[], warnings: SharedV4Warning[]): ChatHistoryItem[] {
  const items: ChatHistoryItem[] = [];
  for (const message of prompt) {
    if (message.role === 'system') items.push({ type: 'system', text: message.content });
    else if (message.role === 'user') items.push({ type: 'user', text: textOf(message.content) });
    else if (message.role === 'assistant') items.push({ type: 'model', response: [textOf(message.content)] });
    else warnings.push({ type: 'unsupported', feature: 'tool messages' });
    if (message.role === 'user' && message.content.some((part) => part.type !== 'text'))
      warnings.push({ type: 'unsupported', feature: 'file parts' });
  }
  if (items.at(-1)?.type !== 'model') items.push({ type: 'model', response: [] });
  return items;
}

async function grammarFor(
  llama: Llama,
  format: LanguageModelV4CallOptions['responseFormat'],
  warnings: SharedV4Warning[],
): Promise<LlamaGrammar | undefined> {
  if (format?.type !== 'json') return undefined;
  // node-llama-cpp's schema grammars cover a subset of JSON Schema; another schema gets "any JSON value" and a warning.
  // (The parameter's type is inferred from a literal schema; this one is only known at run time, hence the cast.)
  if (format.schema) {
    try {
      return await llama.createGrammarForJsonSchema(format.schema as GbnfJsonSchema as never);
    } catch (error) {
      warnings.push({
        type: 'compatibility',
        feature: 'responseFormat.schema',
        details: `any JSON instead: ${String(error)}`,
      });
    }
  }
  return llama.getGrammarFor('json');
}

/** Cuts the streamed text before the first stop sequence, holding back any tail that may begin one. Done here, not
 *  with node-llama-cpp's customStopTriggers, which lose the leading space of SentencePiece tokens around a match. */
function stopCutter(stops: string[], emit: (delta: string) => void, onStop: () => void) {
  let held = '';
  let stopped = false;
  return {
    get stopped() {
      return stopped;
    },
    push(delta: string): void {
      if (stopped) return;
      held += delta;
      const at = Math.min(...stops.map((stop) => held.indexOf(stop)).filter((i) => i >= 0));
      if (Number.isFinite(at)) {
        emit(held.slice(0, at));
        stopped = true;
        onStop();
        return;
      }
      let keep = 0; // the longest end of `held` that is the start of a stop sequence
      for (const stop of stops)
        for (let k = Math.min(stop.length - 1, held.length); k > keep; k--)
          if (held.endsWith(stop.slice(0, k))) keep = k;
      emit(held.slice(0, held.length - keep));
      held = held.slice(held.length - keep);
    },
    end: () => stopped || emit(held),
  };
}

interface Output {
  text: string;
  finish: 'stop' | 'length';
  raw: string;
  usage: LanguageModelV4Usage;
}
interface Hooks {
  signal?: AbortSignal;
  onStart?: (warnings: SharedV4Warning[]) => void;
  onText?: (delta: string) => void;
}

async function complete(
  modelPath: string,
  settings: LocalModelSettings,
  options: LanguageModelV4CallOptions,
  { signal, onStart, onText }: Hooks,
): Promise<Output> {
  const { LlamaCompletion } = await import('node-llama-cpp');
  const { llama, model, wrapper } = await load(modelPath);
  const warnings: SharedV4Warning[] = options.tools?.length ? [{ type: 'unsupported', feature: 'tools' }] : [];
  const state = wrapper.generateContextState({ chatHistory: history(options.prompt, warnings) });
  const input = state.contextText.tokenize(model.tokenizer);
  const grammar = await grammarFor(llama, options.responseFormat, warnings);
  // A context (KV cache) per call, sized to the call: prompt + max_tokens, within the setting and the model's window.
  const cap = Math.min(settings.contextSize ?? 4096, model.trainContextSize);
  if (input.length >= cap) throw new LocalContextExceeded(input.length, cap);
  signal?.throwIfAborted();
  const context = await model.createContext({
    contextSize: Math.min(cap, Math.ceil((input.length + (options.maxOutputTokens ?? cap)) / 256) * 256),
    threads: settings.threads,
  });
  // One signal ends the generation: the caller's abort, or the cutter finding a stop sequence.
  const halt = new AbortController();
  const abort = () => halt.abort(signal?.reason);
  signal?.addEventListener('abort', abort, { once: true });
  let text = '';
  const cutter = stopCutter(
    (options.stopSequences ?? []).filter(Boolean),
    (delta) => ((text += delta), delta && onText?.(delta)),
    () => halt.abort(),
  );
  try {
    const sequence = context.getSequence();
    // LlamaCompletion prepends the BOS token itself; the template's own would make two.
    const bos = model.tokens.bos;
    const tokens = model.tokens.shouldPrependBosToken && bos !== null && input[0] === bos ? input.slice(1) : input;
    const penalties = options.presencePenalty !== undefined || options.frequencyPenalty !== undefined;
    onStart?.(warnings);
    const { metadata } = await new LlamaCompletion({ contextSequence: sequence }).generateCompletionWithMeta(tokens, {
      maxTokens: options.maxOutputTokens,
      temperature: options.temperature,
      topP: options.topP,
      topK: options.topK,
      seed: options.seed,
      repeatPenalty: penalties
        ? { penalty: 1, presencePenalty: options.presencePenalty, frequencyPenalty: options.frequencyPenalty }
        : undefined,
      grammar,
      customStopTriggers: state.stopGenerationTriggers, // the template's end of turn (special tokens, mostly)
      // A full context ends the answer (stopReason maxTokens, finish "length") rather than shifting out the prompt.
      disableContextShift: true,
      contextShiftSize: 0,
      signal: halt.signal,
      stopOnAbortSignal: true,
      onTextChunk: cutter.push,
    });
    if (!cutter.stopped) signal?.throwIfAborted();
    cutter.end();
    const outputTokens = sequence.tokenMeter.usedOutputTokens; // every sampled token, a cut stop sequence's included
    return {
      text,
      finish: !cutter.stopped && metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
      raw: cutter.stopped ? 'stopSequence' : metadata.stopReason,
      usage: {
        inputTokens: { total: input.length, noCache: input.length, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
      },
    };
  } finally {
    signal?.removeEventListener('abort', abort);
    await context.dispose();
  }
}

/** A LanguageModelV4 answering with the GGUF model at `modelPath`. */
export function localModel(modelPath: string, modelId: string, settings: LocalModelSettings = {}): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'local',
    modelId,
    supportedUrls: {},
    async doGenerate(options) {
      let warnings: SharedV4Warning[] = [];
      const output = await complete(modelPath, settings, options, {
        signal: options.abortSignal,
        onStart: (w) => (warnings = w),
      });
      return {
        content: [{ type: 'text', text: output.text }],
        finishReason: { unified: output.finish, raw: output.raw },
        usage: output.usage,
        warnings,
      };
    },
    async doStream(options) {
      options.abortSignal?.throwIfAborted();
      // Generation stops when the caller aborts or the reader cancels the stream (a client that went away).
      const stop = new AbortController();
      options.abortSignal?.addEventListener('abort', () => stop.abort(options.abortSignal?.reason), { once: true });
      let open = true;
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        start(controller) {
          const send = (part: LanguageModelV4StreamPart) => open && controller.enqueue(part);
          // Not awaited: start() returns at once so that the reader gets each part as it is produced.
          void complete(modelPath, settings, options, {
            signal: stop.signal,
            onStart: (warnings) => (send({ type: 'stream-start', warnings }), send({ type: 'text-start', id: '0' })),
            onText: (delta) => send({ type: 'text-delta', id: '0', delta }),
          }).then(
            (output) => {
              send({ type: 'text-end', id: '0' });
              send({ type: 'finish', usage: output.usage, finishReason: { unified: output.finish, raw: output.raw } });
              if (open) controller.close();
            },
            (error: unknown) => open && controller.error(error),
          );
        },
        cancel(reason) {
          open = false;
          stop.abort(reason);
        },
      });
      return { stream };
    },
  };
}

/** The `local` provider's settings: one GGUF file, run in this process by node-llama-cpp. */
export interface LocalSettings {
  modelPath: string;
  /** The model's catalogue id is `local:<name>`. */
  name: string;
  /** The largest context (prompt and answer) of a call, in tokens: the catalogue's context window. */
  contextSize: number;
  /** CPU threads per call; undefined lets llama.cpp choose (every core). */
  threads: number | undefined;
}

/** The provider of the registry: enabled by LOCAL_MODEL_PATH, its one model `local:<name>`, free. */
export const local: Provider<LocalSettings> = {
  enabledBy: 'LOCAL_MODEL_PATH',
  read(env, fail) {
    const modelPath = env.LOCAL_MODEL_PATH;
    if (!modelPath) return undefined;
    // Checked at start: a mistyped path is a configuration error now, not a 503 at the first call.
    let isFile = false;
    try {
      isFile = statSync(modelPath).isFile();
    } catch {
      // not there, or not readable: the same message
    }
    if (!isFile) fail(`LOCAL_MODEL_PATH must name a GGUF model file, got ${modelPath}`);
    const name =
      env.LOCAL_MODEL_NAME ||
      basename(modelPath)
        .replace(/\.gguf$/i, '')
        .toLowerCase();
    if (!/^[a-z0-9][a-z0-9._-]{0,80}$/.test(name))
      fail(`LOCAL_MODEL_NAME must be lower-case letters, digits, . _ - (from the file name when unset), got ${name}`);
    const contextSize = positiveInteger(env, 'LOCAL_MODEL_CONTEXT_SIZE', 4096, 1_048_576, fail);
    if (contextSize < 256) fail(`LOCAL_MODEL_CONTEXT_SIZE must be at least 256, got ${contextSize}`);
    const threads = positiveInteger(env, 'LOCAL_MODEL_THREADS', 0, 256, fail);
    return { modelPath, name, contextSize, threads: threads || undefined };
  },
  languageModel: ({ modelPath, contextSize, threads }, id) => localModel(modelPath, id, { contextSize, threads }),
  models: ({ name, contextSize }) => [
    {
      id: `local:${name}`,
      provider: 'local',
      upstream_id: name,
      owned_by: 'local',
      name: `${name} (local GGUF)`,
      created: 0,
      context_window: contextSize,
      max_output_tokens: contextSize,
      // JSON mode and JSON schemas are grammars that constrain llama.cpp's sampling (localModel above).
      capabilities: ['chat', 'streaming', 'json_mode', 'json_schema'],
      pricing: { input_per_million_usd: 0, cached_input_per_million_usd: null, output_per_million_usd: 0 },
      regions: ['eu', 'us'],
      deprecated: false,
      deprecation_date: null,
    },
  ],
};
