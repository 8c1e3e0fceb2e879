// Reading an image's format and size from its header bytes (src/features/engine/image-info.ts), on real small files
// built from the formats' specifications (test/support/images.ts), and its token count by OpenAI's tile rule.
import { describe, expect, test } from 'vitest';
import { imageInfo, imageTokens } from '../../src/features/engine/image-info.ts';
import { gif, jpeg, png, WEBP_1X1, webpHeader } from '../support/images.ts';

describe('imageInfo', () => {
  test('PNG: the IHDR chunk', () => {
    expect(imageInfo(png(640, 480))).toEqual({ format: 'PNG', width: 640, height: 480 });
    expect(imageInfo(png(1, 3))).toEqual({ format: 'PNG', width: 1, height: 3 });
  });

  test('GIF: the logical screen', () => {
    expect(imageInfo(gif(3, 2))).toEqual({ format: 'GIF', width: 3, height: 2 });
    expect(imageInfo(gif(300, 301))).toEqual({ format: 'GIF', width: 300, height: 301 });
    const classic = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
    expect(imageInfo(classic)).toEqual({ format: 'GIF', width: 1, height: 1 });
  });

  test('JPEG: the first start-of-frame segment, after the segments before it', () => {
    expect(imageInfo(jpeg(16, 8))).toEqual({ format: 'JPEG', width: 16, height: 8 });
    expect(imageInfo(jpeg(1024, 768))).toEqual({ format: 'JPEG', width: 1024, height: 768 });
    // A progressive frame (SOF2) is read like a baseline one.
    const progressive = jpeg(20, 30);
    const sof = progressive.findIndex((byte, i) => byte === 0xff && progressive[i + 1] === 0xc0);
    progressive[sof + 1] = 0xc2;
    expect(imageInfo(progressive)).toEqual({ format: 'JPEG', width: 20, height: 30 });
  });

  test('WebP: lossy, lossless and extended', () => {
    expect(imageInfo(WEBP_1X1.lossy)).toEqual({ format: 'WebP', width: 1, height: 1 });
    expect(imageInfo(WEBP_1X1.lossless)).toEqual({ format: 'WebP', width: 1, height: 1 });
    expect(imageInfo(WEBP_1X1.extended)).toEqual({ format: 'WebP', width: 1, height: 1 });
    expect(imageInfo(webpHeader('VP8 ', 640, 480))).toEqual({ format: 'WebP', width: 640, height: 480 });
    expect(imageInfo(webpHeader('VP8L', 16384, 3))).toEqual({ format: 'WebP', width: 16384, height: 3 });
    expect(imageInfo(webpHeader('VP8X', 5000, 70000))).toEqual({ format: 'WebP', width: 5000, height: 70000 });
  });

  test('anything else, or a header cut short, is null (never a throw)', () => {
    expect(imageInfo(new Uint8Array())).toBeNull();
    expect(imageInfo(Buffer.from('not an image at all, just some text'))).toBeNull();
    expect(imageInfo(Buffer.from('%PDF-1.7\n'))).toBeNull();
    // Each cut one byte before the end of the size it declares (and shorter).
    const jpegSize = jpeg(10, 10).findIndex((byte, i, all) => byte === 0xff && all[i + 1] === 0xc0) + 9;
    const cuts: Array<[Uint8Array, number]> = [
      [png(10, 10), 24],
      [gif(10, 10), 10],
      [jpeg(10, 10), jpegSize],
      [WEBP_1X1.lossy, 30],
      [WEBP_1X1.lossless, 25],
      [WEBP_1X1.extended, 30],
    ];
    for (const [image, needed] of cuts) {
      expect(imageInfo(image.subarray(0, needed))).not.toBeNull();
      for (const length of [1, 5, needed - 1]) expect(imageInfo(image.subarray(0, length))).toBeNull();
    }
    // A JPEG whose scan comes before any frame header, and one that is only SOI and EOI.
    const scanFirst = jpeg(8, 8);
    const sof = scanFirst.findIndex((byte, i) => byte === 0xff && scanFirst[i + 1] === 0xc0);
    scanFirst[sof + 1] = 0xda;
    expect(imageInfo(scanFirst)).toBeNull();
    expect(imageInfo(new Uint8Array([0xff, 0xd8, 0xff, 0xd9]))).toBeNull();
    // A header that declares no pixels.
    expect(imageInfo(png(0, 10))).toBeNull();
    // A RIFF file that is not WebP (a WAVE).
    expect(
      imageInfo(Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt '), Buffer.alloc(20)])),
    ).toBeNull();
  });
});

describe('imageTokens', () => {
  test("OpenAI's tile rule", () => {
    expect(imageTokens({ width: 1024, height: 1024 }, 'high')).toBe(765); // 768×768: 4 tiles
    expect(imageTokens({ width: 2048, height: 4096 }, 'high')).toBe(1105); // 1024×2048, then 768×1536: 6 tiles
    expect(imageTokens({ width: 640, height: 480 })).toBe(85 + 170 * 2); // auto is high; not scaled up: 2×1 tiles
    expect(imageTokens({ width: 100, height: 100 })).toBe(255);
    expect(imageTokens({ width: 4096, height: 4096 }, 'low')).toBe(85);
    expect(imageTokens(null, 'high')).toBe(85);
  });
});
