import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Starts the contract suite's targets once: the Prism mock and a real server on loopback (fresh SQLite), or only
    // the running server named by CONTRACT_BASE_URL.
    globalSetup: ['test/support/global-setup.ts'],
    // Most files wait more than they compute (servers starting, browsers, retries and leases running out), so two
    // files at a time even on two cores, where vitest's default (cores − 1) runs one: the whole suite took 980 s with
    // one worker and 574 s with two on a 2-core machine, all green.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
