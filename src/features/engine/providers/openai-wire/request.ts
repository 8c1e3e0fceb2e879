// The request body of a Chat Completions call from the AI SDK's call options: the prompt as `messages`, the sampling
// settings, the tools and the response format, as @ai-sdk/openai (the `openai` dialect) and @ai-sdk/openai-compatible
// (the `compatible` dialect) write them, so an upstream sees the same request whichever client sends it.
import {
  type JSONValue,
  type LanguageModelV4CallOptions,
  type LanguageModelV4Prompt,
  type SharedV4Warning,
  UnsupportedFunctionalityError,
} from '@ai-sdk/provider';

/** Whose request the body follows: OpenAI's own API, or a service that speaks it (Groq, Ollama…). */
export type Dialect = 'openai' | 'compatible';

type Body = Record<string, unknown>;
type Options = Record<string, JSONValue | undefined>;

/** The provider options of the dialect: `openai`, or the service's own name (and `openaiCompatible`). */
function optionsOf(call: LanguageModelV4CallOptions, dialect: Dialect, name: string): Options {
  const given = call.providerOptions ?? {};
  if (dialect === 'openai') return { ...given.openai };
  return { ...given['openai-compatible'], ...given.openaiCompatible, ...given[name], ...given[camelCase(name)] };
}

const camelCase = (name: string) => name.replace(/[-_](\w)/g, (_, letter: string) => letter.toUpperCase());

/**
 * OpenAI's reasoning models (o1, o3, gpt-5…, not the gpt-5 chat models): they take `developer` messages and
 * `max_completion_tokens`, and refuse sampling settings.
 */
export function isReasoningModel(modelId: string): boolean {
  if (/^o\d/.test(modelId)) return true;
  const gpt = /^gpt-(\d+)(?:\.\d+)?(?:-(.*))?$/.exec(modelId);
  return gpt !== null && Number(gpt[1]) >= 5 && !/^chat/.test(gpt[3] ?? '');
}

const base64 = (data: Uint8Array | string) => (typeof data === 'string' ? data : Buffer.from(data).toString('base64'));

function fileUrl(part: Extract<LanguageModelV4Prompt[number]['content'][number], { type: 'file' }>): string {
  const mediaType = part.mediaType === 'image/*' ? 'image/jpeg' : part.mediaType;
  if (part.data.type === 'url') return part.data.url.toString();
  if (part.data.type === 'data') return `data:${mediaType};base64,${base64(part.data.data)}`;
  throw new UnsupportedFunctionalityError({ functionality: `file parts of type ${part.data.type}` });
}

/** A tool call's arguments as the wire takes them: a JSON string. */
function argumentsOf(input: unknown): string {
  if (typeof input === 'string') {
    try {
      JSON.parse(input);
      return input;
    } catch {
      return JSON.stringify(input);
    }
  }
  return JSON.stringify(input);
}

/** The prompt as Chat Completions `messages`. */
export function messagesOf(
  prompt: LanguageModelV4Prompt,
  dialect: Dialect,
  systemRole: 'system' | 'developer',
): Body[] {
  const messages: Body[] = [];
  for (const message of prompt) {
    if (message.role === 'system') {
      messages.push({ role: systemRole, content: message.content });
    } else if (message.role === 'user') {
      const [only] = message.content;
      if (message.content.length === 1 && only?.type === 'text') {
        messages.push({ role: 'user', content: only.text });
        continue;
      }
      messages.push({
        role: 'user',
        content: message.content.map((part) => {
          if (part.type === 'text') return { type: 'text', text: part.text };
          if (!part.mediaType.startsWith('image/'))
            throw new UnsupportedFunctionalityError({ functionality: `file part media type ${part.mediaType}` });
          const detail = dialect === 'openai' ? part.providerOptions?.openai?.imageDetail : undefined;
          return { type: 'image_url', image_url: { url: fileUrl(part), ...(detail ? { detail } : {}) } };
        }),
      });
    } else if (message.role === 'assistant') {
      let text = '';
      let reasoning = '';
      const calls: Body[] = [];
      for (const part of message.content) {
        if (part.type === 'text') text += part.text;
        else if (part.type === 'reasoning') reasoning += part.text;
        else if (part.type === 'tool-call')
          calls.push({
            id: part.toolCallId,
            type: 'function',
            function: { name: part.toolName, arguments: argumentsOf(part.input) },
          });
      }
      messages.push({
        role: 'assistant',
        content: calls.length > 0 ? text || null : text,
        ...(dialect === 'compatible' && reasoning !== '' ? { reasoning_content: reasoning } : {}),
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      });
    } else {
      for (const result of message.content) {
        if (result.type !== 'tool-result') continue;
        const output = result.output;
        const content =
          output.type === 'text' || output.type === 'error-text'
            ? output.value
            : output.type === 'execution-denied'
              ? (output.reason ?? 'Tool call execution denied.')
              : JSON.stringify(output.value);
        messages.push({ role: 'tool', tool_call_id: result.toolCallId, content });
      }
    }
  }
  return messages;
}

