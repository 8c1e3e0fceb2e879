// The published contract: the edition of the API that clients build against, and the guard that keeps v1 additive.
//   node scripts/contract.ts check                       exit 1, naming each change that breaks the published edition
//   node scripts/contract.ts publish                     publish the current contract; refused when it breaks
//   node scripts/contract.ts publish --breaking "<why>"  publish a break on purpose, with the reason in the changelog
// publish also takes --note "<what changed in behaviour>": what the diff cannot tell (a new check, a new refusal).
// Options for both: --published <dir> (default published/), --current <dir> (default generated/); for publish:
// --changelog <file> (default docs/changelog.md), --date <YYYY-MM-DD> (default today, UTC).
// The documents compared are the bundled ones (openapi.json, asyncapi.json), as `npm run generate` writes them.
// Each changelog entry records the digest of the edition it published, and check refuses a published/ that is not the
// newest entry's: the edition changes only through publish, never by copying files into it.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type Change, type Contract, compareContracts, summarize } from './contract-diff.ts';

const root = resolve(import.meta.dirname, '..');
const FILES = ['openapi.json', 'asyncapi.json'] as const;
const CHANGELOG_HEAD = `# Changelog

What changed in the contract of the API (\`/v1\`), newest first: operations, fields, events and error codes. Version
v1 is stable: a change that would break a client written against an earlier entry is refused by \`npm run
check:breaking\` (part of \`npm test\`), so an entry lists a break only when it was published on purpose, with the
reason. Deprecated operations and fields keep working until their sunset date, when one is given.

Written by \`npm run contract:publish\` from the difference between the published edition (\`published/\`) and the new
one.
`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    published: { type: 'string', default: join(root, 'published') },
    current: { type: 'string', default: join(root, 'generated') },
    changelog: { type: 'string', default: join(root, 'docs', 'changelog.md') },
    breaking: { type: 'string' },
    note: { type: 'string' },
    date: { type: 'string', default: new Date().toISOString().slice(0, 10) },
  },
});

function read(dir: string): Contract {
  const [openapi, asyncapi] = FILES.map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')));
  return { openapi, asyncapi };
}

const where = (dir: string) => relative(process.cwd(), dir) || '.';

/** The digest of a published edition: both documents, byte for byte. */
function digestOf(dir: string): string {
  const hash = createHash('sha256');
  for (const file of FILES) hash.update(readFileSync(join(dir, file)));
  return hash.digest('hex');
}

const DIGEST_LINE = /<!-- published sha256:([0-9a-f]{64}) -->/;

/** The digest the newest changelog entry recorded (the first one in the file), if any. */
function recordedDigest(): string | undefined {
  return existsSync(values.changelog) ? DIGEST_LINE.exec(readFileSync(values.changelog, 'utf8'))?.[1] : undefined;
}
const command = positionals[0];

