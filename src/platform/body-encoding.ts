// What body-parser checks of a body's bytes before it decodes them (its `verify` option).
import { isUtf8 } from 'node:buffer';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-depth.ts';
import { Problem } from './problems.ts';

/** The charset body-parser read from the Content-Type (lower-cased; UTF-8 when none): UTF-8 under either name. */
function isUtf8Charset(encoding: string): boolean {
  return encoding === 'utf-8' || encoding === 'utf8';
}

/**
 * A body declared UTF-8 must be UTF-8: decoded as it is, each invalid byte would become U+FFFD, and what the client
 * sent would be lost without a word.
 */
export function verifyText(_req: unknown, _res: unknown, body: Buffer, encoding: string): void {
  if (isUtf8Charset(encoding) && !isUtf8(body))
    throw new Problem('invalid_json', 'The body is not valid UTF-8, the charset it declares.');
}

/**
 * JSON text is UTF-8 (RFC 8259): another charset (UTF-16, UTF-32) is refused as latin1 is. A body nesting deeper
 * than MAX_JSON_DEPTH is refused before it is parsed, so no operation meets a value deeper than that.
 */
export function verifyJson(req: unknown, res: unknown, body: Buffer, encoding: string): void {
  if (!isUtf8Charset(encoding)) throw new Problem('unsupported_media_type', 'The body must be UTF-8.');
  verifyText(req, res, body, encoding);
  if (nestsDeeperThan(body, MAX_JSON_DEPTH))
    throw new Problem(
      'invalid_json',
      `The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels, the most this API reads.`,
    );
}
