// Look-alike characters folded to the characters they imitate: the confusable skeleton of Unicode's UTS #39, from the
// prototypes of Unicode's confusables.txt (version 13.0.0, as the unhomoglyph package ships it). So Cyrillic `о`,
// Greek `ο` and dotless `ı` read as `o`, `o` and `i`, a non-breaking hyphen (U+2011) or an en dash (U+2013) as `-`.
//
// Only characters outside ASCII are folded: ASCII stays as it is written. The skeleton of `m` is `rn` and that of `1`
// and `I` is `l`, so folding ASCII would make `modern` match `modem` and `burn` match `bum` in ordinary English text.
// A prototype that stands for an ASCII character is that character (the prototype `rn` is `m`), so that a look-alike
// of `m` still matches the `m` of a phrase as written.
import { createRequire } from 'node:module';

const confusables = createRequire(import.meta.url)('unhomoglyph/data.json') as Record<string, string>;

/** For each prototype of an ASCII character, that character (the prototype itself where it is ASCII). */
const asciiOf = new Map<string, string>();
for (let code = 0; code < 0x80; code++) {
  const ch = String.fromCharCode(code);
  const prototype = confusables[ch] ?? ch;
  if (prototype === ch || !asciiOf.has(prototype)) asciiOf.set(prototype, ch);
}

/** Each character outside ASCII that has a prototype, and what it folds to. */
const PROTOTYPES = new Map<string, string>();
for (const [ch, prototype] of Object.entries(confusables))
  if (ch >= '\x80') PROTOTYPES.set(ch, asciiOf.get(prototype) ?? prototype);

/**
 * The skeleton of a text in NFKC form: each character outside ASCII of its canonical decomposition replaced by its
 * prototype, then NFKC again (Cyrillic `о` with a combining circumflex is `ô`). Text without look-alikes is returned
 * as it is.
 */
export function skeleton(text: string): string {
  let folded = '';
  let changed = false;
  for (const ch of text.normalize('NFD')) {
    const prototype = ch < '\x80' ? undefined : PROTOTYPES.get(ch);
    folded += prototype ?? ch;
    changed ||= prototype !== undefined;
  }
  return changed ? folded.normalize('NFKC') : text;
}
