// The length of a text in characters (Unicode code points), as JSON Schema's `maxLength` counts it and as `[...text]`
// would, without making an array of the text's characters: on a long text (a document, a workflow's input) that array
// is megabytes the garbage collector then has to move and collect, for a number. The surrogate pairs are found by a
// regular expression, which V8 runs as compiled code: a loop over the text's units in JavaScript runs in the
// interpreter when it is called seldom, as a length check is.

const SURROGATE_PAIRS = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g;

/** The characters (code points) of `text`: a surrogate pair is one, a lone surrogate one too. */
export function characterCount(text: string): number {
  if (text.length < 2) return text.length;
  const pairs = (text.length - text.replace(SURROGATE_PAIRS, '').length) / 2;
  return text.length - pairs;
}
