// `npm run lint:redos`: fails when a regular expression of src/ can backtrack super-linearly, which on one tenant's
// text would hold the event loop every tenant is served on. The patterns are found with the TypeScript compiler
// (scripts/regex-patterns.ts) and each is checked by recheck, which answers safe, vulnerable (with an attack string)
// or unknown (it could not decide in time). A vulnerable pattern whose input is bounded before it runs, and a pattern
// built at run time, pass only when scripts/redos-allowed.ts names it with its reason.
//
// recheck runs its native binary where its optional package installed one (Linux and macOS on x64, macOS on arm64),
// else its JAR where Java is installed, else its pure JavaScript build in a worker thread: the same analysis, offline,
// the last several times slower (`RECHECK_BACKEND=worker` chooses it). Verdicts are kept in
// node_modules/.cache/lint-redos, one file per recheck version and parameters, so a run checks only new patterns.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { check, type Diagnostics, type Parameters } from 'recheck';
import { allowedDynamic, allowedVulnerable } from './redos-allowed.ts';
import { type DynamicPattern, findPatterns, type StaticPattern, sourceFiles } from './regex-patterns.ts';

const root = join(import.meta.dirname, '..');

/**
 * recheck decides with automata where it can model the pattern and fuzzes it otherwise (lookaround, backreferences,
 * a large automaton). Its fuzzing has a fixed seed and is bounded here by the steps of its own matcher, never by time,
 * so that the verdict is the same on a busy machine and with the pure JavaScript build, which is several times slower
 * than the native binary (with recheck's time limits, that build can find a linear pattern vulnerable). The one time
 * limit is on a whole check: a pattern not decided in it is reported, not passed.
 */
export const RECHECK_PARAMETERS: Parameters = {
  timeout: 120_000,
  attackTimeout: null,
  incubationTimeout: null,
  seedingTimeout: null,
};

export type Verdict =
  | { status: 'safe' }
  | { status: 'vulnerable'; complexity: string; attack: string }
  | { status: 'unknown'; reason: string };

function verdictOf(diagnostics: Diagnostics): Verdict {
  if (diagnostics.status === 'safe') return { status: 'safe' };
  if (diagnostics.status === 'vulnerable')
    return { status: 'vulnerable', complexity: diagnostics.complexity.summary, attack: diagnostics.attack.pattern };
  const error = diagnostics.error;
  return { status: 'unknown', reason: 'message' in error ? `${error.kind}: ${error.message}` : error.kind };
}

const keyOf = (pattern: { source: string; flags: string }) => `/${pattern.source}/${pattern.flags}`;

/** Where verdicts are kept: one file for each version of recheck and each set of its parameters. */
function cacheFile(): string {
  const version = createRequire(import.meta.url)('recheck/package.json').version as string;
  const parameters = createHash('sha256').update(JSON.stringify(RECHECK_PARAMETERS)).digest('hex').slice(0, 12);
  return join(root, 'node_modules', '.cache', 'lint-redos', `recheck-${version}-${parameters}.json`);
}

function readCache(file: string): Record<string, Verdict> {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

/** recheck's verdict on each distinct pattern, two at a time (the native binary answers requests concurrently). */
export async function checkPatterns(
  patterns: { source: string; flags: string }[],
  options: { cache?: boolean } = {},
): Promise<Map<string, Verdict>> {
  const file = cacheFile();
  const cached = options.cache === false ? {} : readCache(file);
  const verdicts = new Map<string, Verdict>();
  const toCheck: { source: string; flags: string }[] = [];
  for (const pattern of patterns) {
    const key = keyOf(pattern);
    if (verdicts.has(key) || toCheck.some((other) => keyOf(other) === key)) continue;
    const known = cached[key];
    if (known) verdicts.set(key, known);
    else toCheck.push(pattern);
  }
  let next = 0;
  const worker = async () => {
    while (next < toCheck.length) {
      const pattern = toCheck[next++]!;
      verdicts.set(keyOf(pattern), verdictOf(await check(pattern.source, pattern.flags, RECHECK_PARAMETERS)));
    }
  };
  await Promise.all([worker(), worker()]);
  if (options.cache !== false && toCheck.length > 0) {
    // An unknown verdict (a timeout) may be decided on a quieter machine: only safe and vulnerable are kept.
    const keep: Record<string, Verdict> = { ...cached };
    for (const [key, verdict] of verdicts) if (verdict.status !== 'unknown') keep[key] = verdict;
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify(keep, null, 1));
  }
  return verdicts;
}

