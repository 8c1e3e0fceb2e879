// The `sandbox` provider of the registry: always available, no key and no network; its models are model.ts (chat)
// and embedding-model.ts (embeddings).
import type { Provider } from '../provider.ts';
import { sandboxEmbeddingModel } from './embedding-model.ts';
import { sandboxModel } from './model.ts';

export const sandbox: Provider<Record<string, never>> = {
  enabledBy: null,
  read: () => ({}),
  languageModel: (_settings, id) => sandboxModel(id),
  embeddingModel: (_settings, id) => sandboxEmbeddingModel(id),
};
