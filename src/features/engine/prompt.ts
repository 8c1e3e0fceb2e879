// Our messages and tools as the AI SDK's call options take them (LanguageModelV4Prompt, tools, tool choice).
import type { LanguageModelV4CallOptions, LanguageModelV4Prompt } from '@ai-sdk/provider';
import type { CatalogueEntry } from './catalogue-entry.ts';
import type { EngineMessage, EngineTool, EngineToolChoice, GenerationRequest } from './generation.ts';

/** The request's tools as the provider gets them: none when the caller offered none, or chose `none` for a model without tools. */
export function toolsOf(request: GenerationRequest, model: CatalogueEntry): EngineTool[] {
  if (request.toolChoice === 'none' && !model.capabilities.includes('tools')) return [];
  return request.tools ?? [];
}

export function toolChoiceOf(choice: EngineToolChoice): NonNullable<LanguageModelV4CallOptions['toolChoice']> {
  return typeof choice === 'string' ? { type: choice } : { type: 'tool', toolName: choice.name };
}

/** A tool call's arguments as the prompt takes them (a JSON value); text that is not JSON is passed as a string. */
function argumentsValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The AI SDK's prompt of our messages: tool calls as `tool-call` parts, results as `tool-result` parts, images as files. */
export function toPrompt(messages: EngineMessage[]): LanguageModelV4Prompt {
  const toolNames = new Map<string, string>();
  const prompt: LanguageModelV4Prompt = [];
  for (const message of messages) {
    if (message.role === 'system') {
      prompt.push({ role: 'system', content: message.content });
    } else if (message.role === 'user') {
      const parts =
        typeof message.content === 'string' ? [{ type: 'text' as const, text: message.content }] : message.content;
      prompt.push({
        role: 'user',
        content: parts.map((part) =>
          part.type === 'text'
            ? { type: 'text', text: part.text }
            : {
                type: 'file',
                data: part.data instanceof URL ? { type: 'url', url: part.data } : { type: 'data', data: part.data },
                mediaType: part.mediaType,
                ...(part.detail ? { providerOptions: { openai: { imageDetail: part.detail } } } : {}),
              },
        ),
      });
    } else if (message.role === 'assistant') {
      const calls = message.toolCalls ?? [];
      for (const call of calls) toolNames.set(call.id, call.name);
      prompt.push({
        role: 'assistant',
        content: [
          ...(message.content !== '' || calls.length === 0 ? [{ type: 'text' as const, text: message.content }] : []),
          ...calls.map((call) => ({
            type: 'tool-call' as const,
            toolCallId: call.id,
            toolName: call.name,
            input: argumentsValue(call.arguments),
          })),
        ],
      });
    } else {
      const result = {
        type: 'tool-result' as const,
        toolCallId: message.toolCallId,
        toolName: toolNames.get(message.toolCallId) ?? '',
        output: { type: 'text' as const, value: message.content },
      };
      // The results of one answer's calls go together, as providers expect them (Anthropic in one user turn).
      const last = prompt.at(-1);
      if (last?.role === 'tool') last.content.push(result);
      else prompt.push({ role: 'tool', content: [result] });
    }
  }
  return prompt;
}
