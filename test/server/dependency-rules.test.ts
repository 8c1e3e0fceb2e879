// The dependency rules of .dependency-cruiser.cjs (npm run lint:boundaries) fail on a break, naming the rule: a small
// tree in the repository's layout, with one import breaking each rule beside the imports the rules allow, cruised
// with the repository's own configuration.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '../..');
const config = join(root, '.dependency-cruiser.cjs');
const cli = join(root, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');
const rules = (createRequire(import.meta.url)(config) as { forbidden: { name: string }[] }).forbidden.map(
  (rule) => rule.name,
);

/** Files of the tree: path → source. Comments say which rule an import breaks; the others are allowed. */
const tree: Record<string, string> = {
  'src/platform/clock.ts': 'export const now = () => new Date();\n',
  'src/platform/feature.ts':
    "import { alphaFeature } from '../features/alpha/index.ts'; // platform-imports-no-feature\nexport const x = alphaFeature;\n",
  'src/storage/migrations/001_first.ts':
    "import { helper } from '../../features/alpha/index.ts'; // storage-imports-nothing-above\nexport const m = helper;\n",
  // Storage stands below the platform: the query logger and the features' migrations are handed in, not imported.
  'src/storage/database.ts':
    "import { now } from '../platform/clock.ts'; // storage-imports-nothing-above\nexport const d = now;\n",
  'src/config.ts':
    "import { helper } from './features/alpha/index.ts'; // config-imports-nothing-above\n" +
    "import { now } from './platform/clock.ts'; // config-imports-nothing-above\nexport const c = [helper, now];\n",
  'src/server.ts': "import { features } from './features/index.ts';\nexport { features };\n",
  'src/main.ts':
    "import { inside } from './features/alpha/inside.ts'; // no-deep-feature-import-from-entry-point\nexport const m = inside;\n",
  'src/features/alpha/index.ts':
    "export const alphaFeature = { name: 'alpha' };\nexport { helper } from './inside.ts';\n",
  'src/features/alpha/inside.ts':
    "import { now } from '../../platform/clock.ts';\nimport { betaThing } from '../beta/index.ts';\n" +
    'export const inside = now;\nexport const helper = () => betaThing;\n',
  'src/features/index.ts':
    "import { alphaFeature } from './alpha/index.ts';\nexport const features = [alphaFeature];\n",
  'src/features/alpha/uses-list.ts':
    "import type { features } from '../index.ts'; // feature-list-only-from-entry-points\nexport type L = typeof features;\n",
  'src/features/alpha/uses-server.ts':
    "import { features } from '../../server.ts'; // no-entry-point-import\nexport const f = features;\n",
  // beta → alpha while alpha → beta: no-feature-cycle, and at run time no-runtime-cycle-across-features.
  'src/features/beta/index.ts': "export { betaThing } from './thing.ts';\n",
  'src/features/beta/thing.ts':
    "import { inside } from '../alpha/inside.ts'; // no-deep-cross-feature-import\nexport const betaThing = () => inside();\n",
  // Type-only: counts as a deep import, not as a run-time cycle.
  'src/features/gamma/index.ts':
    "import type { Engine } from '../delta/engine.ts'; // no-deep-cross-feature-import\nexport type E = Engine;\n",
  'src/features/alpha/uses-delta.ts': "import type { Engine } from '../delta/index.ts';\nexport type D = Engine;\n",
  'src/features/delta/index.ts': "export type { Engine } from './engine.ts';\n",
  'src/features/delta/engine.ts': 'export interface Engine { run(): void }\n',
};

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

async function depcruise(cwd: string, ...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [cli, 'src', '--config', config, ...args], { cwd });
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, stdout: failed.stdout };
  }
}

describe('the dependency rules', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dependency-rules-'));
    for (const [path, source] of Object.entries(tree)) {
      await mkdir(join(dir, dirname(path)), { recursive: true });
      await writeFile(join(dir, path), source);
    }
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('fail on a break with a message that names the rule and says why', async () => {
    const { code, stdout } = await depcruise(dir, '--output-type', 'err-long');
    expect(code).not.toBe(0);
    for (const rule of rules) expect(stdout).toContain(`error ${rule}:`);
    // err-long prints the rule's comment: the why, and what to do instead.
    expect(stdout).toContain("only through that feature's index.ts");
  });

  test('flag exactly the breaks: a feature index, the platform and type-only imports of an index are allowed', async () => {
    const { stdout } = await depcruise(dir, '--output-type', 'json');
    const found = (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations.map(
      (v) => `${v.rule.name} ${v.from} → ${v.to}`,
    );
    expect(found.sort()).toEqual(
      [
        'config-imports-nothing-above src/config.ts → src/features/alpha/index.ts',
        'config-imports-nothing-above src/config.ts → src/platform/clock.ts',
        'feature-list-only-from-entry-points src/features/alpha/uses-list.ts → src/features/index.ts',
        'no-deep-cross-feature-import src/features/beta/thing.ts → src/features/alpha/inside.ts',
        'no-deep-cross-feature-import src/features/gamma/index.ts → src/features/delta/engine.ts',
        'no-deep-feature-import-from-entry-point src/main.ts → src/features/alpha/inside.ts',
        'no-entry-point-import src/features/alpha/uses-server.ts → src/server.ts',
        'no-feature-cycle src/features/alpha → src/features/beta',
        'no-feature-cycle src/features/beta → src/features/alpha',
        // One cycle, reported once (at the edge where the cruiser met it first).
        'no-runtime-cycle-across-features src/features/alpha/inside.ts → src/features/beta/index.ts',
        'platform-imports-no-feature src/platform/feature.ts → src/features/alpha/index.ts',
        'storage-imports-nothing-above src/storage/database.ts → src/platform/clock.ts',
        'storage-imports-nothing-above src/storage/migrations/001_first.ts → src/features/alpha/index.ts',
      ].sort(),
    );
  });
});
