// The words of how the project was built, which docs and comments leave out: they state the present for a reader
// who knows nothing of the issues, work sessions, probes and targets behind it (docs/decisions.md, "Docs state the
// present"). The product has sessions of its own (widget, editing, sign-in, a shell's), readiness probes and load
// targets, so each rule names a phrase that only the work's sense uses rather than a single word.

export interface ProcessWordRule {
  name: string;
  pattern: RegExp;
  why: string;
}

export const processWordRules: ProcessWordRule[] = [
  {
    name: 'issue-number',
    pattern: /\bissues?\s+#?\d+/gi,
    why: 'names an issue; say what is, and leave the issue to the commit message',
  },
  {
    name: 'issue-title',
    pattern: /\bissue\s+["“][^"”]+["”]/gi,
    why: 'names an issue by its title',
  },
  {
    name: 'work-session',
    pattern:
      /\b(?:this|that|an? earlier|earlier|previous|a later|later|next|other|another|each) (?:work )?session(?:'s|s'|’s|s’)? (?:work|machine|changes?|figures?|runs?|measurements?)\b|\b(?:other|earlier|previous|later) sessions(?:'|’)? work\b|\bthis session's\b|\b(?:in|during|from) (?:an? )?(?:earlier|previous|later|this) session\b|\b(?:a|the) (?:work|coding|engineering) session\b/gi,
    why: 'speaks of a work session, not of the product',
  },
  {
    name: 'probe',
    pattern: /\b(?:security|direct|an? earlier|the|a) probe\b(?! (?:endpoint|path|route))|\bprobes? \(issue/gi,
    why: 'speaks of a probe of the work (say what the behaviour is, or name the test that holds it)',
  },
  {
    name: 'target-met',
    pattern: /\btargets?\b[^.\n]{0,120}?\b(?:(?:is|are|was|were) )?(?:\*\*)?(?:not )?met\b/gi,
    why: 'measures against a target of the work; give the figure and what it means',
  },
  {
    name: 'round-of-work',
    pattern:
      /\b(?:first|second|third|fourth|fifth|this|that|the next|a later|an earlier) round of work\b|\bthis round\b/gi,
    why: 'speaks of a round of the work',
  },
];

export interface ProcessWordFinding {
  line: number;
  rule: string;
  text: string;
  why: string;
}

/** Where `text` uses process words, line by line (1-based). */
export function findProcessWords(text: string): ProcessWordFinding[] {
  const findings: ProcessWordFinding[] = [];
  // Lines are joined back so that a phrase wrapped over two lines is found; the line is the one it starts on.
  const starts: number[] = [0];
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) starts.push(at + 1);
  const lineOf = (offset: number) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (starts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
  // A line break inside a phrase reads as a space (Markdown and comments wrap at 120 columns).
  const flat = text.replace(/\n(?:\s*(?:\/\/|\*|#)?\s*)/g, (match) => ' '.padEnd(match.length, ' '));
  for (const rule of processWordRules) {
    // A rule's space matches any run of blanks: a wrapped line leaves the indentation of the next.
    const pattern = new RegExp(rule.pattern.source.replaceAll(' ', '\\s+'), rule.pattern.flags);
    for (const match of flat.matchAll(pattern)) {
      findings.push({
        line: lineOf(match.index),
        rule: rule.name,
        text: match[0].replace(/\s+/g, ' '),
        why: rule.why,
      });
    }
  }
  return findings.sort((a, b) => a.line - b.line);
}

/** The comments of a TypeScript source, with every other character blanked so that offsets keep their lines. */
export function commentsOf(source: string): string {
  let out = '';
  let at = 0;
  while (at < source.length) {
    const char = source[at]!;
    const next = source[at + 1];
    if (char === '/' && next === '/') {
      const end = source.indexOf('\n', at);
      const stop = end < 0 ? source.length : end;
      out += source.slice(at, stop);
      at = stop;
    } else if (char === '/' && next === '*') {
      const end = source.indexOf('*/', at + 2);
      const stop = end < 0 ? source.length : end + 2;
      out += source.slice(at, stop);
      at = stop;
    } else if (char === '"' || char === "'" || char === '`') {
      // A string (a template's `${…}` is read as part of it: enough for comments, which never sit inside one).
      let end = at + 1;
      while (end < source.length && source[end] !== char) end += source[end] === '\\' ? 2 : 1;
      out += source.slice(at, end + 1).replace(/[^\n]/g, ' ');
      at = end + 1;
    } else {
      out += char === '\n' ? '\n' : ' ';
      at++;
    }
  }
  return out;
}
