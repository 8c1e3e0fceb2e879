// The length of a text in characters (Unicode code points), as JSON Schema's `maxLength` counts it and as `[...text]`
// would, without making an array of the text's characters: on a long text (a document, a workflow's input) that array
// is megabytes the garbage collector then has to move and collect, for a number.

/** The characters (code points) of `text`: a surrogate pair is one, a lone surrogate one too. */
export function characterCount(text: string): number {
  let count = text.length;
  for (let at = 0; at < text.length - 1; at++) {
    const code = text.charCodeAt(at);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(at + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count -= 1;
        at += 1;
      }
    }
  }
  return count;
}
