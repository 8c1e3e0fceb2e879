// The checks both API surfaces make of a request's images (Chat Completions' `image_url` parts, the Responses API's
// `input_image` parts) and their reading by the engine: each wire finds its parts, where they are, and this decides.
import type { RequestContext } from '../../platform/context.ts';
import { validationFailed } from '../../platform/problems.ts';
import { type CatalogueEntry, IMAGE_LIMITS } from '../engine/index.ts';
import type { EngineContentPart } from './engine-types.ts';

/** An image part of a request, at its pointer; `misplaced` says why it may not be where it is (a wire's own rule). */
export interface ImagePart {
  pointer: string;
  url: string;
  detail: 'auto' | 'low' | 'high' | undefined;
  misplaced?: string;
}

/**
 * The request's images, checked in the order they appear: each where its wire allows it, only for a model that reads
 * images, at most IMAGE_LIMITS.perRequest. The first part that fails is the problem.
 */
export function checkImages(parts: Iterable<ImagePart>, model: CatalogueEntry): ImagePart[] {
  const found: ImagePart[] = [];
  for (const part of parts) {
    const { pointer } = part;
    if (part.misplaced !== undefined) throw validationFailed([{ pointer, detail: part.misplaced }]);
    if (!model.capabilities.includes('vision'))
      throw validationFailed([
        { pointer, detail: `is an image, which ${model.id} does not read (it lacks the vision capability)` },
      ]);
    if (found.length === IMAGE_LIMITS.perRequest)
      throw validationFailed([
        { pointer, detail: `is image number ${found.length + 1}; a request holds at most ${IMAGE_LIMITS.perRequest}` },
      ]);
    found.push(part);
  }
  return found;
}

/**
 * The images read, by pointer. Not for a caller whose limit is spent (checked first, so an image is not fetched for
 * nothing); within the request's and the process's budgets; what they hold is given back once the request is answered.
 */
export async function readImages(
  found: ImagePart[],
  projectId: string | null,
  context: RequestContext,
): Promise<Map<string, EngineContentPart>> {
  const { engine } = context.platform.services;
  if (found.length > 0)
    await engine.precheck({
      workspaceId: context.caller.workspace.id,
      apiKeyId: context.caller.apiKey.id,
      projectId,
      now: context.now,
    });
  const read = await engine.readImages(
    found.map(({ pointer, url, detail }) => ({ url, pointer, detail })),
    { allowPrivateNetworks: context.platform.config.webhooksAllowLoopback },
  );
  context.onFinished(read.release);
  return new Map(found.map(({ pointer }, n) => [pointer, read.images[n]!]));
}
