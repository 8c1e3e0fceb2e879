// How deep a JSON text nests, read from its bytes before it is parsed.

/**
 * The deepest nesting of arrays and objects a body may have. Every part of the server that walks a value does so
 * recursively (the contract's validation, the idempotency fingerprint, the features' own readers): a bound at parse
 * time keeps each of them within the stack, and no document of the contract comes near it.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * Whether the JSON text in `bytes` opens more than `max` arrays and objects inside one another. Brackets inside
 * strings do not count; UTF-8's multi-byte sequences have no byte below 0x80, so they are never taken for one.
 * Malformed text is left to the parser: the answer for it only has to be bounded.
 */
export function nestsDeeperThan(bytes: Buffer, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      // A string ends at the next quote that an odd run of backslashes does not escape; Buffer's search finds the
      // quotes, so a body of long texts is not read a byte at a time here.
      let end = i;
      for (;;) {
        end = bytes.indexOf(QUOTE, end + 1);
        if (end === -1) return false;
        let backslashes = 0;
        while (bytes[end - 1 - backslashes] === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
      }
      i = end;
    } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) depth--;
  }
  return false;
}

/** Whether a parsed value (a YAML body's) holds arrays and objects more than `max` deep; walked without recursion. */
export function valueNestsDeeperThan(value: unknown, max: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: next, depth } = stack.pop()!;
    if (next === null || typeof next !== 'object') continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(next) ? next : Object.values(next))
      stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}
