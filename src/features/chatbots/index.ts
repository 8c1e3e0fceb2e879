// The chatbots feature: chatbots answering from knowledge bases in a brand voice (chatbots.ts, replies.ts), their
// conversations with escalation and ratings (conversations.ts), and the website widget: its public operations
// authenticated with the embed key (embed.ts) and its pages (widget/pages.ts).
import type { Feature } from '../../platform/feature.ts';
import { chatbotHandlers } from './chatbots.ts';
import { conversationHandlers } from './conversations.ts';
import { chatbotByEmbedKey, embedHandlers, embedKeyAuthenticator } from './embed.ts';
import { escalationEmailJobs } from './escalation-email.ts';
import { chatbots } from './migrations/013_chatbots.ts';
import './schema.ts';
import { widgetPages } from './widget/pages.ts';

export const chatbotsFeature = {
  name: 'chatbots',
  handlers: { ...chatbotHandlers, ...conversationHandlers, ...embedHandlers },
  migrations: { '013_chatbots': chatbots },
  authenticators: { embedKey: embedKeyAuthenticator },
  jobs: escalationEmailJobs,
  pages: (platform) =>
    widgetPages(platform, async (key) => {
      const row = await chatbotByEmbedKey(platform, key, platform.clock.now());
      return (
        row && {
          chatbotId: row.id,
          name: row.name,
          enabled: Boolean(row.enabled),
          allowedOrigins: JSON.parse(row.allowed_origins) as string[],
        }
      );
    }),
} satisfies Feature;

// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { regionBaseUrl } from './chatbots.ts'; // links into a workspace's region (workflows' approval pages)
