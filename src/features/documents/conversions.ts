// A document's conversions between Markdown, Yjs and HTML cost more than linear time in its size (hundreds of
// milliseconds for a document of 200,000 characters), so those of long documents run in a pool of worker threads
// (markdown-worker.ts), where one document does not hold the event loop every other request is served on. A short
// one is converted in place, where a thread's round trip would cost more than the work. A live document is sent to a
// thread as its Yjs state, taken at once; what the thread returns is applied to it, or rendered from that state.
// Callers work out what they can before they take a row's lock (realtime.ts): on SQLite a transaction holds the one
// connection that every request's queries wait for.
import * as Y from 'yjs';
import { workerPool } from '../../platform/worker-pool.ts';
import { renderHtml, renderMarkdown, replaceContent, yDocFromMarkdown } from './markdown.ts';
import * as MarkdownWorker from './markdown-worker.ts';

/** The Markdown characters, or bytes of Yjs state, from which a conversion runs in a worker thread. */
export const OFF_LOOP_SIZE = 16 * 1024;

const offLoop = workerPool<typeof MarkdownWorker>(new URL('./markdown-worker.ts', import.meta.url));

/** The Yjs state of a new document holding this Markdown, and the Markdown that state renders to. */
export async function seeded(text: string): Promise<{ state: Uint8Array; markdown: string }> {
  if (text.length >= OFF_LOOP_SIZE) return offLoop('seed', { text });
  const doc = yDocFromMarkdown(text);
  return { state: Y.encodeStateAsUpdate(doc), markdown: renderMarkdown(doc) };
}

/** A live document's state now, and the Markdown it renders to. */
export async function snapshot(doc: Y.Doc): Promise<{ state: Uint8Array; markdown: string }> {
  const state = Y.encodeStateAsUpdate(doc);
  if (state.length >= OFF_LOOP_SIZE) return { state, markdown: await offLoop('render', { state }) };
  return { state, markdown: renderMarkdown(doc) };
}

/** The Markdown a saved Yjs state renders to. */
export async function renderedState(state: Uint8Array): Promise<string> {
  return state.length >= OFF_LOOP_SIZE ? offLoop('render', { state }) : MarkdownWorker.render({ state });
}

/**
 * What makes a saved Yjs state hold this Markdown (replaceContent: only the blocks that differ change): the update,
 * and the state and Markdown once it is applied.
 */
export async function replacedState(
  state: Uint8Array,
  text: string,
): Promise<{ update: Uint8Array; state: Uint8Array; markdown: string }> {
  return state.length >= OFF_LOOP_SIZE || text.length >= OFF_LOOP_SIZE
    ? offLoop('replace', { state, text })
    : MarkdownWorker.replace({ state, text });
}

/**
 * What makes a long live document hold this Markdown, worked out in a thread on its state of now: the update that
 * changes only the blocks that differ (replaceContent), and the document's state and Markdown once it is applied.
 * Undefined for a short document and text, which replaceLive changes in place.
 */
export async function replacement(
  doc: Y.Doc,
  text: string,
): Promise<{ update: Uint8Array; state: Uint8Array; markdown: string } | undefined> {
  const state = Y.encodeStateAsUpdate(doc);
  if (state.length < OFF_LOOP_SIZE && text.length < OFF_LOOP_SIZE) return undefined;
  return offLoop('replace', { state, text });
}

/**
 * Makes a live document hold this Markdown, changing only the blocks that differ (replaceContent), in a transaction
 * of `origin`. A long one's change is worked out in a thread on its state of now and applied when it comes back: an
 * editor's change that arrived meanwhile is merged with it, as if it had come just after.
 */
export async function replaceLive(doc: Y.Doc, text: string, origin: unknown): Promise<void> {
  const worked = await replacement(doc, text);
  if (worked) Y.applyUpdate(doc, worked.update, origin);
  else replaceContent(doc, text, origin);
}

/** Markdown → HTML that is safe to insert into a page (renderHtml). */
export async function htmlOf(text: string): Promise<string> {
  return text.length >= OFF_LOOP_SIZE ? offLoop('html', { text }) : renderHtml(text);
}
