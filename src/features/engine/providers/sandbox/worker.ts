// The sandbox's writing of an answer to a long prompt, run in a worker thread (model.ts, SANDBOX_OFF_LOOP_CHARS).
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { type SandboxOutput, generate as write } from './model.ts';

/** The sandbox model's answer to the call. */
export function generate({
  modelId,
  options,
}: {
  modelId: string;
  options: LanguageModelV4CallOptions;
}): SandboxOutput {
  return write(modelId, options);
}
