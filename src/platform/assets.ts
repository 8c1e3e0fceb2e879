// The browser assets of pages outside the contract (the reference editor, the chatbot widget): bundled by esbuild on
// their first request, kept in memory, and sent with an ETag so that a browser revalidates instead of downloading.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Request, Response } from 'express';

export interface Asset {
  body: Buffer;
  etag: string;
  contentType: string;
}

export function asset(body: Buffer | string, contentType: string): Asset {
  const bytes = Buffer.from(body);
  return { body: bytes, etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`, contentType };
}

/** A browser bundle of the TypeScript module at `entry`, minified: an ES module, or a classic script (`iife`). */
export async function bundleScript(entry: URL, format: 'esm' | 'iife' = 'esm'): Promise<Asset> {
  const result = await build({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    minify: true,
    format,
    target: 'es2022',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  return asset(Buffer.from(result.outputFiles[0]!.contents), 'text/javascript; charset=utf-8');
}

export async function stylesheet(file: URL): Promise<Asset> {
  return asset(await readFile(file), 'text/css; charset=utf-8');
}

/** Builds an asset once per process, on its first request; a failed build is tried again on the next one. */
export function once(make: () => Promise<Asset>): () => Promise<Asset> {
  let pending: Promise<Asset> | undefined;
  return () => {
    pending ??= make().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}

/**
 * A piece of a header split at its commas, without the white space next to those commas: what splitting at the
 * pattern `\s*,\s*` gives, in linear time (the pattern would read a run of white space again from each of its
 * characters when no comma follows). White space at the ends of the header stays.
 */
function withoutSpaceAroundCommas(piece: string, index: number, pieces: string[]): string {
  const start = index > 0 ? piece.trimStart() : piece;
  return index < pieces.length - 1 ? start.trimEnd() : start;
}

/** Sends the asset, or 304 when the browser's copy is current. */
export function sendAsset(req: Request, res: Response, { body, etag, contentType }: Asset): void {
  res.setHeader('Content-Type', contentType);
  res.setHeader('ETag', etag);
  if (!res.getHeader('Cache-Control')) res.setHeader('Cache-Control', 'no-cache');
  if (
    req
      .get('if-none-match')
      ?.split(',')
      .map(withoutSpaceAroundCommas)
      .some((tag) => tag === etag || tag === '*')
  ) {
    res.status(304).end();
    return;
  }
  res.end(body);
}
