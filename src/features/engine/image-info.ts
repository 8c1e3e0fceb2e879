// The format and pixel size of an image, read from its own header bytes: what the sandbox models say about an image
// and how they count its tokens. PNG, JPEG, GIF and WebP (lossy VP8, lossless VP8L and extended VP8X); anything else,
// or a header cut short, is `null`: the bytes are never trusted to be what their media type says.

export type ImageFormat = 'PNG' | 'JPEG' | 'GIF' | 'WebP';

export interface ImageInfo {
  format: ImageFormat;
  width: number;
  height: number;
}

const ascii = (bytes: Uint8Array, at: number, length: number) =>
  String.fromCharCode(...bytes.subarray(at, at + length));
const u16be = (b: Uint8Array, at: number) => (b[at]! << 8) | b[at + 1]!;
const u16le = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8);
const u24le = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
const u32be = (b: Uint8Array, at: number) =>
  ((b[at]! << 24) >>> 0) + (b[at + 1]! << 16) + (b[at + 2]! << 8) + b[at + 3]!;
const u32le = (b: Uint8Array, at: number) =>
  (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16)) + ((b[at + 3]! << 24) >>> 0);

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** PNG: the signature, then the IHDR chunk, which must come first: width and height as 32-bit big-endian. */
function png(b: Uint8Array): ImageInfo | null {
  if (b.length < 24 || !PNG_SIGNATURE.every((byte, i) => b[i] === byte) || ascii(b, 12, 4) !== 'IHDR') return null;
  return sized('PNG', u32be(b, 16), u32be(b, 20));
}

/** GIF: "GIF87a" or "GIF89a", then the logical screen's width and height as 16-bit little-endian. */
function gif(b: Uint8Array): ImageInfo | null {
  if (b.length < 10 || !/^GIF8[79]a$/.test(ascii(b, 0, 6))) return null;
  return sized('GIF', u16le(b, 6), u16le(b, 8));
}

/**
 * JPEG: SOI, then segments (a marker 0xFF xx and, for most markers, a 16-bit length that counts itself) up to the
 * first start-of-frame segment (SOF0–SOF15 but DHT 0xC4, JPG 0xC8 and DAC 0xCC), whose precision byte is followed by
 * the height and the width. Reaching the scan (SOS) or the end (EOI) first means the header is not readable.
 */
function jpeg(b: Uint8Array): ImageInfo | null {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return null;
  let at = 2;
  while (at + 1 < b.length) {
    if (b[at] !== 0xff) return null;
    const marker = b[at + 1]!;
    if (marker === 0xff) {
      at += 1; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      at += 2; // TEM, RSTn and SOI carry no length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda || at + 4 > b.length) return null;
    const length = u16be(b, at + 2);
    if (length < 2) return null;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (at + 9 > b.length) return null;
      return sized('JPEG', u16be(b, at + 7), u16be(b, at + 5));
    }
    at += 2 + length;
  }
  return null;
}

/**
 * WebP: a RIFF container of form "WEBP" whose first chunk is
 * - "VP8 " (lossy): a 3-byte frame tag, the start code 9D 01 2A, then width and height as 14 bits of 16-bit
 *   little-endian words (the top 2 bits are a scale);
 * - "VP8L" (lossless): the signature byte 0x2F, then width − 1 and height − 1 in 14 bits each, little-endian;
 * - "VP8X" (extended): 4 bytes of flags, then the canvas width − 1 and height − 1 as 24-bit little-endian.
 */
function webp(b: Uint8Array): ImageInfo | null {
  if (b.length < 16 || ascii(b, 0, 4) !== 'RIFF' || ascii(b, 8, 4) !== 'WEBP') return null;
  const chunk = ascii(b, 12, 4);
  if (chunk === 'VP8 ') {
    if (b.length < 30 || b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return null;
    return sized('WebP', u16le(b, 26) & 0x3fff, u16le(b, 28) & 0x3fff);
  }
  if (chunk === 'VP8L') {
    if (b.length < 25 || b[20] !== 0x2f) return null;
    const bits = u32le(b, 21);
    return sized('WebP', (bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (chunk === 'VP8X') {
    if (b.length < 30) return null;
    return sized('WebP', u24le(b, 24) + 1, u24le(b, 27) + 1);
  }
  return null;
}

/** A header that declares no pixels is not an image anyone can look at. */
function sized(format: ImageFormat, width: number, height: number): ImageInfo | null {
  return width > 0 && height > 0 ? { format, width, height } : null;
}

/** The image's format and size from its header, or null when the bytes are none of the formats above. */
export function imageInfo(bytes: Uint8Array): ImageInfo | null {
  return png(bytes) ?? jpeg(bytes) ?? gif(bytes) ?? webp(bytes);
}

/**
 * The tokens an image counts for, by OpenAI's published rule for its vision models: 85 at `low` detail; at `high`
 * (and `auto`) the image is scaled to fit 2048×2048, then so that its shorter side is at most 768 pixels, and each
 * 512-pixel tile it covers adds 170 to the 85. An image of unknown size counts as at `low` detail.
 */
export function imageTokens(
  info: Pick<ImageInfo, 'width' | 'height'> | null,
  detail: 'auto' | 'low' | 'high' = 'auto',
): number {
  if (!info || detail === 'low') return 85;
  let { width, height } = info;
  const fit = Math.min(1, 2048 / Math.max(width, height));
  width *= fit;
  height *= fit;
  const shorter = Math.min(1, 768 / Math.min(width, height));
  width *= shorter;
  height *= shorter;
  return 85 + 170 * Math.ceil(Math.round(width) / 512) * Math.ceil(Math.round(height) / 512);
}
