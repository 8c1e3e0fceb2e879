// The documents feature: Markdown documents with a full version history, real-time editing over Hocuspocus on the
// API's own port (realtime.ts), AI commands through the engine (command-handler.ts), publishing with a public page,
// and a reference editor page (editor/).
import type { Feature } from '../../platform/feature.ts';
import { commandHandlers } from './command-handler.ts';
import { documentHandlers } from './documents.ts';
import { editorPages } from './editor/page.ts';
import { documents } from './migrations/011_documents.ts';
import './schema.ts';
import { versionHandlers } from './versions.ts';

export const documentsFeature = {
  name: 'documents',
  handlers: { ...documentHandlers, ...versionHandlers, ...commandHandlers },
  migrations: { '011_documents': documents },
  pages: editorPages,
  upgrades: (platform) => [platform.services.realtime.endpoint()],
} satisfies Feature;
