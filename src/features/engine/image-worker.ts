// The fetch of a request's image by URL, in a worker thread (images.ts): reading megabytes from a socket (the HTTP
// parser, the stream, the copies, the garbage) costs the thread that does it about as much as the bytes, and on the
// event loop one workspace's large images would take that time from every other request. The bytes come back
// without a copy (transferred); a failure comes back as what it was, since an error's class does not cross threads.
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { fetchGuarded, UrlNotAllowedError } from '../../platform/url-guard.ts';

export interface ImageFetchInput {
  url: string;
  allowPrivateNetworks: boolean;
  maxBytes: number;
  timeoutMs: number;
  headers: Record<string, string>;
}

export type ImageFetch =
  | { status: number; contentType: string; truncated: boolean; bytes: Uint8Array }
  | { failure: 'not_allowed' | 'timeout' | 'unreachable'; message: string };

export async function fetchImage(input: ImageFetchInput): Promise<ImageFetch> {
  try {
    const response = await fetchGuarded(input.url, {
      allowPrivateNetworks: input.allowPrivateNetworks,
      timeoutMs: input.timeoutMs,
      maxBytes: input.maxBytes,
      headers: input.headers,
      readBody: (type) => type.startsWith('image/'),
    });
    // An image over the bytes allowed is refused whole (images.ts): its first bytes do not go to the event loop's
    // thread, where they would only be garbage of that thread's heap.
    if (response.truncated)
      return { status: response.status, contentType: response.contentType, truncated: true, bytes: new Uint8Array(0) };
    // A buffer of its own, exactly the bytes' length: what is transferred is the whole buffer.
    const bytes =
      response.bytes.byteOffset === 0 && response.bytes.buffer.byteLength === response.bytes.length
        ? response.bytes
        : new Uint8Array(response.bytes);
    const fetched = {
      status: response.status,
      contentType: response.contentType,
      truncated: response.truncated,
      bytes,
    };
    return move({
      get [transferableSymbol]() {
        return [bytes.buffer];
      },
      get [valueSymbol]() {
        return fetched;
      },
    }) as unknown as ImageFetch;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof UrlNotAllowedError) return { failure: 'not_allowed', message };
    if (error instanceof Error && error.name === 'TimeoutError') return { failure: 'timeout', message };
    return { failure: 'unreachable', message };
  }
}
