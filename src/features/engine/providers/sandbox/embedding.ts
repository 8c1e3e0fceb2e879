// The built-in embedding model `sandbox-embedding`: needs no key and no network, deterministic, and good enough that
// texts sharing words or most of a word's letters (a typo) are near, so that a fresh server's knowledge bases search
// by vectors too. It knows nothing of meaning: synonyms that share no letters are not near. docs/engine.md has the
// algorithm for users; in short, the "hashing trick" over character trigrams and words:
//
//   1. the text is NFKC-normalised and lower-cased; its words are its runs of letters and digits (a text with none
//      is one word, itself, trimmed; a text of white space only has no word and gets the zero vector);
//   2. each word gives the feature `w:<word>`, and each trigram of its code points padded with one space either side
//      (`refund` → ` re`, `ref`, `efu`, `fun`, `und`, `nd `) the feature `g:<trigram>`;
//   3. each feature is hashed with 32-bit FNV-1a over its UTF-8 bytes; the hash modulo D picks a bucket, and its top
//      bit the sign (+1 when clear, -1 when set), and the bucket adds the sign (once per occurrence);
//   4. the vector is divided by its Euclidean length (L2-normalised), so cosine similarity is the dot product.
//
// D is the request's `dimensions` (1 to 4096), 256 by default. The model that serves it is embedding-model.ts.

export const SANDBOX_EMBEDDING_DIMENSIONS = 256;
export const SANDBOX_EMBEDDING_MAX_DIMENSIONS = 4096;

const encoder = new TextEncoder();

/** 32-bit FNV-1a of the UTF-8 bytes of `text`, unsigned. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(text)) hash = Math.imul(hash ^ byte, 0x01000193);
  return hash >>> 0;
}

/** The features of a text (step 1 and 2 above), in order of occurrence, repeats kept. */
export function sandboxFeatures(text: string): string[] {
  const normalised = text.normalize('NFKC').toLowerCase();
  const found = normalised.match(/[\p{L}\p{N}]+/gu);
  const words = found ?? (normalised.trim() === '' ? [] : [normalised.trim()]);
  const features: string[] = [];
  for (const word of words) {
    features.push(`w:${word}`);
    const chars = [' ', ...word, ' '];
    for (let i = 0; i + 3 <= chars.length; i++) features.push(`g:${chars[i]}${chars[i + 1]}${chars[i + 2]}`);
  }
  return features;
}

/** FNV-1a continued over the UTF-8 bytes of one code point (a lone surrogate as U+FFFD, as TextEncoder writes it). */
function fnvCodePoint(hash: number, codePoint: number): number {
  const cp = codePoint >= 0xd800 && codePoint <= 0xdfff ? 0xfffd : codePoint;
  const step = (h: number, byte: number) => Math.imul(h ^ byte, 0x01000193);
  if (cp < 0x80) return step(hash, cp);
  if (cp < 0x800) return step(step(hash, 0xc0 | (cp >> 6)), 0x80 | (cp & 0x3f));
  if (cp < 0x10000) return step(step(step(hash, 0xe0 | (cp >> 12)), 0x80 | ((cp >> 6) & 0x3f)), 0x80 | (cp & 0x3f));
  return step(
    step(step(step(hash, 0xf0 | (cp >> 18)), 0x80 | ((cp >> 12) & 0x3f)), 0x80 | ((cp >> 6) & 0x3f)),
    0x80 | (cp & 0x3f),
  );
}

/** FNV-1a's state after the bytes of `g:`, where every trigram feature's hash starts. */
const TRIGRAM_START = fnvCodePoint(fnvCodePoint(0x811c9dc5, 0x67), 0x3a);

/**
 * The sandbox vector of a text, `dimensions` long, of length 1 (or all zeros for a text without a feature). The
 * features of sandboxFeatures, hashed as they are read: a trigram's hash is computed over its code points, not over
 * a string made for it, so that a long word costs its length once.
 */
export function sandboxEmbedding(text: string, dimensions: number = SANDBOX_EMBEDDING_DIMENSIONS): number[] {
  const vector = new Float64Array(dimensions);
  const add = (hash: number) => {
    const unsigned = hash >>> 0;
    vector[unsigned % dimensions]! += unsigned >= 0x80000000 ? -1 : 1;
  };
  const normalised = text.normalize('NFKC').toLowerCase();
  const found = normalised.match(/[\p{L}\p{N}]+/gu);
  const words = found ?? (normalised.trim() === '' ? [] : [normalised.trim()]);
  for (const word of words) {
    add(fnv1a(`w:${word}`));
    const points = [0x20];
    for (const char of word) points.push(char.codePointAt(0)!);
    points.push(0x20);
    for (let i = 0; i + 3 <= points.length; i++)
      add(fnvCodePoint(fnvCodePoint(fnvCodePoint(TRIGRAM_START, points[i]!), points[i + 1]!), points[i + 2]!));
  }
  let sum = 0;
  for (const value of vector) sum += value * value;
  const norm = Math.sqrt(sum);
  return Array.from(vector, (value) => (norm === 0 ? 0 : value / norm));
}
