// The images of a request (OpenAI's `image_url` parts), read before the model is called, so that every provider gets
// the bytes and one behaviour holds for all of them: a `data:` URL is decoded (base64 only), an `https:` URL is
// fetched by this server through the platform's SSRF guard (public addresses only, every redirect hop checked), with
// a timeout, a size cap and an `image/*` content type. A provider never fetches a caller's URL itself, so none can be
// pointed at a private network, and the sandbox reads them like the others. An image that cannot be read is a
// `422 image_unreadable` naming its part.
import { Problem } from '../../platform/problems.ts';
import { fetchGuarded, type GuardedResponse, UrlNotAllowedError } from '../../platform/url-guard.ts';
import type { EngineContentPart } from './generation.ts';

export type EngineImagePart = Extract<EngineContentPart, { type: 'image' }>;

export const IMAGE_LIMITS = {
  /** Images in one request. */
  perRequest: 10,
  /** Bytes of one image, decoded or fetched. */
  maxBytes: 20 * 1024 * 1024,
  /** For fetching one image, redirects and body included. */
  timeoutMs: 10_000,
} as const;

const DATA_URL = /^data:(image\/[A-Za-z0-9.+-]+);base64,/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function unreadable(pointer: string, detail: string): Problem {
  return new Problem('image_unreadable', `The image at ${pointer} could not be read: ${detail}.`, {
    errors: [{ pointer, detail }],
  });
}

export interface ReadImageOptions {
  /** The request field of the part, for the problem (`/messages/1/content/2`). */
  pointer: string;
  detail?: 'auto' | 'low' | 'high';
  /** The development setting (WEBHOOKS_ALLOW_LOOPBACK): also http, and loopback or private hosts. */
  allowPrivateNetworks: boolean;
}

/** The image of an `image_url` part as the engine takes it: its bytes and media type. */
export async function readImage(url: string, options: ReadImageOptions): Promise<EngineImagePart> {
  const { pointer, detail } = options;
  const dataUrl = DATA_URL.exec(url);
  if (dataUrl) {
    const payload = url.slice(dataUrl[0].length);
    if (payload.length === 0 || payload.length % 4 !== 0 || !BASE64.test(payload))
      throw unreadable(pointer, 'its data: URL is not valid base64');
    const bytes = Buffer.from(payload, 'base64');
    if (bytes.length > IMAGE_LIMITS.maxBytes)
      throw unreadable(pointer, `it is larger than ${IMAGE_LIMITS.maxBytes / 1024 / 1024} MB`);
    return {
      type: 'image',
      data: new Uint8Array(bytes),
      mediaType: dataUrl[1]!.toLowerCase(),
      ...(detail ? { detail } : {}),
    };
  }
  if (url.startsWith('data:'))
    throw unreadable(pointer, 'a data: URL must be a base64-encoded image (data:image/<type>;base64,…)');
  let response: GuardedResponse;
  try {
    response = await fetchGuarded(url, {
      allowPrivateNetworks: options.allowPrivateNetworks,
      timeoutMs: IMAGE_LIMITS.timeoutMs,
      maxBytes: IMAGE_LIMITS.maxBytes,
      headers: { accept: 'image/*', 'user-agent': 'content-service/0.1 (chat images)' },
      readBody: (type) => type.startsWith('image/'),
    });
  } catch (error) {
    if (error instanceof UrlNotAllowedError) throw unreadable(pointer, error.message);
    if (error instanceof Error && error.name === 'TimeoutError')
      throw unreadable(pointer, `it did not arrive within ${IMAGE_LIMITS.timeoutMs / 1000} seconds`);
    throw unreadable(pointer, `it could not be fetched (${error instanceof Error ? error.message : String(error)})`);
  }
  if (response.status < 200 || response.status > 299) throw unreadable(pointer, `its URL answered ${response.status}`);
  const mediaType = response.contentType.split(';')[0]!.trim();
  if (!mediaType.startsWith('image/'))
    throw unreadable(pointer, `its URL answered ${mediaType || 'no content type'}, not an image`);
  if (response.truncated) throw unreadable(pointer, `it is larger than ${IMAGE_LIMITS.maxBytes / 1024 / 1024} MB`);
  if (response.bytes.length === 0) throw unreadable(pointer, 'its URL answered an empty body');
  return { type: 'image', data: response.bytes, mediaType, ...(detail ? { detail } : {}) };
}