function toolsOf(call: LanguageModelV4CallOptions, warnings: SharedV4Warning[]): Body {
  const tools = call.tools?.length ? call.tools : undefined;
  if (!tools) return {};
  const wire: Body[] = [];
  for (const tool of tools) {
    if (tool.type !== 'function') {
      warnings.push({ type: 'unsupported', feature: `tool type: ${tool.type}` });
      continue;
    }
    wire.push({
      type: 'function',
      function: {
        name: tool.name,
        description: tool.description,
        parameters: tool.inputSchema,
        ...(tool.strict != null ? { strict: tool.strict } : {}),
      },
    });
  }
  const choice = call.toolChoice;
  const toolChoice =
    choice === undefined
      ? undefined
      : choice.type === 'tool'
        ? { type: 'function', function: { name: choice.toolName } }
        : choice.type;
  return { tools: wire, tool_choice: toolChoice };
}

/** The option keys the dialect reads itself; a compatible service's other options go into the body as they are. */
const COMPATIBLE_OPTIONS = new Set(['user', 'reasoningEffort', 'textVerbosity', 'strictJsonSchema']);

/** The body of a call (without `stream`), and what the upstream will not get of the options. */
export function requestBody(
  call: LanguageModelV4CallOptions,
  modelId: string,
  dialect: Dialect,
  name: string,
): { body: Body; warnings: SharedV4Warning[] } {
  const warnings: SharedV4Warning[] = [];
  const options = optionsOf(call, dialect, name);
  const reasoning = dialect === 'openai' && (options.forceReasoning === true || isReasoningModel(modelId));
  if (call.topK != null) warnings.push({ type: 'unsupported', feature: 'topK' });
  const format = call.responseFormat;
  const strict = options.strictJsonSchema ?? true;
  const body: Body = {
    model: modelId,
    user: options.user,
    max_tokens: call.maxOutputTokens,
    temperature: call.temperature,
    top_p: call.topP,
    frequency_penalty: call.frequencyPenalty,
    presence_penalty: call.presencePenalty,
    response_format:
      format?.type === 'json'
        ? format.schema != null
          ? {
              type: 'json_schema',
              json_schema: {
                schema: format.schema,
                strict,
                name: format.name ?? 'response',
                description: format.description,
              },
            }
          : { type: 'json_object' }
        : undefined,
    stop: call.stopSequences,
    seed: call.seed,
    reasoning_effort: options.reasoningEffort,
    verbosity: options.textVerbosity,
  };
  if (dialect === 'openai') {
    const logprobs = options.logprobs;
    Object.assign(body, {
      logit_bias: options.logitBias,
      logprobs: logprobs === true || typeof logprobs === 'number' ? true : undefined,
      top_logprobs: typeof logprobs === 'number' ? logprobs : logprobs === true ? 0 : undefined,
      parallel_tool_calls: options.parallelToolCalls,
      max_completion_tokens: options.maxCompletionTokens,
      store: options.store,
      metadata: options.metadata,
      prediction: options.prediction,
      service_tier: options.serviceTier,
      prompt_cache_key: options.promptCacheKey,
      safety_identifier: options.safetyIdentifier,
    });
    if (reasoning) dropForReasoning(body, warnings);
  } else {
    for (const [key, value] of Object.entries({ ...call.providerOptions?.[name] }))
      if (!COMPATIBLE_OPTIONS.has(key)) body[key] = value;
  }
  body.messages = messagesOf(call.prompt, dialect, reasoning ? 'developer' : 'system');
  Object.assign(body, toolsOf(call, warnings));
  return { body, warnings };
}

/** What OpenAI's reasoning models refuse is left out, with a warning; their output budget is `max_completion_tokens`. */
function dropForReasoning(body: Body, warnings: SharedV4Warning[]): void {
  const refused: [string, string][] = [
    ['temperature', 'temperature'],
    ['top_p', 'topP'],
    ['frequency_penalty', 'frequencyPenalty'],
    ['presence_penalty', 'presencePenalty'],
    ['logprobs', 'logprobs'],
    ['top_logprobs', 'topLogprobs'],
    ['logit_bias', 'logitBias'],
  ];
  for (const [field, feature] of refused) {
    if (body[field] == null) continue;
    body[field] = undefined;
    warnings.push({ type: 'unsupported', feature, details: `${feature} is not supported for reasoning models` });
  }
  if (body.max_tokens != null) {
    body.max_completion_tokens ??= body.max_tokens;
    body.max_tokens = undefined;
  }
}
