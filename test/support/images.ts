// Small real images, built byte by byte from their formats' specifications, for the tests of the sandbox's image
// reading (src/features/engine/image-info.ts): whole files that decoders open, not only their headers.
import { crc32, deflateSync } from 'node:zlib';

function u32be(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  return Buffer.concat([u32be(data.length), body, u32be(crc32(body))]);
}

/** A PNG of `width`×`height` RGB pixels, all red: signature, IHDR, one IDAT of deflated rows (filter 0), IEND. */
export function png(width: number, height: number): Uint8Array {
  const header = Buffer.concat([u32be(width), u32be(height), Buffer.from([8, 2, 0, 0, 0])]);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, Buffer.from([255, 0, 0]))]);
  const rows = Buffer.concat(Array.from({ length: height }, () => row));
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      pngChunk('IHDR', header),
      pngChunk('IDAT', deflateSync(rows)),
      pngChunk('IEND', Buffer.alloc(0)),
    ]),
  );
}

/**
 * A GIF89a of `width`×`height` pixels in two colours (a checkerboard): header, logical screen, global colour table,
 * image descriptor and LZW data. The LZW stream uses 3-bit codes throughout: a clear code before every two pixels
 * keeps the code table from growing, which every decoder reads.
 */
export function gif(width: number, height: number): Uint8Array {
  const le16 = (value: number) => [value & 0xff, value >> 8];
  const codes: number[] = [];
  for (let pixel = 0; pixel < width * height; pixel++) {
    if (pixel % 2 === 0) codes.push(4); // clear
    codes.push((Math.floor(pixel / width) + (pixel % width)) % 2);
  }
  codes.push(5); // end of information
  const packed: number[] = [];
  let bits = 0;
  let count = 0;
  for (const code of codes) {
    bits |= code << count;
    count += 3;
    while (count >= 8) {
      packed.push(bits & 0xff);
      bits >>= 8;
      count -= 8;
    }
  }
  if (count > 0) packed.push(bits & 0xff);
  const blocks: number[] = [];
  for (let at = 0; at < packed.length; at += 255) {
    const block = packed.slice(at, at + 255);
    blocks.push(block.length, ...block);
  }
  return new Uint8Array([
    ...Buffer.from('GIF89a', 'latin1'),
    ...le16(width),
    ...le16(height),
    0x80, // a global colour table of 2 entries
    0,
    0,
    ...[0, 0, 0, 255, 255, 255],
    0x2c, // image descriptor
    ...le16(0),
    ...le16(0),
    ...le16(width),
    ...le16(height),
    0,
    2, // LZW minimum code size
    ...blocks,
    0,
    0x3b, // trailer
  ]);
}

function segment(marker: number, body: number[]): number[] {
  const length = body.length + 2;
  return [0xff, marker, length >> 8, length & 0xff, ...body];
}

/**
 * A baseline greyscale JPEG of `width`×`height` pixels, mid-grey: SOI, a JFIF APP0, an APP1 (skipped by readers that
 * do not know it, like ours), a quantisation table, SOF0, one-code Huffman tables (DC difference 0, AC end of block),
 * one scan of 2 bits per 8×8 block, EOI.
 */
export function jpeg(width: number, height: number): Uint8Array {
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const scan: number[] = [];
  for (let bit = 0; bit < blocks * 2; bit += 8) scan.push(0xff >> Math.min(8, blocks * 2 - bit)); // zero bits, padded with ones
  // A 0xFF data byte would need stuffing; the padding is at most 7 one bits, so none occurs.
  return new Uint8Array([
    0xff,
    0xd8,
    ...segment(0xe0, [...Buffer.from('JFIF\0', 'latin1'), 1, 1, 0, 0, 1, 0, 1, 0, 0]),
    ...segment(0xe1, [...Buffer.from('Comment-ish\0', 'latin1'), 1, 2, 3, 4]),
    ...segment(0xdb, [0, ...Array<number>(64).fill(1)]),
    ...segment(0xc0, [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 1, 1, 0x11, 0]),
    ...segment(0xc4, [0x00, 1, ...Array<number>(15).fill(0), 0x00]),
    ...segment(0xc4, [0x10, 1, ...Array<number>(15).fill(0), 0x00]),
    ...segment(0xda, [1, 1, 0x00, 0, 63, 0]),
    ...scan,
    0xff,
    0xd9,
  ]);
}

/** Google's 1×1 WebP samples (the ones feature detection uses): lossy (VP8), lossless (VP8L) and with alpha (VP8X). */
export const WEBP_1X1 = {
  lossy: new Uint8Array(Buffer.from('UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA', 'base64')),
  lossless: new Uint8Array(Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiI4HAA==', 'base64')),
  extended: new Uint8Array(
    Buffer.from(
      'UklGRkoAAABXRUJQVlA4WAoAAAAQAAAAAAAAAAAAQUxQSAwAAAARBxAR/Q9ERP8DAABWUDggGAAAABQBAJ0BKgEAAQAAAP4AAA3AAP7mtQAAAA==',
      'base64',
    ),
  ),
};

/** The first bytes of a WebP of another size: the RIFF header and the first chunk's header fields as the format lays
 *  them out (the picture data after them is not part of what a reader of sizes needs). */
export function webpHeader(kind: 'VP8 ' | 'VP8L' | 'VP8X', width: number, height: number): Uint8Array {
  const chunk = Buffer.alloc(10);
  if (kind === 'VP8 ') {
    chunk.set([0x30, 0x01, 0x00, 0x9d, 0x01, 0x2a]); // frame tag (key frame), start code
    chunk.writeUInt16LE(width, 6);
    chunk.writeUInt16LE(height, 8);
  } else if (kind === 'VP8L') {
    chunk[0] = 0x2f;
    chunk.writeUInt32LE(((width - 1) | ((height - 1) << 14)) >>> 0, 1);
  } else {
    chunk[0] = 0x10; // the alpha flag
    chunk.writeUIntLE(width - 1, 4, 3);
    chunk.writeUIntLE(height - 1, 7, 3);
  }
  const body = Buffer.concat([
    Buffer.from('WEBP', 'latin1'),
    Buffer.from(kind, 'latin1'),
    Buffer.from([chunk.length, 0, 0, 0]),
    chunk,
  ]);
  return new Uint8Array(
    Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.from([body.length & 0xff, body.length >> 8, 0, 0]), body]),
  );
}
