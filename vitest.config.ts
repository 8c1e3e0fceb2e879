import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The test files that run each in a process of its own (vitest's isolation); every other file shares its worker's
 * process, and the modules it has loaded, with the files that worker ran before it.
 */
const ISOLATED = [
  // Holds the server's validator to the generated validators by counting what it compiles since the process started:
  // its first test must be the first use of the process's shared validator.
  'test/server/validators-generated.test.ts',
];

export default defineConfig({
  test: {
    // Most files wait more than they compute (servers starting, browsers, retries and leases running out), so three
    // files at a time even on two cores, where vitest's default (cores − 1) runs one.
    maxWorkers: Math.max(3, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ISOLATED],
          // A file's imports (the server's module graph, about 2 s a file) are loaded once per worker rather than
          // once per file. What a file changes in its process (environment variables, timers, listeners, module
          // state) it must restore: the next file of the worker runs in the same process.
          isolate: false,
          // Starts the contract suite's targets once: the Prism mock and a real server on loopback (fresh SQLite), or
          // only the running server named by CONTRACT_BASE_URL.
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: { name: 'isolated', include: ISOLATED, isolate: true },
      },
    ],
  },
});
