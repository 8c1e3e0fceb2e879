// What every generation of the chat wing asks of the engine besides its wire's own fields, the same for Chat
// Completions and the Responses API: who asks, for which project and voice, the model and its fallbacks.
import { byRequest } from '../../platform/audit.ts';
import type { RequestContext } from '../../platform/context.ts';
import type { CatalogueEntry, GenerationRequest } from '../engine/index.ts';

/** The fields of a generation request that its wire's adapter gives (its messages, sampling, tools). */
export type WireGeneration = Omit<
  GenerationRequest,
  | 'workspaceId'
  | 'apiKeyId'
  | 'userId'
  | 'origin'
  | 'feature'
  | 'model'
  | 'fallbackModels'
  | 'fallbackModelsDefault'
  | 'projectId'
  | 'voiceId'
  | 'signal'
  | 'now'
>;

/**
 * The generation request of a chat request: the request's `models` as fallbacks, else its project's
 * (`projectDefaults`, empty where a wire does not use them), then the wire's fields.
 */
export function chatGeneration(
  context: RequestContext,
  ask: {
    model: CatalogueEntry;
    models: string[] | undefined;
    projectDefaults: string[];
    projectId: string | null;
    voiceId: string | null;
  },
  wire: WireGeneration,
): GenerationRequest {
  const fallbackModels = ask.models ?? (ask.projectDefaults.length > 0 ? ask.projectDefaults : undefined);
  return {
    workspaceId: context.caller.workspace.id,
    apiKeyId: context.caller.apiKey.id,
    userId: context.caller.userId,
    origin: byRequest(context),
    feature: 'chat',
    model: ask.model.id,
    ...(fallbackModels ? { fallbackModels, fallbackModelsDefault: !ask.models } : {}),
    projectId: ask.projectId,
    voiceId: ask.voiceId,
    ...wire,
    signal: context.signal,
    now: context.now,
  };
}
