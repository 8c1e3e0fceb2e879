// What a request needs of its model (tools, vision, a JSON answer, log probabilities), checked before any call.
import { validationFailed } from '../../platform/problems.ts';
import type { CatalogueEntry } from './catalogue-entry.ts';
import type { GenerationRequest } from './generation.ts';
import { logprobsUnsupported } from './refusal.ts';

/** A capability the request needs that the model lacks (tools it might call, images, a JSON answer, log probabilities), or null. */
export function missingCapability(model: CatalogueEntry, request: GenerationRequest): string | null {
  const has = (capability: CatalogueEntry['capabilities'][number]) => model.capabilities.includes(capability);
  if ((request.tools ?? []).length > 0 && request.toolChoice !== 'none' && !has('tools')) return 'tools';
  const images = request.messages.some(
    (message) =>
      message.role === 'user' &&
      typeof message.content !== 'string' &&
      message.content.some((part) => part.type === 'image'),
  );
  if (images && !has('vision')) return 'vision';
  const format = request.responseFormat;
  if (format?.type === 'json' && format.schema && !has('json_schema')) return 'json_schema';
  if (format?.type === 'json' && !format.schema && !has('json_mode')) return 'json_mode';
  if (request.logprobs != null && !has('logprobs')) return 'logprobs';
  return null;
}

/**
 * A model without `tools` given tools it might call, without `logprobs` asked for log probabilities, or without
 * `vision` given an image: refused before any call.
 */
export function checkCapabilities(model: CatalogueEntry, request: GenerationRequest): void {
  const tools = request.tools ?? [];
  if (tools.length > 0 && request.toolChoice !== 'none' && !model.capabilities.includes('tools')) {
    throw validationFailed([
      { pointer: '/tools', detail: `are not supported by ${model.id} (it lacks the tools capability)` },
    ]);
  }
  if (request.logprobs != null && !model.capabilities.includes('logprobs')) throw logprobsUnsupported(model);
  if (model.capabilities.includes('vision')) return;
  request.messages.forEach((message, i) => {
    if (message.role !== 'user' || typeof message.content === 'string') return;
    const j = message.content.findIndex((part) => part.type === 'image');
    if (j >= 0)
      throw validationFailed([
        {
          pointer: `/messages/${i}/content/${j}`,
          detail: `is an image, which ${model.id} does not read (it lacks the vision capability)`,
        },
      ]);
  });
}
