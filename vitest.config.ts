import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Starts the contract suite's targets once: the Prism mock and a real server on loopback (fresh SQLite), or only
    // the running server named by CONTRACT_BASE_URL.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