if (command === 'check') {
  if (!existsSync(join(values.published, FILES[0]))) {
    console.error(
      `check:breaking: no published contract in ${where(values.published)}; publish one with \`npm run contract:publish\`.`,
    );
    process.exit(1);
  }
  if (recordedDigest() !== digestOf(values.published)) {
    console.error(
      `check:breaking: ${where(values.published)} is not the edition that the newest entry of ${where(values.changelog)} published; ` +
        'it changes only through `npm run contract:publish` (restore it with git, then publish).',
    );
    process.exit(1);
  }
  const changes = compareContracts(read(values.published), read(values.current));
  const breaking = summarize(changes, 'breaking', 5);
  if (breaking.length > 0) {
    console.error(
      `check:breaking: ${breaking.length} change(s) break the published contract (${where(values.published)}):`,
    );
    for (const line of breaking) console.error(`  - ${line}`);
    console.error(
      '\nv1 is stable: make the change additive (a new optional field, a new operation, a new event type), or, for an\n' +
        'intended break, publish it with `npm run contract:publish -- --breaking "<what breaks and why>"`.',
    );
    process.exit(1);
  }
  const added = summarize(changes, 'added').length;
  const deprecated = summarize(changes, 'deprecated').length;
  console.log(
    `check:breaking: no breaking change against the published contract (${added} added, ${deprecated} deprecated since).`,
  );
} else if (command === 'publish') {
  const first = !existsSync(join(values.published, FILES[0]));
  if (!first && recordedDigest() !== digestOf(values.published)) {
    console.error(
      `contract:publish: refused, ${where(values.published)} is not the edition the newest entry of ${where(values.changelog)} published (restore it with git).`,
    );
    process.exit(1);
  }
  const current = read(values.current);
  const changes = first ? [] : compareContracts(read(values.published), current);
  const breaking = summarize(changes, 'breaking');
  if (breaking.length > 0 && !values.breaking) {
    console.error('contract:publish: refused, these changes break the published contract:');
    for (const line of breaking) console.error(`  - ${line}`);
    console.error(
      '\nPublish them on purpose with `--breaking "<what breaks and why>"`; the reason goes into the changelog.',
    );
    process.exit(1);
  }
  if (breaking.length === 0 && values.breaking) {
    console.error(
      'contract:publish: refused, --breaking was given but nothing breaks the published contract; leave it out (or use --note).',
    );
    process.exit(1);
  }
  const entry = first
    ? firstEntry(current, values.date)
    : changelogEntry(changes, current, values.date, values.breaking, values.note);
  mkdirSync(values.published, { recursive: true });
  for (const file of FILES) copyFileSync(join(values.current, file), join(values.published, file));
  const withDigest = `${entry}\n<!-- published sha256:${digestOf(values.published)} -->\n`;
  const changelog = existsSync(values.changelog) ? readFileSync(values.changelog, 'utf8') : CHANGELOG_HEAD;
  const at = changelog.search(/^## /m);
  const next =
    at < 0
      ? `${changelog.trimEnd()}\n\n${withDigest}`
      : `${changelog.slice(0, at)}${withDigest}\n${changelog.slice(at)}`;
  mkdirSync(dirname(values.changelog), { recursive: true });
  writeFileSync(values.changelog, next);
  console.log(
    `contract:publish: published to ${where(values.published)}; ${where(values.changelog)} has the entry:\n\n${entry}`,
  );
} else {
  console.error('usage: node scripts/contract.ts check | publish [--breaking "<why>"]');
  process.exit(2);
}

function firstEntry(contract: Contract, date: string): string {
  const operations = Object.values<Record<string, unknown>>(contract.openapi.paths).flatMap((item) =>
    Object.keys(item).filter((key) => ['get', 'put', 'post', 'patch', 'delete'].includes(key)),
  ).length;
  const events = Object.keys(contract.openapi.webhooks ?? {}).length;
  return `## ${date}\n\nFirst published edition of v1 (${contract.openapi.info.version}): ${operations} operations and ${events} event types.\n`;
}

function changelogEntry(
  changes: Change[],
  contract: Contract,
  date: string,
  breakingReason: string | undefined,
  note: string | undefined,
): string {
  const sections: string[] = [`## ${date}\n`];
  if (note) sections.push(`${note.trim()}\n`);
  const section = (title: string, lines: string[]) => {
    if (lines.length > 0) sections.push(`### ${title}\n\n${lines.map((line) => `- ${line}`).join('\n')}\n`);
  };
  section('Added', summarize(changes, 'added', 10));
  section(
    'Deprecated',
    summarize(changes, 'deprecated', 10).map((line) => line + sunsetOf(line, contract)),
  );
  const breaking = summarize(changes, 'breaking', 10);
  if (breaking.length > 0) {
    sections.push(`### Breaking\n\n${breakingReason}\n\n${breaking.map((line) => `- ${line}`).join('\n')}\n`);
  }
  if (sections.length === (note ? 2 : 1)) sections.push('No change to operations, fields or events.\n');
  return sections.join('\n');
}

/** ` (sunset <date>)` for a deprecated operation that names one with `x-sunset`. */
function sunsetOf(line: string, contract: Contract): string {
  const match = /^(GET|PUT|POST|PATCH|DELETE) (\S+):/.exec(line);
  const sunset = match ? contract.openapi.paths[match[2]!]?.[match[1]!.toLowerCase()]?.['x-sunset'] : undefined;
  return sunset ? ` (sunset ${sunset})` : '';
}
