// The regular expressions of src/ that `npm run lint:redos` (scripts/lint-redos.ts) lets pass although recheck finds
// them vulnerable, each with the bound of its input and why that bound makes it safe; and the patterns built at run
// time, which no checker sees, each with what it is built from. This is the only place such a pattern is excused.
import type { AllowedDynamic, AllowedVulnerable } from './lint-redos.ts';

export const allowedVulnerable: AllowedVulnerable[] = [
  {
    file: 'src/cli.ts',
    pattern: String.raw`/^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/`,
    bound: "one argument of the operator's command line (`--email`)",
    reason: 'the CLI runs in its own process on the operator’s machine, never in the server: no tenant reaches it.',
  },
  {
    file: 'src/features/chatbots/intents.ts',
    pattern: String.raw`/(?<![\p{L}\p{N}])(?:mit (?:einem |einer )?(?:echten )?(?:menschen?|mitarbeiter(?:in)?|person|berater(?:in)?|jemandem)(?: [^.?!]*)? (?:sprechen|reden|chatten)|verbinden sie mich)(?![\p{L}\p{N}])/iu`,
    bound:
      'a chatbot message: 4,000 characters (ChatbotMessageRequest.content; a widget visitor’s, 2,000), checked by the contract first',
    reason:
      '"mit <person>" repeated without "sprechen" reads to the end of the sentence from each repetition: quadratic, about 40 ms for 4,000 characters of it on a busy 2-core machine, and never more, since no longer message is accepted.',
  },
  {
    file: 'src/features/chatbots/widget/frame.tsx',
    pattern: '/`([^`\\n]+)`|\\*\\*(\\S(?:[^\\n]*?\\S)?)\\*\\*|\\*([^*\\s](?:[^*\\n]*[^*\\s])?)\\*/g',
    bound: 'one line of one chatbot answer, in the widget visitor’s own browser',
    reason:
      'frame.tsx is bundled for the widget’s iframe (widget/pages.ts) and runs only in the browser: the server never runs this pattern, so it cannot hold the event loop other tenants are served on.',
  },
  {
    file: 'src/features/knowledge/extract.ts',
    pattern: String.raw`/<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i`,
    bound: 'the first 1,024 bytes of a fetched page, decoded one character a byte (sniffHtmlCharset)',
    reason: 'cubic in at most 1,024 characters: a few million steps, well under a millisecond.',
  },
  {
    file: 'src/platform/instant.ts',
    pattern: String.raw`/^(.*[Tt ]\d{2}:\d{2}:)60(\.\d+)?(.*)$/`,
    bound:
      'a date-time of the contract: every `format: date-time` in it has `maxLength: 40`, validated before parseInstant is called (and the CLI’s `--expires-at`, the operator’s own)',
    reason: 'quadratic in at most 40 characters.',
  },
  {
    file: 'src/platform/routes.ts',
    pattern: String.raw`/(\{[^}]+\})/`,
    bound: 'the path templates of the contract (generated/operations.ts), read once when the module loads',
    reason: 'no request’s text reaches it.',
  },
  {
    file: 'src/platform/routes.ts',
    pattern: String.raw`/\{([^}]+)\}/g`,
    bound: 'the path templates of the contract (generated/operations.ts), read once when the module loads',
    reason: 'no request’s text reaches it.',
  },
];

export const allowedDynamic: AllowedDynamic[] = [
  {
    file: 'src/features/chatbots/intents.ts',
    within: 'w',
    reason:
      'w() is called only with literal alternatives; the lint works out the pattern of each call and checks it there.',
  },
  {
    file: 'src/features/chatbots/intents.ts',
    within: 'matchKeyword',
    reason:
      "a chatbot's escalation keywords (at most 50 of at most 100 characters), each word escaped (escapeRegExp) and the words joined by `\\s+`, after `(?<![\\p{L}\\p{N}])` and before a fixed ending. Each `\\s+` stands between two literal words without white space, so a start reads a keyword's length and the white space between its words once: linear in the message (test/chatbots/intents.test.ts feeds the longest message of partial keywords and spaces).",
  },
  {
    file: 'src/features/documents/sources.ts',
    within: 'withoutElements',
    reason:
      "element names from the constant lists of readHtml, never a page's: `<!--|<(names)(?=[\\s/>])` has no repetition, and `</name\\s*>` starts at a literal `</name` whose white space it reads once.",
  },
  {
    file: 'src/features/documents/sources.ts',
    within: 'readHtml',
    reason:
      'main or article: from a literal `<name`, `[^<>]*` reads to the next `<` or `>`, where the next start stops too; `</name\\s*>` as above.',
  },
  {
    file: 'src/features/engine/providers/sandbox/task.ts',
    within: 'termsAsWritten',
    reason: 'a key term of the text, escaped, between two lookarounds: a literal, linear.',
  },
  {
    file: 'src/features/engine/providers/sandbox/task.ts',
    within: 'plan',
    reason:
      'a key word of the title or instruction (sandbox-words.ts: letters, digits, apostrophes and hyphens, none special in a pattern) between two lookarounds: a literal, linear.',
  },
  {
    file: 'src/features/engine/providers/sandbox/tools.ts',
    within: 'mentions',
    reason: "a tool argument's value, escaped (escapeRegExp), between two lookarounds: a literal, linear.",
  },
  {
    file: 'src/features/engine/style/rewrite.ts',
    within: 'replaceTable',
    reason:
      "the phrases of rewrite.ts's constant tables (never a tenant's), escaped, their spaces made `\\s+` between literal words, as alternatives between word edges, then `(?=\\s+[\\p{L}])` or nothing: each start reads one phrase and the white space inside it, linear.",
  },
  {
    file: 'src/features/knowledge/chunk.ts',
    within: 'splitOnSeparator',
    reason:
      "a separator of the splitter's constant list (a heading's or a list's opening, a line break), escaped, never a tenant's: `(?=separator)` is a lookahead at a literal, tried once at each position, linear.",
  },
  {
    file: 'src/features/engine/style/rewrite.ts',
    within: 'removeWords',
    reason:
      "the phrases of rewrite.ts's constant lists, as in replaceTable, with an optional comma and spaces on each side: the spaces after a comma are read once from that comma, those after a phrase once after it, linear.",
  },
  {
    file: 'src/platform/routes.ts',
    within: 'compile',
    reason:
      'a path template of the contract, its literal parts escaped and each parameter `([^/]+)` between literal slashes: anchored, linear in the request path.',
  },
];
