// Vitest global setup: decides which database backends the tests run against
// and where the PostgreSQL server is.
//
//   TRELLIS_TEST_BACKENDS  comma list of "pglite" and/or "postgres" (default both)
//   TRELLIS_TEST_PG_URL    server for the "postgres" backend; set by `npm test`.
//                          When missing (plain `npx vitest`), a throw-away
//                          cluster is started here and stopped in teardown.
//
// Tests read the result with inject('pgUrl') / inject('backends').

import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { type PgCluster, startCluster } from '../bench/lib/cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string | null;
    backends: string[];
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const backends = (process.env.TRELLIS_TEST_BACKENDS ?? 'pglite,postgres')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  const unknown = backends.filter((b) => b !== 'pglite' && b !== 'postgres');
  if (unknown.length > 0) {
    throw new Error(
      `TRELLIS_TEST_BACKENDS: unknown backend(s) ${unknown.join(', ')} (expected pglite and/or postgres)`,
    );
  }

  let pgUrl: string | null = null;
  let cluster: PgCluster | null = null;
  if (backends.includes('postgres')) {
    pgUrl = process.env.TRELLIS_TEST_PG_URL || null;
    if (!pgUrl) {
      cluster = await startCluster((msg) => process.stderr.write(`[global-setup] ${msg}\n`));
      pgUrl = cluster.url;
      // Test files forked by vitest inherit this environment as well.
      process.env.TRELLIS_TEST_PG_URL = pgUrl;
    }
  }

  project.provide('pgUrl', pgUrl);
  project.provide('backends', backends);

  if (!cluster) return undefined;
  const started = cluster;
  return async () => {
    await started.stop();
  };
}
