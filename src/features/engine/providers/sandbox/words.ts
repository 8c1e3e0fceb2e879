// The words the sandbox models read a message by: its key terms, and the forms a word is matched by (src/features/
// engine/sandbox.ts and sandbox-tools.ts; the rules are in docs/engine.md).

const STOP_WORDS = new Set(
  'about above after again against also among because been before being below between both cannot could does doing down during each either every from further have having here hers herself himself into itself just like make more most much must myself neither never once only other ought ours ourselves over same shall should some such than that their theirs them themselves then there these they this those through under until upon very wants were what when where which while whom whose will with within without would write your yours yourself yourselves please tell give need want know'.split(
    ' ',
  ),
);

const words = (text: string) => text.toLowerCase().match(/\p{L}[\p{L}\p{N}'-]*/gu) ?? [];
/** A word of the key-term kind: four letters or more, and not a common word. */
const isKeyWord = (word: string) => [...word].length >= 4 && !STOP_WORDS.has(word);

/** The key terms of a text, as the model's rules define them. */
export function keyTerms(text: string): string[] {
  const counts = new Map<string, { count: number; first: number }>();
  words(text).forEach((word, index) => {
    if (!isKeyWord(word)) return;
    const seen = counts.get(word);
    if (seen) seen.count += 1;
    else counts.set(word, { count: 1, first: index });
  });
  return [...counts.entries()]
    .sort(([, a], [, b]) => b.count - a.count || a.first - b.first)
    .slice(0, 5)
    .map(([word]) => word);
}

/** The forms a word is matched by: itself, without a plural ending (-s, -es, -ies → -y), and those without an -ed or
 *  -ing ending (with or without a final e, and a doubled consonant undone). Two words match when their forms meet, so
 *  "cookie" matches "cookies", "setting" "settings", "delivery" "deliveries", "take" "takes" and "taking". */
export function forms(word: string): Set<string> {
  const out = new Set([word]);
  if ([...word].length < 4) return out;
  const bases = [word];
  if (/[^s]s$/.test(word)) bases.push(word.slice(0, -1));
  if (/(?:s|x|z|ch|sh)es$/.test(word)) bases.push(word.slice(0, -2));
  if (/[^aeiou]ies$/.test(word)) bases.push(`${word.slice(0, -3)}y`);
  for (const base of bases) {
    out.add(base);
    const verb = /^(.{3,}?)(?:ing|ed)$/.exec(base)?.[1];
    if (!verb) continue;
    out.add(verb);
    out.add(`${verb}e`);
    if (/([^aeiou])\1$/.test(verb)) out.add(verb.slice(0, -1));
  }
  return out;
}

export const meets = (a: Set<string>, b: Set<string>) => [...a].some((form) => b.has(form));

/** Every distinct word of the key-term kind in a text, lower-cased, in order of first appearance (no limit). */
export function keyWords(text: string): string[] {
  return [...new Set(words(text).filter(isKeyWord))];
}
