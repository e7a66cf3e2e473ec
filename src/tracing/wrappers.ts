// The database and the blob store as traces see them: a client span per SQL statement and per blob store call, a
// child of the request's span. Wrappers, like the metrics' (src/metrics), so that the adapters stay as they are.
import type { BlobStore } from '../blob/blob-store.js';
import type { Db, Queryable } from '../storage/db.js';
import type { Tracing } from './port.js';

type Run = Queryable['query'];

function tracedRun(run: Run, tracing: Tracing): Run {
  return ((text: string, values?: readonly unknown[], name?: string) =>
    tracing.call(
      name === undefined ? 'sql' : `sql ${name.replace(/_[0-9a-f]{24}$/, '')}`,
      // The text holds no values: they are bind parameters.
      { 'db.system.name': 'postgresql', 'db.query.text': text, ...(name ? { 'db.statement.name': name } : {}) },
      () => run(text, values, name),
    )) as Run;
}

function tracedQueryable(q: Queryable, tracing: Tracing): Queryable {
  // Looked up at each call, not bound once (as metrics/database.ts does).
  const query = tracedRun((text, values, name) => q.query(text, values, name), tracing);
  const read = q.read === q.query ? query : tracedRun((text, values, name) => q.read(text, values, name), tracing);
  return { query, read };
}

/** `db` with a span for each of its statements. */
export function tracedDb(db: Db, tracing: Tracing): Db {
  const { query, read } = tracedQueryable(db, tracing);
  return {
    kind: db.kind,
    ...(db.sessionEpoch ? { sessionEpoch: db.sessionEpoch } : {}),
    ...(db.pool ? { pool: db.pool } : {}),
    query,
    read,
    transaction: (work, options) => db.transaction((tx) => work(tracedQueryable(tx, tracing)), options),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close(),
  } as Db;
}

const CALLS = ['write', 'replace', 'append', 'fork', 'open', 'openUpload', 'uploadSize', 'delete'] as const;

/** `store` with a span for each call that reaches the disk or the bucket on a request's behalf. */
export function tracedBlobStore(store: BlobStore, name: string, tracing: Tracing): BlobStore {
  const wrapped = new Map<PropertyKey, unknown>();
  for (const operation of CALLS) {
    const call = (store[operation] as (...args: unknown[]) => Promise<unknown>).bind(store);
    wrapped.set(operation, (...args: unknown[]) =>
      tracing.call(`blob ${operation}`, { 'trellis.blob.store': name }, () => call(...args)),
    );
  }
  return new Proxy(store, {
    get: (target, property, receiver) => wrapped.get(property) ?? Reflect.get(target, property, receiver),
  });
}
