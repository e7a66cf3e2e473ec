import { defineConfig } from 'vitest/config';

// The unit tier (`npm run test:unit`): test/unit/ mirrors src/ (src/a/b.ts is tested by test/unit/a/b.test.ts).
// No PostgreSQL server, no object store, no browser: a module that needs SQL runs it on an in-memory PGlite.
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    globalSetup: ['test/unit/global-setup.ts'],
    testTimeout: 30_000,
    // A fresh in-memory PGlite is migrated in a file's beforeAll: seconds on a busy machine.
    hookTimeout: 120_000,
    pool: 'forks',
    poolOptions: { forks: { minForks: 1, maxForks: 2 } },
    reporters: ['default'],
  },
});
