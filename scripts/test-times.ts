// Where the test suite spends its time, from vitest's JSON report:
//   npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/times.json
//   node scripts/test-times.ts [test-results/times.json] [--top 20]
// prints the slowest files (wall time of each file, from its first test's start to its end) and the slowest tests.
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';

interface Report {
  startTime: number;
  numTotalTests: number;
  testResults: Array<{
    name: string;
    startTime: number;
    endTime: number;
    assertionResults: Array<{ fullName: string; duration: number | null; status: string }>;
  }>;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '20' } },
});
const root = resolve(import.meta.dirname, '..');
const report = JSON.parse(
  readFileSync(positionals[0] ?? resolve(root, 'test-results', 'times.json'), 'utf8'),
) as Report;
const top = Number(values.top);
const seconds = (ms: number) => (ms / 1000).toFixed(1).padStart(7);

const files = report.testResults.map((file) => ({
  name: relative(root, file.name),
  ms: file.endTime - file.startTime,
  tests: file.assertionResults.length,
}));
const end = Math.max(...report.testResults.map((file) => file.endTime));
const sum = files.reduce((total, file) => total + file.ms, 0);
console.log(
  `${files.length} files, ${report.numTotalTests} tests; ${seconds(end - report.startTime).trim()} s from start to the last file's end, ${seconds(sum).trim()} s of files in all.\n`,
);
console.log('slowest files (s, tests):');
for (const file of files.sort((a, b) => b.ms - a.ms).slice(0, top))
  console.log(`${seconds(file.ms)}  ${String(file.tests).padStart(4)}  ${file.name}`);

const tests = report.testResults.flatMap((file) =>
  file.assertionResults.map((test) => ({
    name: `${relative(root, file.name)} > ${test.fullName}`,
    ms: test.duration ?? 0,
  })),
);
console.log('\nslowest tests (s):');
for (const test of tests.sort((a, b) => b.ms - a.ms).slice(0, top)) console.log(`${seconds(test.ms)}  ${test.name}`);
