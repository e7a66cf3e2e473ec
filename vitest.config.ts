import { defineConfig } from 'vitest/config';

// Run through `npm test` (scripts/test.ts), which type-checks, starts a
// throw-away PostgreSQL cluster and sets TRELLIS_TEST_PG_URL. Running
// `npx vitest` directly also works: test/global-setup.ts then starts its own.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    poolOptions: {
      forks: { minForks: 1, maxForks: 2 }, // the machines have 2 cores
    },
    fileParallelism: true,
    reporters: ['default'],
  },
});
