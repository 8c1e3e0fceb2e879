// The extraction that extract-pool.ts runs in worker threads. An ExtractionError does not cross a thread as itself
// (structured cloning keeps an error's message, not its class or code): it is returned as data.
import { type Chunk, type ChunkOptions, chunkText } from './chunk.ts';
import {
  type ExtractedText,
  ExtractionError,
  type ExtractionErrorCode,
  type ExtractOptions,
  extractText,
  htmlToMarkdown,
} from './extract.ts';

export async function extract(input: {
  bytes: Uint8Array;
  mediaType: string;
  options: ExtractOptions;
}): Promise<ExtractedText | { error: { code: ExtractionErrorCode; message: string } }> {
  try {
    return await extractText(input.bytes, input.mediaType, input.options);
  } catch (error) {
    if (error instanceof ExtractionError) return { error: { code: error.code, message: error.message } };
    throw error;
  }
}

export function chunk(input: { text: string; options: ChunkOptions }): Promise<Chunk[]> {
  return chunkText(input.text, input.options);
}

export function html(input: { page: string; url?: string }): ReturnType<typeof htmlToMarkdown> {
  return htmlToMarkdown(input.page, input.url);
}
