// SQL of the failed-credential counters (schema/tables.ts; the policy is domain/accounts/throttle.ts).
import type { Queryable } from '../db.js';

export interface FailureCounter {
  key: string;
  failures: number;
  last_failure: Date;
}

/** The counters of the given keys that had a failure after `since` (older ones are forgotten). */
export async function failureCounters(q: Queryable, keys: string[], since: Date): Promise<FailureCounter[]> {
  const { rows } = await q.query<FailureCounter>(
    'SELECT key, failures, last_failure FROM credential_failures WHERE key = ANY($1::text[]) AND last_failure > $2',
    [keys, since],
    'credential_failures_of',
  );
  return rows;
}

/**
 * Counts one failure on each key, starting again from one where the last failure is older than `since`. The keys
 * are locked in one order, so that two concurrent failures on the same keys cannot deadlock.
 */
export async function recordFailure(q: Queryable, keys: string[], now: Date, since: Date): Promise<void> {
  await q.query(
    `INSERT INTO credential_failures (key, failures, last_failure)
     SELECT k, 1, $2 FROM unnest($1::text[]) AS k ORDER BY k
     ON CONFLICT (key) DO UPDATE SET
       failures = CASE WHEN credential_failures.last_failure > $3 THEN credential_failures.failures + 1 ELSE 1 END,
       last_failure = EXCLUDED.last_failure`,
    [[...keys].sort(), now, since],
    'credential_failure',
  );
}

export async function clearFailures(q: Queryable, key: string): Promise<void> {
  await q.query('DELETE FROM credential_failures WHERE key = $1', [key], 'credential_failures_clear');
}

/** Deletes the counters whose last failure is older than `before`; returns how many. */
export async function deleteOldFailures(q: Queryable, before: Date): Promise<number> {
  const { rowCount } = await q.query('DELETE FROM credential_failures WHERE last_failure <= $1', [before]);
  return rowCount;
}
