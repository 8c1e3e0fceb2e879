// The model of a chat completion or a response, in OpenRouter's forms: `model` (with `models`, which may name it
// first), or `models` alone, whose first is then the model. The engine treats a list that starts with the request's
// model as the whole order (docs/decisions.md, "Fallback models").
import { Problem, validationFailed } from '../../platform/problems.ts';
import type { CatalogueEntry, Engine } from '../engine/index.ts';

export function requestModel(engine: Engine, body: { model?: string; models?: string[] }): CatalogueEntry {
  if (body.model !== undefined) return engine.model(body.model);
  const first = body.models?.[0];
  if (first === undefined) throw validationFailed([{ pointer: '/model', detail: 'is required without models' }]);
  try {
    return engine.model(first);
  } catch (error) {
    // The model's problems point at the field that named it.
    if (!(error instanceof Problem)) throw error;
    const errors = error.errors?.map((e) => (e.pointer === '/model' ? { ...e, pointer: '/models/0' } : e));
    throw new Problem(error.code, error.message, { errors, headers: error.headers, extra: error.extra });
  }
}
