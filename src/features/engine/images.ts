// The images of a request (OpenAI's `image_url` parts), read before the model is called, so that every provider gets
// the bytes and one behaviour holds for all of them: a `data:` URL is decoded (base64 only), an `https:` URL is
// fetched by this server through the platform's SSRF guard (public addresses only, every redirect hop checked), with
// a timeout, a size cap and an `image/*` content type. A provider never fetches a caller's URL itself, so none can be
// pointed at a private network, and the sandbox reads them like the others. An image that cannot be read is a
// `422 image_unreadable` naming its part.
import { Problem } from '../../platform/problems.ts';
import { workerPool } from '../../platform/worker-pool.ts';
import type { EngineContentPart } from './generation.ts';
import type { ImageBudget } from './image-budget.ts';
import { admitInOrder, type ImageEntry, type ImageRefusal } from './image-order.ts';
import type * as ImageWorker from './image-worker.ts';

export type EngineImagePart = Extract<EngineContentPart, { type: 'image' }>;

export const IMAGE_LIMITS = {
  /** Images in one request. */
  perRequest: 10,
  /** Bytes of one image, decoded or fetched. */
  maxBytes: 20 * 1024 * 1024,
  /** Bytes of all the images of one request. */
  perRequestBytes: 50 * 1024 * 1024,
  /** What a refusal for the process's budget (images_busy) asks a client to wait. */
  retryAfterSeconds: 5,
  /** For fetching one image, redirects and body included. */
  timeoutMs: 10_000,
} as const;

/**
 * Images fetched by URL are read in worker threads (image-worker.ts), many at once in each: a fetch mostly waits on
 * its socket. How many the process reads at once is bounded by the image budget (image-budget.ts).
 */
const fetchOffLoop = workerPool<typeof ImageWorker>(new URL('./image-worker.ts', import.meta.url), {
  concurrentTasksPerWorker: 64,
});

const DATA_URL = /^data:(image\/[A-Za-z0-9.+-]+);base64,/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function unreadable(pointer: string, detail: string): Problem {
  return new Problem('image_unreadable', `The image at ${pointer} could not be read: ${detail}.`, {
    errors: [{ pointer, detail }],
  });
}

function refused(pointer: string, refusal: ImageRefusal): Problem {
  switch (refusal.failure) {
    case 'data_url_form':
      return unreadable(pointer, 'a data: URL must be a base64-encoded image (data:image/<type>;base64,…)');
    case 'data_url_base64':
      return unreadable(pointer, 'its data: URL is not valid base64');
    case 'not_allowed':
      return unreadable(pointer, refusal.message);
    case 'timeout':
      return unreadable(pointer, `it did not arrive within ${IMAGE_LIMITS.timeoutMs / 1000} seconds`);
    case 'unreachable':
      return unreadable(pointer, `it could not be fetched (${refusal.message})`);
    case 'status':
      return unreadable(pointer, `its URL answered ${refusal.status}`);
    case 'not_image':
      return unreadable(pointer, `its URL answered ${refusal.mediaType || 'no content type'}, not an image`);
    case 'too_large':
      return unreadable(
        pointer,
        refusal.ofAll
          ? `the request's images are larger than ${IMAGE_LIMITS.perRequestBytes / 1024 / 1024} MB in all`
          : `it is larger than ${IMAGE_LIMITS.maxBytes / 1024 / 1024} MB`,
      );
    case 'empty':
      return unreadable(pointer, 'its URL answered an empty body');
  }
}

/** An image as the worker takes it: a URL, or a `data:` URL by its form and decoded size, known from its text. */
function entryOf(url: string): ImageEntry {
  if (!url.startsWith('data:')) return { url };
  const dataUrl = DATA_URL.exec(url);
  if (!dataUrl) return { refusal: { failure: 'data_url_form' } };
  const payload = url.slice(dataUrl[0].length);
  if (payload.length === 0 || payload.length % 4 !== 0 || !BASE64.test(payload))
    return { refusal: { failure: 'data_url_base64' } };
  return { dataBytes: (payload.length / 4) * 3 - (payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0) };
}

