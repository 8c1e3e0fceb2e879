import type { FinishReason } from './generation.ts';

/** The AI SDK's unified finish reason of a choice as OpenAI names it. */
export function finishReasonOf(reason: string, calledTools: boolean): FinishReason {
  if (reason === 'length') return 'length';
  if (reason === 'content-filter') return 'content_filter';
  // A choice that called tools waits for their results, whatever the provider says (OpenAI answers `stop` when
  // tool_choice names the function): clients loop on `tool_calls`.
  if (reason === 'tool-calls' || calledTools) return 'tool_calls';
  return 'stop';
}
