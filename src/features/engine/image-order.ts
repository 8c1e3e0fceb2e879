// The order and the bounds of a request's images (images.ts): each is read, or its size known, one after another,
// within the bytes of one image and of all of them together, and the first that cannot be read refuses the request
// (those after it are not read). Run in the image thread (image-worker.ts) for a request with an image to fetch, and
// on the event loop's thread for the `data:` URLs before a request's first URL (all of them, when it has none).

/** Why an image was not read. `too_large` with `ofAll`: over the bytes left for the request, not over its own. */
export type ImageRefusal =
  | { failure: 'not_allowed' | 'timeout' | 'unreachable'; message: string }
  | { failure: 'status'; status: number }
  | { failure: 'not_image'; mediaType: string }
  | { failure: 'too_large'; ofAll: boolean }
  | { failure: 'empty' }
  | { failure: 'data_url_form' | 'data_url_base64' };

/**
 * An image of the request: a URL to fetch, a `data:` URL by its decoded size (decoded on the event loop's thread,
 * where its text already is), or one already refused for its form.
 */
export type ImageEntry = { url: string } | { dataBytes: number } | { refusal: ImageRefusal };

export interface ImageBounds {
  /** Bytes of one image at most. */
  maxBytes: number;
  /** Bytes of all of them at most. */
  totalBytes: number;
}

export interface FetchedImage {
  mediaType: string;
  bytes: Uint8Array;
}

/** Every image fetched, in order (null for a `data:` URL), or the first that was refused, by its index. */
export type ImagesRead = { fetched: Array<FetchedImage | null> } | { index: number; refusal: ImageRefusal };

/**
 * The request's images in order within `bounds`; `fetch` reads a URL's at most `maxBytes` (the image thread's; the
 * event loop's thread checks only `data:` URLs, and has none).
 */
export async function admitInOrder(
  entries: readonly ImageEntry[],
  bounds: ImageBounds,
  fetch?: (url: string, maxBytes: number) => Promise<FetchedImage | ImageRefusal>,
): Promise<ImagesRead> {
  const fetched: Array<FetchedImage | null> = [];
  let left = bounds.totalBytes;
  for (const [index, entry] of entries.entries()) {
    if ('refusal' in entry) return { index, refusal: entry.refusal };
    const maxBytes = Math.min(bounds.maxBytes, left);
    if ('dataBytes' in entry) {
      if (entry.dataBytes > maxBytes)
        return { index, refusal: { failure: 'too_large', ofAll: maxBytes < bounds.maxBytes } };
      left -= entry.dataBytes;
      fetched.push(null);
      continue;
    }
    if (!fetch) throw new TypeError('an image by URL is read in the image thread');
    const read = await fetch(entry.url, maxBytes);
    if ('failure' in read) {
      if (read.failure === 'too_large')
        return { index, refusal: { failure: 'too_large', ofAll: maxBytes < bounds.maxBytes } };
      return { index, refusal: read };
    }
    left -= read.bytes.length;
    fetched.push(read);
  }
  return { fetched };
}
