// The platform and storage know no feature by name: a feature's metrics (Feature.metrics), its span attributes and its
// tables (declared beside it on the Database interface) are named only in the feature. The import rules
// (.dependency-cruiser.cjs) keep the platform from importing a feature; this keeps it from spelling a feature's names
// out. Storage's migrations are history and may name any table they made.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { GEN_AI } from '../../src/features/engine/observability.ts';
import { features } from '../../src/features/index.ts';
import type { Feature } from '../../src/platform/feature.ts';

const root = join(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

/** The code of a file without its comments. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

/** The names a text spells out: a table as a whole string literal, a metric or attribute anywhere in the code. */
function spelled(text: string, { tables, others }: { tables: string[]; others: string[] }): string[] {
  return [
    ...tables.filter((name) => ["'", '"', '`'].some((quote) => text.includes(`${quote}${name}${quote}`))),
    ...others.filter((name) => text.includes(name)),
  ];
}

/** The tables the features declare on the Database interface (`declare module '…/storage/schema.ts'`). */
function featureTables(): string[] {
  const tables: string[] = [];
  for (const file of sources('src/features')) {
    const text = readFileSync(join(root, file), 'utf8');
    const declared = /declare module '[./]*storage\/schema\.ts' \{\s*interface Database \{([^}]*)\}/.exec(text);
    for (const match of declared?.[1]?.matchAll(/^\s*(\w+)\??:/gm) ?? []) tables.push(match[1]!);
  }
  return tables;
}

describe('the ground floor names no feature', () => {
  const names = {
    tables: featureTables(),
    others: [
      ...(features as readonly Feature[]).flatMap((feature) => (feature.metrics ?? []).map((metric) => metric.name)),
      ...Object.values(GEN_AI),
    ],
  };
  const files = [...sources('src/platform'), ...sources('src/storage').filter((f) => !f.includes('/migrations/'))];

  test('the names looked for are there: the engine and webhooks metrics, the webhooks tables', () => {
    expect(names.others).toEqual(
      expect.arrayContaining(['ai_provider_calls_total', 'webhook_delivery_attempts_total']),
    );
    expect(names.tables).toEqual(expect.arrayContaining(['events', 'webhook_deliveries']));
    const breaking = "// 'events'\nconst t = 'webhook_deliveries';\nconst m = PREFIX + 'ai_tokens_total';";
    expect(spelled(code(breaking), names)).toEqual(['webhook_deliveries', 'ai_tokens_total']);
  });

  test.each(files)('%s', (file) => {
    expect(spelled(code(readFileSync(join(root, file), 'utf8')), names)).toEqual([]);
  });
});
