// The throw-away servers of scripts/pg-cluster.ts and scripts/ceph-cluster.ts, as the benchmarks and the tests call
// them: a PostgreSQL server and an S3-compatible object store.
import { type ObjectStore, startObjectStore as startStore } from '../../scripts/ceph-cluster.js';
import { type PgCluster, startCluster as startPg } from '../../scripts/pg-cluster.js';
import { freePort } from '../../scripts/process-tools.js';

export { freePort, type ObjectStore, type PgCluster };

/** `keepDir`: a cluster kept in that directory, reused when it is there already, stopped cleanly, not removed. */
export function startCluster(
  log: (msg: string) => void,
  settings?: Record<string, string | number>,
  keepDir?: string,
): Promise<PgCluster> {
  return startPg({ log, settings, keepDir });
}

export function startObjectStore(log: (msg: string) => void): Promise<ObjectStore> {
  return startStore({ log });
}
