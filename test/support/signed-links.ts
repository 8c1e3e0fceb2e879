// Other spellings of a signed link's parts that a lenient parser reads as the same value: the tests of every signed
// link (transcripts, approvals, edit tokens) check that each is refused and only the server's own spelling works.
import { expect } from 'vitest';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The other base64url spellings of the same bytes: the last character with other values of its unused low bits, and
 * the text with `=` padding.
 */
export function signatureVariants(signature: string): string[] {
  const unusedBits = (signature.length * 6) % 8;
  expect(unusedBits, `${signature} has no unused bits`).toBeGreaterThan(0);
  const last = ALPHABET.indexOf(signature.at(-1)!);
  const variants: string[] = [];
  for (let low = 1; low < 1 << unusedBits; low++) variants.push(signature.slice(0, -1) + ALPHABET[last ^ low]);
  variants.push(signature + '='.repeat(4 - (signature.length % 4)));
  for (const variant of variants)
    expect(Buffer.from(variant, 'base64url').equals(Buffer.from(signature, 'base64url'))).toBe(true);
  return variants;
}

/** Other spellings of a link's `expires` (unix seconds) that a lenient parser reads as the same number. */
export function expiresVariants(expires: string): string[] {
  return [`0${expires}`, `${expires}.0`, `+${expires}`, ` ${expires}`, `${expires}e0`];
}
