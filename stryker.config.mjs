// Mutation testing: `npm run test:mutation` (README, "Tests"). Too slow for every CI run, so not part of `npm test`.
// The tests it runs are vitest.mutation.config.ts's. Reports: reports/mutation/mutation.html and .json.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  mutate: ['src/platform/**/*.ts', 'src/features/webhooks/**/*.ts'],
  // Each mutant runs only the tests that reached it.
  coverageAnalysis: 'perTest',
  // A mutant in code that runs at import time (constants, module setup) would need every test file re-run in a fresh
  // process; skipped, and reported as ignored.
  ignoreStatic: true,
  // The machine is shared; raise with --concurrency on a machine of your own.
  concurrency: 1,
  // On top of the test's time without the mutant: a mutant that makes a test wait (a loop that never ends, a timer
  // never cleared) counts as detected once this much longer has passed.
  timeoutMS: 10_000,
  // The first run, all tests once with coverage, takes several minutes on two cores.
  dryRunTimeoutMinutes: 40,
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
};
