// `npm run lint:redos` (scripts/lint-redos.ts) finds the regular expressions of src/ with the TypeScript compiler and
// fails on one that backtracks super-linearly, naming its place and recheck's attack string, unless
// scripts/redos-allowed.ts names it with the bound of its input; a pattern built at run time must be named there too.
// Each case writes a few files of its own and runs the finder, the judge or recheck on them.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { checkPatterns, judge, type Verdict } from '../../scripts/lint-redos.ts';
import { type FoundPattern, findPatterns } from '../../scripts/regex-patterns.ts';

let directory: string;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'lint-redos-'));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function found(files: Record<string, string>): Promise<FoundPattern[]> {
  for (const [name, text] of Object.entries(files)) await writeFile(join(directory, name), text);
  return findPatterns(
    Object.keys(files).map((name) => join(directory, name)),
    directory,
  );
}

const shown = (patterns: FoundPattern[]) =>
  patterns.map((p) =>
    p.kind === 'static' ? `${p.file}:${p.line} /${p.source}/${p.flags}` : `${p.file}:${p.line} ${p.within}`,
  );

describe('the patterns found', () => {
  test('regex literals, and RegExp of values the compiler can work out, across modules', async () => {
    const patterns = await found({
      'words.ts': "export const WORDS = ['a+', 'b'] as const;\nexport const EDGE = '(?:x+)+';\n",
      'use.ts': [
        "import { EDGE, WORDS } from './words.ts';",
        "import * as W from './words.ts';",
        'const LITERAL = /\\s+$/;',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a fixture's source text, whose template is its own
        "const joined = new RegExp(`${EDGE}|${WORDS.join('|')}`, 'u');",
        'const through = RegExp(W.EDGE);',
        "const copied = new RegExp(LITERAL.source + '!', 'g');",
        "const keys = new RegExp(Object.keys({ one: 1, two: 2 }).join('|'));",
      ].join('\n'),
    });
    expect(shown(patterns)).toEqual([
      'use.ts:3 /\\s+$/',
      'use.ts:4 /(?:x+)+|a+|b/u',
      'use.ts:5 /(?:x+)+/',
      'use.ts:6 /\\s+$!/g',
      'use.ts:7 /one|two/',
    ]);
  });

  test("a helper's pattern at each call with literal arguments; built from anything else, it is dynamic", async () => {
    const patterns = await found({
      'helper.ts': [
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a fixture's source text, whose template is its own
        "const w = (...alternatives: string[]) => new RegExp(`(?:${alternatives.join('|')})$`, 'i');",
        'const strong = (...alternatives: string[]) => [w(...alternatives), 2] as const;',
        "export const RULES = [strong('a+', 'b'), w('c')];",
        'export function find(text: string, word: string) {',
        '  return new RegExp(word).test(text);',
        '}',
      ].join('\n'),
    });
    expect(shown(patterns)).toEqual([
      'helper.ts:1 w',
      'helper.ts:3 /(?:a+|b)$/i',
      'helper.ts:3 /(?:c)$/i',
      'helper.ts:5 find',
    ]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a fixture's source text, whose template is its own
    expect(patterns[0]).toMatchObject({ expression: "new RegExp(`(?:${alternatives.join('|')})$`, 'i')" });
  });
});

describe('the judgement', () => {
  const at = (line: number, source: string, flags = ''): FoundPattern => ({
    kind: 'static',
    file: 'src/x.ts',
    line,
    source,
    flags,
  });
  const verdicts = new Map<string, Verdict>([
    [
      '/\\s+$/',
      { status: 'vulnerable', complexity: '2nd degree polynomial', attack: "'\\t'.repeat(54773) + '\\x00\\t'" },
    ],
    ['/^a$/', { status: 'safe' }],
    ['/(a|a)*$/', { status: 'unknown', reason: 'timeout' }],
  ]);

  test('a vulnerable pattern fails with its place and the attack; a safe one passes', () => {
    const { problems, checked } = judge([at(3, '\\s+$'), at(4, '^a$')], verdicts, { vulnerable: [], dynamic: [] });
    expect(checked).toBe(2);
    expect(problems).toEqual([
      "src/x.ts:3: /\\s+$/ is 2nd degree polynomial; attack: '\\t'.repeat(54773) + '\\x00\\t'",
    ]);
  });

  test('a pattern recheck cannot decide fails too', () => {
    const { problems } = judge([at(5, '(a|a)*$')], verdicts, { vulnerable: [], dynamic: [] });
    expect(problems).toEqual(['src/x.ts:5: /(a|a)*$/ could not be checked (timeout)']);
  });

  test('the allow-list excuses a pattern in its file, and an entry that excuses nothing fails', () => {
    const entry = { file: 'src/x.ts', pattern: '/\\s+$/', bound: '200 characters', reason: 'a header' };
    expect(judge([at(3, '\\s+$')], verdicts, { vulnerable: [entry], dynamic: [] }).problems).toEqual([]);
    const elsewhere = judge([{ ...at(3, '\\s+$'), file: 'src/y.ts' }], verdicts, { vulnerable: [entry], dynamic: [] });
    expect(elsewhere.problems).toEqual([
      "src/y.ts:3: /\\s+$/ is 2nd degree polynomial; attack: '\\t'.repeat(54773) + '\\x00\\t'",
      'scripts/redos-allowed.ts: src/x.ts /\\s+$/ is allowed but no longer vulnerable there',
    ]);
  });

  test('a pattern built at run time passes only when its function is named, with a reason', () => {
    const dynamic: FoundPattern = {
      kind: 'dynamic',
      file: 'src/x.ts',
      line: 9,
      expression: 'new RegExp(word)',
      within: 'find',
    };
    expect(judge([dynamic], verdicts, { vulnerable: [], dynamic: [] }).problems).toEqual([
      'src/x.ts:9: a pattern built at run time in find, which no checker can see: new RegExp(word) (escape what a tenant wrote, check the composed pattern by hand, and name it in scripts/redos-allowed.ts)',
    ]);
    const named = { file: 'src/x.ts', within: 'find', reason: 'an escaped word between literals' };
    expect(judge([dynamic], verdicts, { vulnerable: [], dynamic: [named] })).toMatchObject({
      problems: [],
      dynamic: 1,
    });
  });
});

test('recheck, offline, finds the attack on a quadratic pattern and passes a linear one', async () => {
  const verdicts = await checkPatterns(
    [
      { source: '\\s+$', flags: '' },
      { source: '(?<!\\s)\\s+$', flags: '' },
    ],
    { cache: false },
  );
  expect(verdicts.get('/\\s+$/')).toMatchObject({ status: 'vulnerable', complexity: '2nd degree polynomial' });
  expect((verdicts.get('/\\s+$/') as { attack: string }).attack).toMatch(/repeat\(\d+\)/);
  expect(verdicts.get('/(?<!\\s)\\s+$/')).toEqual({ status: 'safe' });
}, 120_000);