export interface AllowedVulnerable {
  /** The file, relative to the repository. */
  file: string;
  /** The pattern's source and flags, as `/source/flags`. */
  pattern: string;
  /** The most characters the pattern can be run on, and where that bound is enforced. */
  bound: string;
  /** Why the pattern is safe within that bound. */
  reason: string;
}

export interface AllowedDynamic {
  file: string;
  /** The function (or constant) whose `new RegExp(…)` calls these are: all of them, so say what each is built from. */
  within: string;
  /** What the pattern is built from, why that cannot make it backtrack, and which test holds it. */
  reason: string;
}

export interface Findings {
  problems: string[];
  checked: number;
  dynamic: number;
  allowed: number;
}

/** The problems of the patterns found, given recheck's verdicts and the allow-lists. */
export function judge(
  found: (StaticPattern | DynamicPattern)[],
  verdicts: Map<string, Verdict>,
  allowed: { vulnerable: AllowedVulnerable[]; dynamic: AllowedDynamic[] },
): Findings {
  const problems: string[] = [];
  const usedVulnerable = new Set<AllowedVulnerable>();
  const usedDynamic = new Set<AllowedDynamic>();
  let checked = 0;
  let dynamic = 0;
  for (const pattern of found) {
    if (pattern.kind === 'dynamic') {
      dynamic++;
      const entry = allowed.dynamic.find(
        (candidate) => candidate.file === pattern.file && candidate.within === pattern.within,
      );
      if (entry) usedDynamic.add(entry);
      else
        problems.push(
          `${pattern.file}:${pattern.line}: a pattern built at run time in ${pattern.within}, which no checker can see: ` +
            pattern.expression +
            ' (escape what a tenant wrote, check the composed pattern by hand, and name it in scripts/redos-allowed.ts)',
        );
      continue;
    }
    checked++;
    const key = keyOf(pattern);
    const verdict = verdicts.get(key);
    if (!verdict || verdict.status === 'safe') continue;
    const entry = allowed.vulnerable.find((candidate) => candidate.file === pattern.file && candidate.pattern === key);
    if (entry) {
      usedVulnerable.add(entry);
      continue;
    }
    if (verdict.status === 'vulnerable')
      problems.push(`${pattern.file}:${pattern.line}: ${key} is ${verdict.complexity}; attack: ${verdict.attack}`);
    else problems.push(`${pattern.file}:${pattern.line}: ${key} could not be checked (${verdict.reason})`);
  }
  for (const entry of allowed.vulnerable)
    if (!usedVulnerable.has(entry))
      problems.push(
        `scripts/redos-allowed.ts: ${entry.file} ${entry.pattern} is allowed but no longer vulnerable there`,
      );
  for (const entry of allowed.dynamic)
    if (!usedDynamic.has(entry))
      problems.push(`scripts/redos-allowed.ts: ${entry.file} ${entry.within} is allowed but builds no pattern there`);
  return { problems, checked, dynamic, allowed: usedVulnerable.size + usedDynamic.size };
}

/** The findings on src/; `LINT_REDOS_CACHE=off` checks every pattern again and keeps nothing. */
export async function lintRedos(files = sourceFiles(join(root, 'src'))): Promise<Findings> {
  const found = findPatterns(files, root);
  const verdicts = await checkPatterns(
    found.filter((pattern) => pattern.kind === 'static'),
    { cache: process.env.LINT_REDOS_CACHE !== 'off' },
  );
  return judge(found, verdicts, { vulnerable: allowedVulnerable, dynamic: allowedDynamic });
}

if (import.meta.main) {
  const findings = await lintRedos();
  for (const problem of findings.problems) console.error(problem);
  if (findings.problems.length > 0) {
    console.error(
      `lint:redos: ${findings.problems.length} regular expression(s) can backtrack super-linearly or are unchecked ` +
        '(rewrite them linear, or bound their input and name them in scripts/redos-allowed.ts).',
    );
    process.exit(1);
  }
  console.log(
    `lint:redos: ${findings.checked} regular expressions of src/ run in linear time, or on bounded input ` +
      `(${findings.allowed} named in scripts/redos-allowed.ts, ${findings.dynamic} built at run time).`,
  );
}
