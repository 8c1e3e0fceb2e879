// The fetches of a request's images by URL, in a worker thread (images.ts): reading megabytes from a socket (the HTTP
// parser, the stream, the copies, the garbage) costs the thread that does it about as much as the bytes, and on the
// event loop one workspace's large images would take that time from every other request. The images of a run of
// URLs are read one after another and kept here until all of them are read within the bounds: only then do their
// bytes go to the event loop's thread, without a copy (transferred). A run that is refused sends none, so that a
// request over the bounds leaves no image bytes in the event loop's heap (where they are memory outside the heap that
// the collector answers with full collections). A failure comes back as what it was, since an error's class does not
// cross threads.
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { fetchGuarded, UrlNotAllowedError } from '../../platform/url-guard.ts';

export interface ImageFetchesInput {
  urls: string[];
  allowPrivateNetworks: boolean;
  /** Bytes of one image at most. */
  maxBytes: number;
  /** Bytes of all of them at most. */
  totalBytes: number;
  timeoutMs: number;
  headers: Record<string, string>;
}

/** Why an image was not read. `too_large` with `ofAll`: over the bytes left for all of them, not over its own. */
export type ImageRefusal =
  | { failure: 'not_allowed' | 'timeout' | 'unreachable'; message: string }
  | { failure: 'status'; status: number }
  | { failure: 'not_image'; mediaType: string }
  | { failure: 'too_large'; ofAll: boolean }
  | { failure: 'empty' };

export interface FetchedImage {
  mediaType: string;
  bytes: Uint8Array;
}

/** Every image, in order, or the first that was refused (by its index) and nothing else. */
export type ImageFetches = { images: FetchedImage[] } | { index: number; refusal: ImageRefusal };

async function fetchOne(url: string, maxBytes: number, input: ImageFetchesInput): Promise<FetchedImage | ImageRefusal> {
  try {
    const response = await fetchGuarded(url, {
      allowPrivateNetworks: input.allowPrivateNetworks,
      timeoutMs: input.timeoutMs,
      maxBytes,
      headers: input.headers,
      readBody: (type) => type.startsWith('image/'),
    });
    if (response.status < 200 || response.status > 299) return { failure: 'status', status: response.status };
    const mediaType = response.contentType.split(';')[0]!.trim();
    if (!mediaType.startsWith('image/')) return { failure: 'not_image', mediaType };
    if (response.truncated) return { failure: 'too_large', ofAll: maxBytes < input.maxBytes };
    if (response.bytes.length === 0) return { failure: 'empty' };
    // A buffer of its own, exactly the bytes' length: what is transferred is the whole buffer.
    const bytes =
      response.bytes.byteOffset === 0 && response.bytes.buffer.byteLength === response.bytes.length
        ? response.bytes
        : new Uint8Array(response.bytes);
    return { mediaType, bytes };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof UrlNotAllowedError) return { failure: 'not_allowed', message };
    if (error instanceof Error && error.name === 'TimeoutError') return { failure: 'timeout', message };
    return { failure: 'unreachable', message };
  }
}

export async function fetchImages(input: ImageFetchesInput): Promise<ImageFetches> {
  const images: FetchedImage[] = [];
  let left = input.totalBytes;
  for (const [index, url] of input.urls.entries()) {
    const read = await fetchOne(url, Math.min(input.maxBytes, left), input);
    if ('failure' in read) return { index, refusal: read };
    left -= read.bytes.length;
    images.push(read);
  }
  const fetched = { images };
  return move({
    get [transferableSymbol]() {
      return images.map((image) => image.bytes.buffer);
    },
    get [valueSymbol]() {
      return fetched;
    },
  }) as unknown as ImageFetches;
}
