// `npm run lint` fails on code that breaks the formatter's or the linter's rules. Each case writes one small file
// that breaks one rule into a directory of its own, with the repository's biome.json, and runs Biome there the way
// the lint script runs it: the exit status and the rule named in the output are what a contributor would see.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repository = join(import.meta.dirname, '..', '..');
const biome = join(repository, 'node_modules', '.bin', 'biome');
let directory: string;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'biome-rules-'));
  const config = JSON.parse(await readFile(join(repository, 'biome.json'), 'utf8'));
  // The probe directory is not a git repository, and the schema path is relative to the repository.
  config.vcs = { enabled: false };
  delete config.$schema;
  await writeFile(join(directory, 'biome.json'), JSON.stringify(config));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

function check(name: string, source: string): Promise<{ status: number; output: string }> {
  return writeFile(join(directory, name), source).then(
    () =>
      new Promise((resolve) => {
        execFile(
          biome,
          ['check', '--error-on-warnings', '--colors=off', name],
          { cwd: directory, timeout: 30_000 },
          (error, stdout, stderr) => {
            const status = error ? Number((error as { code?: number }).code ?? 1) : 0;
            resolve({ status, output: `${stdout}${stderr}` });
          },
        );
      }),
  );
}

describe('the lint rules of npm run lint', () => {
  it('pass a file that follows them', async () => {
    const result = await check(
      'clean.ts',
      'export function shout(name: string): string {\n  return name.toUpperCase();\n}\n',
    );
    expect(result.output).not.toMatch(/lint\/|format/);
    expect(result.status).toBe(0);
  });

  it('fail on an explicit any', async () => {
    const result = await check('any.ts', 'export function echo(value: any): unknown {\n  return value;\n}\n');
    expect(result.status).not.toBe(0);
    expect(result.output).toContain('lint/suspicious/noExplicitAny');
  });

  it('fail on an unused import', async () => {
    const result = await check(
      'unused.ts',
      "import { join } from 'node:path';\n\nexport function double(value: number): number {\n  return value * 2;\n}\n",
    );
    expect(result.status).not.toBe(0);
    expect(result.output).toContain('lint/correctness/noUnusedImports');
  });

  it('fail on imports out of order', async () => {
    const result = await check(
      'order.ts',
      "import { tmpdir } from 'node:os';\nimport { join } from 'node:path';\nimport { createHash } from 'node:crypto';\n\nexport const where = join(tmpdir(), createHash('sha256').digest('hex'));\n",
    );
    expect(result.status).not.toBe(0);
    expect(result.output).toContain('assist/source/organizeImports');
  });

  it('fail on code the formatter would change (quotes, semicolons, a line over 120 columns)', async () => {
    const result = await check('format.ts', 'export const greeting = "hello"\n');
    expect(result.status).not.toBe(0);
    expect(result.output).toMatch(/format/);
    const long = `export const words = [${Array.from({ length: 30 }, (_, i) => `'word${i}'`).join(', ')}];\n`;
    expect(long.length).toBeGreaterThan(120);
    const wrapped = await check('long.ts', long);
    expect(wrapped.status).not.toBe(0);
    expect(wrapped.output).toMatch(/format/);
  });
});
