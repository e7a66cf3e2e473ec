// Typed access to scripts/pg-cluster.mjs (plain JS without declarations): a throw-away PostgreSQL server, for the
// benchmarks and the tests.
export interface PgCluster {
  url: string;
  version: string;
  host: string;
  port: number;
  /** The cluster's data directory (its postmaster.pid names the server's process). */
  dataDir: string;
  stop(): Promise<void>;
}

interface PgClusterModule {
  startCluster(options?: {
    log?: (msg: string) => void;
    settings?: Record<string, string | number>;
    keepDir?: string;
  }): Promise<PgCluster>;
  freePort(host?: string): Promise<number>;
}

let loaded: Promise<PgClusterModule> | null = null;

function module(): Promise<PgClusterModule> {
  // A non-literal specifier: TypeScript does not look for declarations of the .mjs, we type it here instead.
  const specifier = new URL('../../scripts/pg-cluster.mjs', import.meta.url).href;
  loaded ??= import(specifier) as Promise<PgClusterModule>;
  return loaded;
}

/** `keepDir`: a cluster kept in that directory, reused when it is there already, stopped cleanly, not removed. */
export async function startCluster(
  log: (msg: string) => void,
  settings?: Record<string, string | number>,
  keepDir?: string,
): Promise<PgCluster> {
  return (await module()).startCluster({ log, settings, keepDir });
}

export async function freePort(): Promise<number> {
  return (await module()).freePort();
}

/** A throw-away S3-compatible object store (scripts/ceph-cluster.mjs). */
export interface ObjectStore {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The cluster's directory (its daemons' command lines name its configuration there). */
  dir: string;
  startMs: number;
  stop(): Promise<void>;
}

interface CephClusterModule {
  startObjectStore(options?: { log?: (msg: string) => void }): Promise<ObjectStore>;
}

export async function startObjectStore(log: (msg: string) => void): Promise<ObjectStore> {
  const specifier = new URL('../../scripts/ceph-cluster.mjs', import.meta.url).href;
  return ((await import(specifier)) as CephClusterModule).startObjectStore({ log });
}
