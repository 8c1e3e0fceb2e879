// The documents feature: Markdown documents with a full version history, real-time editing over Hocuspocus on the
// API's own port (realtime.ts), AI commands through the engine (command-handler.ts), publishing with a public page,
// and a reference editor page (editor/).
import type { Feature } from '../../platform/feature.ts';
import { commandHandlers } from './command-handler.ts';
import { documentHandlers } from './documents.ts';
import { editorPages } from './editor/page.ts';
import { warmUpConversions } from './markdown.ts';
import { documents } from './migrations/011_documents.ts';
import './schema.ts';
import { versionHandlers } from './versions.ts';

export const documentsFeature = {
  name: 'documents',
  handlers: { ...documentHandlers, ...versionHandlers, ...commandHandlers },
  migrations: { '011_documents': documents },
  pages: editorPages,
  upgrades: (platform) => [platform.services.realtime.endpoint()],
  // Creating, restoring and commanding a document convert Markdown: the first would wait for that code's compile.
  preload: warmUpConversions,
} satisfies Feature;

export { commandOnDocument } from './command-handler.ts'; // a workflow step runs a document command
// Signing keys live in this feature's table; chatbots' transcript links and workflows' approval links sign with them.
export { storedSigningKey } from './edit-tokens.ts';
export { Realtime } from './realtime.ts'; // the real-time sessions, a process-wide service built by src/services.ts
// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { documentsOf } from './store.ts'; // workflows check that a step's document is the workspace's
