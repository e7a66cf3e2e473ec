// Background jobs (src/jobs.ts) as the metrics see them: runs by outcome, and when each last succeeded, which is
// what an alert on a job falling behind (the upload sweep) looks at.
import type { PromMetrics } from './registry.js';

/** What this needs of a job of src/jobs.ts (its type is not imported: jobs.ts imports this). */
interface Job {
  name: string;
  run(): Promise<unknown>;
}

/** Runs `job` once, counted when there are metrics. */
export function measuredRun(job: Job, metrics: PromMetrics | null): Promise<unknown> {
  if (metrics === null) return job.run();
  return job.run().then(
    (result) => {
      metrics.jobRuns.labels(job.name, 'success').inc();
      metrics.jobLastSuccess.labels(job.name).setToCurrentTime();
      return result;
    },
    (error: unknown) => {
      metrics.jobRuns.labels(job.name, 'failure').inc();
      throw error;
    },
  );
}
