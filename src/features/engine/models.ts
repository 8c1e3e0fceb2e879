// GET /v1/models and /v1/models/{id}: the catalogue, each model with whether this server can call it. The list is
// the whole catalogue in one answer (as OpenAI's), so OpenAI SDKs' `models.list()` sees every model.
import type { Handlers } from '../../../generated/operations.ts';
import type { RequestContext } from '../../platform/context.ts';
import { Problem } from '../../platform/problems.ts';

export const modelHandlers = {
  async listModels(request, context) {
    const { catalogue } = context.platform.services.engine;
    const { provider, capability, available } = request.query;
    const data = catalogue.entries
      .filter((entry) => provider === undefined || entry.provider === provider)
      .filter((entry) => capability === undefined || entry.capabilities.includes(capability))
      .filter((entry) => available === undefined || catalogue.available(entry) === available)
      .map((entry) => catalogue.present(entry));
    return { status: 200, contentType: 'application/json', body: { object: 'list', data, next_cursor: null } };
  },

  async getModel(request, context) {
    const { catalogue } = context.platform.services.engine;
    const entry = catalogue.get(request.path.id);
    if (!entry)
      throw new Problem('model_not_found', `No model ${request.path.id} in the catalogue; GET /v1/models lists them.`, {
        errors: [{ pointer: 'path/id', detail: 'is not a model of the catalogue' }],
      });
    return { status: 200, contentType: 'application/json', body: catalogue.present(entry) };
  },
} satisfies Pick<Handlers<RequestContext>, 'listModels' | 'getModel'>;
