// `npm run lint:words` (scripts/lint-words.ts, rules in scripts/process-words.ts) finds the words of how the project
// was built in the docs and the source comments, and leaves the product's own sessions, probes and targets alone.
import { describe, expect, test } from 'vitest';
import { lintWords } from '../../scripts/lint-words.ts';
import { commentsOf, findProcessWords } from '../../scripts/process-words.ts';

const rulesOf = (text: string) => findProcessWords(text).map((finding) => finding.rule);

describe('the process words', () => {
  test.each([
    ['issue-number', 'The request path changed in issue 16.'],
    ['issue-number', 'Issue 31’s gateway'],
    ['issue-number', 'see issue #27'],
    ['issue-title', 'after the delivery work of issue "Performance"'],
    ['work-session', "The SQLite figure is a run of this session's machine."],
    ['work-session', "on a 2-core machine shared with other sessions' work"],
    ['work-session', 'measured in an earlier session on the same machine'],
    ['probe', '### Security probe: tokens'],
    ['probe', 'a direct probe on a fresh server answers in 24 ms'],
    ['target-met', 'The targets of that issue (p99 under 10 ms) are **not met**.'],
    ['target-met', 'The idle target (150 MB) is not met.'],
    ['target-met', "Issue 14's target, under 20 ms of overhead, is met on both."],
    ['round-of-work', 'Before and after the first round of work on the request path'],
  ])('%s: %s', (rule, text) => {
    expect(rulesOf(text)).toContain(rule);
  });

  test('a phrase wrapped over two lines of Markdown or of a comment is found, on the line it starts', () => {
    expect(findProcessWords('Measured on\nthis\nsession’s machine.')).toMatchObject([
      { line: 2, rule: 'work-session' },
    ]);
    expect(findProcessWords('first line\nfixed in issue\n42, then')).toMatchObject([{ line: 2, rule: 'issue-number' }]);
    expect(findProcessWords("// the other\n// sessions' work here")).toMatchObject([{ line: 1, rule: 'work-session' }]);
  });

  test.each([
    'A real-time editing session saves a version after 30 s without changes.',
    "The widget exchanges the embed key for a short-lived session; the session's token lives 15 minutes.",
    'A `read` token opens a read-only session; an open session outlives its token.',
    'readme.test.ts runs the blocks in order in one bash session.',
    'Each feature declares its readiness probes; `GET /readyz` runs them.',
    'The targets, each in its own process: the real server, a bare app and the mock.',
    'Sign-in sessions end when the member is removed.',
    'An API key issued to a member; the issues tab of Portkey-AI/gateway#1389.',
  ])('the product’s words pass: %s', (text) => {
    expect(findProcessWords(text)).toEqual([]);
  });

  test('only the comments of a source are read, not its strings or code', () => {
    const source = [
      "const note = 'fixed in issue 12';",
      '// A comment naming issue 12.',
      "/* and a block comment of this session's work */",
      'const url = `https://example.com/issue 3`;',
    ].join('\n');
    expect(findProcessWords(commentsOf(source))).toMatchObject([
      { line: 2, rule: 'issue-number' },
      { line: 3, rule: 'work-session' },
    ]);
  });

  test('the docs and the comments of src/ pass', () => {
    expect(lintWords()).toEqual([]);
  });
});
