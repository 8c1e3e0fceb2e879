// The vitest configuration of `npm run test:mutation` (stryker.config.json). The same tests as `vitest run`, minus
// those whose code under test runs where Stryker cannot switch mutants on, or that do not run src/platform or
// src/features/webhooks at all:
// - tests that spawn server, worker or CLI processes (`*processes*.test.ts`, main, cli): the child processes run the
//   sandbox's code with no active mutant, so they can only slow the run down;
// - the contract suite (Prism mock, global setup), the generated client and the docs: they test generated code and
//   documents.
// And on SQLite only: the same tests on PostgreSQL double the time of every mutant, and the files mutated here have
// little that differs between the two (claiming with `skip locked` and LISTEN/NOTIFY do; `npm test` covers them).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/server/**/*.test.ts', 'test/webhooks/**/*.test.ts', 'test/platform/**/*.test.ts'],
    exclude: [
      '**/node_modules/**',
      'test/**/*processes*.test.ts',
      'test/server/main.test.ts',
      'test/server/cli.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // An address where nothing listens: test/support/server.ts then runs the storage tests on SQLite only.
    env: { TEST_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', REQUIRE_POSTGRES: '0' },
  },
});
