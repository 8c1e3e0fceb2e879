// The conversions of long documents that conversions.ts runs in worker threads, off the event loop. A document
// crosses as its Yjs state (an update from an empty document), which a thread can be sent.
import * as Y from 'yjs';
import { renderHtml, renderMarkdown, replaceContent, yDocFromMarkdown } from './markdown.ts';

function docOf(state: Uint8Array): Y.Doc {
  const doc = new Y.Doc();
  Y.applyUpdate(doc, state);
  return doc;
}

/** The state of a new document holding this Markdown, and the Markdown it renders to. */
export function seed({ text }: { text: string }): { state: Uint8Array; markdown: string } {
  const doc = yDocFromMarkdown(text);
  return { state: Y.encodeStateAsUpdate(doc), markdown: renderMarkdown(doc) };
}

/** The Markdown a document's state renders to. */
export function render({ state }: { state: Uint8Array }): string {
  return renderMarkdown(docOf(state));
}

/**
 * What makes a document of this state hold `text` (replaceContent: only the blocks that differ change), as an update
 * to apply to it, and the document's state and Markdown once it is applied.
 */
export function replace({ state, text }: { state: Uint8Array; text: string }): {
  update: Uint8Array;
  state: Uint8Array;
  markdown: string;
} {
  const doc = docOf(state);
  const before = Y.encodeStateVector(doc);
  replaceContent(doc, text, null);
  return {
    update: Y.encodeStateAsUpdate(doc, before),
    state: Y.encodeStateAsUpdate(doc),
    markdown: renderMarkdown(doc),
  };
}

/** Markdown → HTML (renderHtml). */
export function html({ text }: { text: string }): string {
  return renderHtml(text);
}
