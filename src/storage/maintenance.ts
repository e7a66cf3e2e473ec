// Autovacuum for the embedded database. PGlite runs PostgreSQL in single-user mode, without autovacuum workers: without
// this, dead rows would stay for good, statistics would go stale, and transaction-id wraparound would end every
// write. Each round makes autovacuum's own decisions, table by table, from the statistics PostgreSQL keeps; requests
// wait while it runs (docs/operations.md, "Maintenance"). PostgreSQL servers vacuum themselves, so this runs on PGlite
// only (jobs.ts). Nor does PGlite checkpoint by itself: the job does that too (checkpointIfDue).
import type { Db } from './db.js';

export interface MaintenanceRound {
  /** Tables vacuumed, as qualified names. */
  vacuumed: string[];
  /** Tables analysed. */
  analyzed: string[];
  /** Whether the whole database was vacuumed because its oldest transaction id came near wraparound. */
  database: boolean;
}

/**
 * The statistics target of the job's ANALYZEs (PostgreSQL's default is 100). ANALYZE samples 300 rows per unit of
 * target, and on PGlite every request waits while it runs; 30 cuts that to about a quarter and left the benchmark's
 * plans as good (docs/decisions/016-maintenance-analyze-target.md).
 */
export const ANALYZE_STATISTICS_TARGET = 30;

const setting = (name: string) => `current_setting('${name}')::float8`;

// Per table: is a VACUUM due (dead rows, or inserted rows for the visibility map, or an old relfrozenxid), is an
// ANALYZE due. reltuples is -1 for a table never vacuumed or analysed.
const DUE = `
  SELECT format('%I.%I', s.schemaname, s.relname) AS name,
         s.n_dead_tup > ${setting('autovacuum_vacuum_threshold')} + ${setting('autovacuum_vacuum_scale_factor')} * greatest(c.reltuples, 0)
           OR s.n_ins_since_vacuum > ${setting('autovacuum_vacuum_insert_threshold')} + ${setting('autovacuum_vacuum_insert_scale_factor')} * greatest(c.reltuples, 0)
           OR age(c.relfrozenxid) > ${setting('autovacuum_freeze_max_age')} AS vacuum,
         s.n_mod_since_analyze > ${setting('autovacuum_analyze_threshold')} + ${setting('autovacuum_analyze_scale_factor')} * greatest(c.reltuples, 0) AS analyze
  FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
  ORDER BY 1`;

/** One round of autovacuum's work on `db`: what it did. */
export async function maintainEmbedded(db: Db): Promise<MaintenanceRound> {
  // PGlite collects the statistics but flushes them only when asked.
  await db.query('SELECT pg_stat_force_next_flush()');
  const round: MaintenanceRound = { vacuumed: [], analyzed: [], database: false };
  const {
    rows: [wrap],
  } = await db.query<{ due: boolean }>(
    `SELECT age(datfrozenxid) > ${setting('autovacuum_freeze_max_age')} AS due FROM pg_database WHERE datname = current_database()`,
  );
  if (wrap?.due) {
    // The system catalogs count towards the database's age too; one VACUUM of everything covers them.
    await db.query('VACUUM');
    round.database = true;
  }
  const { rows } = await db.query<{ name: string; vacuum: boolean; analyze: boolean }>(DUE);
  // The names come from the catalogue, quoted by format('%I'); VACUUM takes no bind parameters. One statement per
  // table and step rather than VACUUM (ANALYZE): the requests waiting for PGlite's one connection get their turn
  // between two of them, so a round holds them up for its longest step, not for all of it.
  for (const table of rows) {
    if (table.vacuum && !round.database) {
      await db.query(`VACUUM ${table.name}`);
      round.vacuumed.push(table.name);
    }
    if (table.analyze) {
      await db.transaction(async (tx) => {
        await tx.query(`SET LOCAL default_statistics_target = ${ANALYZE_STATISTICS_TARGET}`);
        await tx.query(`ANALYZE ${table.name}`);
      });
      round.analyzed.push(table.name);
    }
  }
  return round;
}

/** When a checkpoint is due; PostgreSQL's own schedule when not given (checkpointIfDue). */
export interface CheckpointSchedule {
  /** Seconds since the last checkpoint: checkpoint_timeout. */
  seconds?: number;
  /** WAL written since it: half of max_wal_size, about where PostgreSQL's checkpointer starts one. */
  walBytes?: number;
}

/**
 * WAL since the last checkpoint beyond which a checkpoint is worth making: more than the last one's own record, so
 * that an idle database is left alone (an explicit CHECKPOINT always writes one).
 */
const SOME_WAL_BYTES = 1024;

/**
 * A CHECKPOINT when PostgreSQL's checkpointer would make one. PGlite runs PostgreSQL in single-user mode, where no
 * checkpointer runs and neither time nor WAL volume starts one: the WAL was never recycled while the process ran,
 * and `DATA_DIR/db/pg_wal` grew by every byte written until a clean shutdown, filling the disk in the end. After a
 * checkpoint PostgreSQL recycles the segments before it and removes those it will not need. Whether it made one.
 */
export async function checkpointIfDue(db: Db, schedule: CheckpointSchedule = {}): Promise<boolean> {
  const {
    rows: [since],
  } = await db.query<{ wal: number; seconds: number; timeout: number; walBytes: number }>(
    `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), checkpoint_lsn)::float8 AS wal,
            extract(epoch FROM now() - checkpoint_time)::float8 AS seconds,
            extract(epoch FROM current_setting('checkpoint_timeout')::interval)::float8 AS timeout,
            pg_size_bytes(current_setting('max_wal_size'))::float8 / 2 AS "walBytes"
     FROM pg_control_checkpoint()`,
  );
  if (!since || since.wal <= SOME_WAL_BYTES) return false;
  if (since.seconds < (schedule.seconds ?? since.timeout) && since.wal < (schedule.walBytes ?? since.walBytes))
    return false;
  await db.query('CHECKPOINT');
  return true;
}
