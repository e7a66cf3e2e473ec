// Background jobs that every instance runs. They are idempotent statements, so several instances on one
// PostgreSQL may run them at once without harm.
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import type { Services } from './services.js';

export interface Job {
  name: string;
  intervalMs: number;
  run(): Promise<unknown>;
}

export function startJobs(services: Services, _config: Config, logger: Logger, extra: Job[] = []) {
  const jobs: Job[] = [
    { name: 'delete-expired-tokens', intervalMs: 60_000, run: () => services.accounts.deleteExpiredTokens() },
    { name: 'clean-uploads', intervalMs: 60_000, run: () => services.uploads.cleanup() },
    ...extra,
  ];
  const running = new Set<Promise<unknown>>();
  const timers = jobs.map((job) => {
    const tick = () => {
      const p = job.run().catch((err) => logger.error({ err, job: job.name }, 'background job failed'));
      running.add(p);
      void p.finally(() => running.delete(p));
    };
    tick();
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
