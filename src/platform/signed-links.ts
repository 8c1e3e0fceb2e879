// What the server signs for use without an API key (a chatbot's transcript link, a workflow step's approval link, an
// edit token) is accepted only as the server writes it. Lenient parsers read other spellings as the same value (a
// base64url decoder ignores the unused bits of the last character and `=` padding; Number() reads `01796304246`,
// `1796304246.0` and `1796304246e0`), which would give one signature several working links.
import { timingSafeEqual } from 'node:crypto';

/** Unix seconds as the server writes them: digits without a leading zero, at most 11 (the contract's maximum). */
const EXPIRES = /^[1-9]\d{0,10}$/;

/** The unix time of a link's `expires` when it is written as the server writes it, else undefined. */
export function parseLinkExpires(text: string | null | undefined): number | undefined {
  return typeof text === 'string' && EXPIRES.test(text) ? Number(text) : undefined;
}

/** Whether `text` is base64url as the server writes it: no padding, and the last character's unused bits zero. */
export function isCanonicalBase64url(text: string): boolean {
  return Buffer.from(text, 'base64url').toString('base64url') === text;
}

/** Whether `given` is `expected` (a signature's bytes) in base64url exactly as the server writes it; in constant time. */
export function isSignature(given: string | null | undefined, expected: Buffer): boolean {
  const written = Buffer.from(expected.toString('base64url'));
  const actual = Buffer.from(given ?? '');
  return actual.length === written.length && timingSafeEqual(actual, written);
}