/** A `data:` URL's image, decoded; its form and size were checked (entryOf). */
function decoded(url: string, detail: ImageSource['detail']): EngineImagePart {
  const dataUrl = DATA_URL.exec(url)!;
  return {
    type: 'image',
    data: new Uint8Array(Buffer.from(url.slice(dataUrl[0].length), 'base64')),
    mediaType: dataUrl[1]!.toLowerCase(),
    ...(detail ? { detail } : {}),
  };
}

/**
 * Images in order, within IMAGE_LIMITS.maxBytes each and `totalBytes` together: all of them, or the problem of the
 * first that could not be read. With a URL among them they are read in a worker thread, whose fetched bytes come only
 * when all of them fit; `data:` URLs alone are checked here.
 */
async function readInOrder(
  sources: readonly ImageSource[],
  totalBytes: number,
  allowPrivateNetworks: boolean,
): Promise<EngineImagePart[]> {
  const entries = sources.map((source) => entryOf(source.url));
  const bounds = { maxBytes: IMAGE_LIMITS.maxBytes, totalBytes };
  // The data: URLs before the first URL are checked here: a request refused for them starts no thread.
  const firstUrl = entries.findIndex((entry) => 'url' in entry);
  const known = await admitInOrder(firstUrl === -1 ? entries : entries.slice(0, firstUrl), bounds);
  const read =
    'refusal' in known || firstUrl === -1
      ? known
      : await fetchOffLoop('readImagesInOrder', {
          entries,
          ...bounds,
          allowPrivateNetworks,
          timeoutMs: IMAGE_LIMITS.timeoutMs,
          headers: { accept: 'image/*', 'user-agent': 'content-service/0.1 (chat images)' },
        });
  if ('refusal' in read) throw refused(sources[read.index]!.pointer, read.refusal);
  return read.fetched.map((image, index) => {
    const { url, detail } = sources[index]!;
    if (!image) return decoded(url, detail);
    return { type: 'image', data: image.bytes, mediaType: image.mediaType, ...(detail ? { detail } : {}) };
  });
}

/** An `image_url` part of a request: its URL, the request field it is at, and its detail. */
export interface ImageSource {
  url: string;
  pointer: string;
  detail?: 'auto' | 'low' | 'high';
}

/** The most bytes an image can be before it is read: a `data:` URL's from its length, a fetched one's the limit. */
function boundOf(source: ImageSource): number {
  const dataUrl = DATA_URL.exec(source.url);
  const decoded = dataUrl ? Math.ceil(((source.url.length - dataUrl[0].length) / 4) * 3) : IMAGE_LIMITS.maxBytes;
  return Math.min(decoded, IMAGE_LIMITS.maxBytes);
}

/**
 * A request's images, read one after another within the request's total (IMAGE_LIMITS.perRequestBytes), after the
 * process's budget granted what they can be: `release` gives it back once the request is done with them. Over the
 * budget nothing is fetched: `503 images_busy` with Retry-After.
 */
export async function readImages(
  budget: ImageBudget,
  sources: readonly ImageSource[],
  options: { allowPrivateNetworks: boolean },
): Promise<{ images: EngineImagePart[]; release: () => void }> {
  if (sources.length === 0) return { images: [], release: () => {} };
  const bound = Math.min(
    IMAGE_LIMITS.perRequestBytes,
    sources.reduce((sum, source) => sum + boundOf(source), 0),
  );
  const release = budget.take(bound);
  if (!release)
    throw new Problem(
      'images_busy',
      `This server is reading as many images as it holds at once; retry in ${IMAGE_LIMITS.retryAfterSeconds} seconds.`,
      { headers: { 'Retry-After': String(IMAGE_LIMITS.retryAfterSeconds) } },
    );
  try {
    const images = await readInOrder(sources, IMAGE_LIMITS.perRequestBytes, options.allowPrivateNetworks);
    return { images, release };
  } catch (error) {
    release();
    throw error;
  }
}
