// Real Hocuspocus clients for the realtime tests and the benchmark: a provider per editor on the server's
// WebSocket endpoint, and helpers that edit the Yjs document the way the editor does (paragraphs in `default`).
import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider';
import * as Y from 'yjs';
import { renderMarkdown } from '../../src/features/documents/markdown.ts';

export interface Editor {
  provider: HocuspocusProvider;
  doc: Y.Doc;
  /** Resolves once authenticated and synced, with the scope the server granted; rejects with the refusal's reason. */
  ready: Promise<'readonly' | 'read-write'>;
  /** Resolves with the close code when the server closes the socket. */
  closed: Promise<number>;
  text(): string;
  close(): void;
}

export function connectEditor(
  baseUrl: string,
  documentId: string,
  token: string,
  options: { tokenIn?: 'query' | 'message' } = {},
): Editor {
  const base = `${baseUrl.replace(/^http/, 'ws')}/v1/documents/${documentId}/realtime`;
  const url = options.tokenIn === 'query' ? `${base}?token=${encodeURIComponent(token)}` : base;
  const websocketProvider = new HocuspocusProviderWebsocket({ url, maxAttempts: 1 });
  let scope: 'readonly' | 'read-write' | undefined;
  let synced = false;
  let settle: { resolve: (scope: 'readonly' | 'read-write') => void; reject: (error: Error) => void };
  const ready = new Promise<'readonly' | 'read-write'>((resolve, reject) => (settle = { resolve, reject }));
  const provider = new HocuspocusProvider({
    websocketProvider,
    name: documentId,
    token: options.tokenIn === 'query' ? '' : token,
    // Ready once both have happened, in whichever order they come.
    onAuthenticated: ({ scope: granted }) => {
      scope = granted as 'readonly' | 'read-write';
      if (synced) settle.resolve(scope);
    },
    onAuthenticationFailed: ({ reason }) => settle.reject(new Error(reason)),
    onSynced: ({ state }) => {
      synced ||= state;
      if (synced && scope) settle.resolve(scope);
    },
  });
  provider.attach();
  const closed = new Promise<number>((resolve) =>
    websocketProvider.on('close', ({ event }: { event: { code: number } }) => resolve(event.code)),
  );
  ready.catch(() => {});
  return {
    provider,
    doc: provider.document,
    ready,
    closed,
    text: () => renderMarkdown(provider.document),
    close: () => {
      provider.destroy();
      websocketProvider.destroy();
    },
  };
}

/** Appends a paragraph, as typing a line in the editor does. */
export function appendParagraph(doc: Y.Doc, text: string): void {
  doc.transact(() => {
    const paragraph = new Y.XmlElement('paragraph');
    paragraph.insert(0, [new Y.XmlText(text)]);
    const fragment = doc.getXmlFragment('default');
    fragment.insert(fragment.length, [paragraph]);
  });
}

/** Types into the last paragraph, one character per transaction, as a keyboard does. */
export function typeInto(doc: Y.Doc, text: string): void {
  const fragment = doc.getXmlFragment('default');
  const last = fragment.get(fragment.length - 1) as Y.XmlElement;
  const textNode = last.get(0) as Y.XmlText;
  for (const char of text) doc.transact(() => textNode.insert(textNode.length, char));
}
