// The reference editor in the browser (page.ts bundles it): a Tiptap editor bound to the document's Yjs content
// (the XmlFragment `default`), kept in sync with /v1/documents/{id}/realtime by the Hocuspocus provider.
//
// The token comes from the URL fragment (`#token=edt_…`) and travels only in the provider's authentication message,
// never in a URL the server sees. The editor stays read-only until the server accepts the token with the read-write
// scope.
import { HocuspocusProvider, WebSocketStatus } from '@hocuspocus/provider';
import { Editor } from '@tiptap/core';
import { Collaboration } from '@tiptap/extension-collaboration';
import * as Y from 'yjs';
import { documentExtensions } from '../extensions.ts';

declare global {
  interface Window {
    /** The page's editor, for tests and for trying things in the console. */
    editor?: Editor;
  }
}

const statusLine = document.getElementById('status')!;

function show(state: string, text = state): void {
  statusLine.dataset.state = state;
  statusLine.textContent = text;
}

const documentId = decodeURIComponent(location.pathname.split('/').pop() ?? '');
const token = new URLSearchParams(location.hash.slice(1)).get('token');
// A token pasted into the address later (or another one) takes a fresh start.
window.addEventListener('hashchange', () => location.reload());

if (!token) {
  show('no-token', 'no token: see below');
  document.getElementById('missing-token')!.hidden = false;
} else {
  // What the status line says, from the provider's events.
  let connection: 'connecting' | 'connected' | 'disconnected' = 'connecting';
  let synced = false;
  let readOnly = false;
  let refused: string | null = null;

  const ydoc = new Y.Doc();
  const render = () => {
    if (refused !== null) return show('refused', `refused: ${refused}`);
    const state = connection !== 'connected' ? connection : synced ? 'synced' : 'connected';
    show(state, readOnly ? `${state} · read-only` : state);
  };

  const editor = new Editor({
    element: document.getElementById('editor'),
    // Tiptap's base styles are in editor.css: the page's policy forbids the <style> element it would inject.
    injectCSS: false,
    // Editable once the server has accepted the token for editing.
    editable: false,
    extensions: [
      // The server's schema (tables included); the collaboration extension keeps the undo history (of this
      // browser's own changes only).
      ...documentExtensions({ undoRedo: false }),
      Collaboration.configure({ document: ydoc, field: 'default' }),
    ],
  });

  const provider = new HocuspocusProvider({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/documents/${encodeURIComponent(documentId)}/realtime`,
    name: documentId,
    document: ydoc,
    token,
    onStatus({ status }) {
      connection =
        status === WebSocketStatus.Connected
          ? 'connected'
          : status === WebSocketStatus.Connecting
            ? 'connecting'
            : 'disconnected';
      if (connection !== 'connected') synced = false;
      render();
    },
    onSynced({ state }) {
      synced = state;
      render();
    },
    onAuthenticated({ scope }) {
      readOnly = scope === 'readonly';
      statusLine.dataset.scope = scope;
      editor.setEditable(!readOnly);
      render();
    },
    onAuthenticationFailed({ reason }) {
      refused = reason || 'the token was not accepted';
      editor.setEditable(false);
      render();
      // Reconnecting would only send the same token again.
      provider.destroy();
    },
  });

  window.editor = editor;
  render();
}
