// The chatbots feature, with the public widget's operations (`embedKey` scheme). Not built yet: its operations are
// listed in `notImplemented` (src/handlers.ts). Until chatbots exist there is no embed key to check a header against,
// so a request without one is refused (401) and one with one gets the 501 of an operation not built.
import type { Feature } from '../../platform/feature.ts';
import { Problem } from '../../platform/problems.ts';

export const chatbotsFeature = {
  name: 'chatbots',
  handlers: {},
  authenticators: {
    embedKey(req) {
      if (!req.get('x-embed-key')) throw new Problem('invalid_embed_key', "Send the chatbot's embed key in the X-Embed-Key header.");
    },
  },
} satisfies Feature;
