// The sandbox embeddings of long texts, run in worker threads (embedding-model.ts), off the event loop.
import { sandboxEmbedding } from './embedding.ts';

/** The sandbox embedding of each text. */
export function embedEach({ texts, dimensions }: { texts: string[]; dimensions: number }): number[][] {
  return texts.map((text) => sandboxEmbedding(text, dimensions));
}
