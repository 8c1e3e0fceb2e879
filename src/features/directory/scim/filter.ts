// The grammar of a SCIM filter (RFC 7644 §3.4.2.2), checked before SCIMMY reads it: SCIMMY's parser drops what it
// cannot read instead of refusing it (`userName eq` with no value, a trailing `and`), and a filter read in part
// answers a different question than the one asked. A filter that breaks the grammar is 400 invalidFilter (§3.12).
import { scimError } from './scimmy.ts';

/** How deep `(…)` and `[…]` may nest: a directory's filters nest once or twice; the limit bounds the recursion. */
const MAX_DEPTH = 32;

const COMPARATORS = new Set(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le']);
/** Presence tests take no value: RFC 7644's `pr`, and SCIMMY's `np` (not present). */
const PRESENCE = new Set(['pr', 'np']);
const LITERALS = new Set(['true', 'false', 'null']);

type Token = { kind: 'punct' | 'string' | 'number' | 'word'; text: string; at: number };

/**
 * One token at a time: white space, a bracket, a JSON string, a number, or a word (an attribute path with its schema
 * URN, an operator, a comparator or a literal). Each alternative consumes what the others cannot start with.
 */
const TOKEN = /\s+|([()[\]])|("(?:[^"\\]|\\.)*")|(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.])|([A-Za-z_$][\w$.:-]*)/y;

function invalid(expected: string, token: Token | undefined): never {
  const where = token ? `'${token.text.slice(0, 40)}' at character ${token.at + 1}` : 'the end of the filter';
  throw scimError(
    400,
    'invalidFilter',
    `The filter breaks SCIM's grammar (RFC 7644 §3.4.2.2): ${expected} expected, found ${where}.`,
  );
}

/** A filter of the grammar that this server would read otherwise than written. */
function unsupported(what: string): Error {
  return scimError(400, 'invalidFilter', `The filter is not supported: ${what}.`);
}

function tokenise(filter: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < filter.length) {
    const at = TOKEN.lastIndex;
    const match = TOKEN.exec(filter);
    if (!match) {
      const rest = filter.slice(at);
      const expected = rest.startsWith('"') ? "a closing '\"'" : 'an attribute, an operator or a value';
      invalid(expected, { kind: 'word', text: rest, at });
    }
    const [, punct, string, number, word] = match;
    if (punct) tokens.push({ kind: 'punct', text: punct, at });
    else if (string) tokens.push({ kind: 'string', text: string, at });
    else if (number) tokens.push({ kind: 'number', text: number, at });
    else if (word) tokens.push({ kind: 'word', text: word, at });
  }
  return tokens;
}

/** Throws 400 invalidFilter unless the filter is one of RFC 7644's. */
export function checkFilter(filter: string): void {
  const tokens = tokenise(filter);
  let next = 0;
  const peek = () => tokens[next];
  const isWord = (token: Token | undefined, words: Set<string> | string) =>
    token?.kind === 'word' &&
    (typeof words === 'string' ? token.text.toLowerCase() === words : words.has(token.text.toLowerCase()));
  const isKeyword = (token: Token | undefined) =>
    isWord(token, 'and') || isWord(token, 'or') || isWord(token, 'not') || isWord(token, COMPARATORS);

  /** The inside of a group, `(…)` or `[…]`, and its closing bracket; how many terms it joins. */
  function group(close: string, depth: number): number {
    if (depth > MAX_DEPTH)
      throw scimError(400, 'invalidFilter', `The filter nests groups more than ${MAX_DEPTH} deep.`);
    const terms = expression(depth);
    if (peek()?.text !== close || peek()?.kind !== 'punct') invalid(`'${close}'`, peek());
    next += 1;
    return terms;
  }

  /**
   * attrExp, valuePath, or a group, each optionally after `not`. Returns the attribute it names and whether through a
   * value path (undefined for a group).
   */
  function term(depth: number): { attribute: string; path: boolean } | undefined {
    const negated = isWord(peek(), 'not');
    if (negated) next += 1;
    const token = peek();
    if (token?.kind === 'punct' && token.text === '(') {
      next += 1;
      // SCIMMY reads `not (A and B)` as `not A and not B`, and `not (A or B)` as `not A or not B`: an answer to
      // another question, so refused.
      if (group(')', depth + 1) > 1 && negated)
        throw unsupported("a 'not' of a group of several terms; write each negation out (De Morgan's laws)");
      return undefined;
    }
    if (token?.kind !== 'word' || isKeyword(token) || isWord(token, LITERALS))
      invalid('an attribute or a group', token);
    next += 1;
    const attribute = token.text.toLowerCase();
    const after = peek();
    if (after?.kind === 'punct' && after.text === '[') {
      next += 1;
      group(']', depth + 1);
      return { attribute, path: true };
    }
    if (isWord(after, PRESENCE)) {
      next += 1;
      return { attribute, path: false };
    }
    if (!isWord(after, COMPARATORS)) invalid(`a comparison operator after ${token.text}`, after);
    next += 1;
    const value = peek();
    const isValue = value?.kind === 'string' || value?.kind === 'number' || isWord(value, LITERALS);
    if (!isValue) invalid(`a value (a quoted string, a number, true, false or null) after ${after!.text}`, value);
    next += 1;
    return { attribute, path: false };
  }

  /**
   * Terms joined by `and` and `or`; how many. SCIMMY keeps the terms of an `and` by attribute, so a value path beside
   * another term of the same attribute would lose one of them: refused.
   */
  function expression(depth: number): number {
    let terms = 0;
    let conjunction: Array<{ attribute: string; path: boolean }> = [];
    for (;;) {
      const named = term(depth);
      terms += 1;
      if (named) {
        const same = conjunction.filter((other) => other.attribute === named.attribute);
        if (same.length > 0 && (named.path || same.some((other) => other.path)))
          throw unsupported(
            `a value path of ${named.attribute} AND-ed with another term of it; join them in one value path`,
          );
        conjunction.push(named);
      }
      if (isWord(peek(), 'or')) conjunction = [];
      else if (!isWord(peek(), 'and')) return terms;
      next += 1;
    }
  }

  expression(0);
  if (next < tokens.length) invalid("'and', 'or' or the end of the filter", peek());
}
