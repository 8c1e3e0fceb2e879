// Extracting the text of a file or a page (extract.ts) costs in proportion to its bytes: PDF.js, a Word file's
// XML, the DOM of a page; cutting the text into chunks (chunk.ts) counts the tokens of every piece it tries. From
// OFF_LOOP_BYTES on, each runs in a worker thread (piscina), so that one tenant's file
// does not hold the event loop every other request is served on; smaller ones are read in place, where a thread's
// round trip would cost more than the work.
import { workerPool } from '../../platform/worker-pool.ts';
import { type Chunk, type ChunkOptions, chunkText } from './chunk.ts';
import { type ExtractedText, ExtractionError, type ExtractOptions, extractText, htmlToMarkdown } from './extract.ts';
import type * as ExtractWorker from './extract-worker.ts';

/** The bytes (or characters, for a page) from which extraction goes to a worker thread. */
export const OFF_LOOP_BYTES = 64 * 1024;

const run = workerPool<typeof ExtractWorker>(new URL('./extract-worker.ts', import.meta.url));

/** extractText, in a worker thread for OFF_LOOP_BYTES or more; its ExtractionError is thrown here as it was there. */
export async function extractTextOffLoop(
  bytes: Uint8Array,
  mediaType: string,
  options: ExtractOptions = {},
): Promise<ExtractedText> {
  if (bytes.length < OFF_LOOP_BYTES) return extractText(bytes, mediaType, options);
  const result = await run('extract', { bytes, mediaType, options });
  if ('error' in result) throw new ExtractionError(result.error.code, result.error.message);
  return result;
}

/** htmlToMarkdown, in a worker thread for a page of OFF_LOOP_BYTES characters or more. */
export async function htmlToMarkdownOffLoop(page: string, url?: string): Promise<ReturnType<typeof htmlToMarkdown>> {
  if (page.length < OFF_LOOP_BYTES) return htmlToMarkdown(page, url);
  return run('html', { page, url });
}

/** chunkText, in a worker thread for a text of OFF_LOOP_BYTES characters or more. */
export async function chunkTextOffLoop(text: string, options: ChunkOptions): Promise<Chunk[]> {
  if (text.length < OFF_LOOP_BYTES) return chunkText(text, options);
  return run('chunk', { text, options });
}
