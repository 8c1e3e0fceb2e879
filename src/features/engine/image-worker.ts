// The images of a request, read in a worker thread (images.ts): fetching an image by URL reads megabytes from a socket
// (the HTTP parser, the stream, the copies, the garbage), which costs the thread that does it about as much as the
// bytes, and on the event loop one workspace's large images would take that time from every other request. A request's
// images are read in order, within the bounds of one image and of all of them together; those fetched stay here until
// every image of the request is known to fit, and only then go to the event loop's thread, without a copy
// (transferred). A request that is refused sends none, so that images over the bounds leave no bytes in the event
// loop's heap, where they are memory outside the heap that V8 answers with full collections. A failure comes back as
// what it was, since an error's class does not cross threads.
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { fetchGuarded, UrlNotAllowedError } from '../../platform/url-guard.ts';
import {
  admitInOrder,
  type FetchedImage,
  type ImageBounds,
  type ImageEntry,
  type ImageRefusal,
  type ImagesRead,
} from './image-order.ts';

export interface ImagesInput extends ImageBounds {
  entries: ImageEntry[];
  allowPrivateNetworks: boolean;
  timeoutMs: number;
  headers: Record<string, string>;
}

async function fetchOne(url: string, maxBytes: number, input: ImagesInput): Promise<FetchedImage | ImageRefusal> {
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
    if (response.truncated) return { failure: 'too_large', ofAll: false };
    if (response.bytes.length === 0) return { failure: 'empty' };
    // A buffer of its own, exactly the bytes' length: what is transferred is the whole buffer, once.
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

export async function readImagesInOrder(input: ImagesInput): Promise<ImagesRead> {
  const read = await admitInOrder(input.entries, input, (url, maxBytes) => fetchOne(url, maxBytes, input));
  if ('refusal' in read) return read;
  const buffers = read.fetched.flatMap((image) => (image ? [image.bytes.buffer] : []));
  return move({
    get [transferableSymbol]() {
      return buffers;
    },
    get [valueSymbol]() {
      return read;
    },
  }) as unknown as ImagesRead;
}
