// Background jobs that every instance runs. They are idempotent statements, so several instances on one
// PostgreSQL may run them at once without harm.
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { SHARED_STORE_GRACE_MS } from './domain/files/files.js';
import { measuredRun } from './metrics/jobs.js';
import type { Services } from './services.js';
import { checkpointIfDue, maintainEmbedded } from './storage/maintenance.js';

export interface Job {
  name: string;
  intervalMs: number;
  /** Whether the first run waits one interval (the startup already did the work) instead of running at once. */
  delayed?: boolean;
  run(): Promise<unknown>;
}

export function startJobs(services: Services, config: Config, logger: Logger, extra: Job[] = []) {
  const jobs: Job[] = [
    { name: 'delete-expired-tokens', intervalMs: 60_000, run: () => services.accounts.deleteExpiredTokens() },
    { name: 'clean-uploads', intervalMs: 60_000, run: () => services.uploads.cleanup() },
    { name: 'prune-events', intervalMs: 60_000, run: () => services.events.prune() },
    { name: 'prune-webhook-deliveries', intervalMs: 60_000, run: () => services.webhooks.pruneDeliveries() },
    {
      name: 'forget-credential-failures',
      intervalMs: 60_000,
      run: () => services.accounts.forgetOldCredentialFailures(),
    },
    {
      name: 'forget-registration-counts',
      intervalMs: 60_000,
      run: () => services.accounts.forgetOldRegistrationCounts(),
    },
    // A crash's leftovers in the blob store (on disk the startup sweep ran before the server listened).
    {
      name: 'sweep-files',
      intervalMs: SHARED_STORE_GRACE_MS,
      delayed: config.settings.file.storage === 'disk',
      run: () => services.files.sweep(SHARED_STORE_GRACE_MS),
    },
    // PGlite has no autovacuum of its own (storage/maintenance.ts); a PostgreSQL server has.
    ...(services.db.kind === 'pglite' ? [vacuumJob(services, logger)] : []),
    ...extra,
  ];
  const running = new Set<Promise<unknown>>();
  const timers = jobs.map((job) => {
    const tick = () => {
      const p = measuredRun(job, services.metrics).catch((err) =>
        logger.error({ err, job: job.name }, 'background job failed'),
      );
      running.add(p);
      void p.finally(() => running.delete(p));
    };
    if (!job.delayed) tick();
    const timer = setInterval(tick, job.intervalMs);
    timer.unref();
    return timer;
  });
  return {
    async stop() {
      timers.forEach(clearInterval);
      await Promise.allSettled([...running]);
    },
  };
}

function vacuumJob(services: Services, logger: Logger): Job {
  return {
    name: 'vacuum',
    intervalMs: 60_000,
    run: async () => {
      const started = performance.now();
      const round = await maintainEmbedded(services.db);
      const checkpoint = await checkpointIfDue(services.db);
      if (round.database || round.vacuumed.length + round.analyzed.length > 0 || checkpoint)
        logger.info(
          { ...round, checkpoint, ms: Math.round(performance.now() - started) },
          'embedded database vacuumed',
        );
    },
  };
}
