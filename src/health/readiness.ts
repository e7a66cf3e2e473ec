// The readiness probe's answer (GET /health/ready): whether this instance should be sent requests. It is when its
// database answers with the schema this version expects, its blob store answers, and it is not shutting down.
// Probes come every second or so from several load balancers: concurrent ones share one check, and a check's
// result is reused briefly, so that probing costs the database one small statement a second at most.

/** A dependency's check: resolves when it is up, throws (saying why) when it is not. */
type Check = () => Promise<void>;

export interface ReadinessChecks {
  database: Check;
  blobStore: Check;
}

export type CheckState = 'up' | 'down' | 'timeout' | 'shutting-down';

export interface ReadinessReport {
  ready: boolean;
  /**
   * One entry per dependency ('up', 'down', 'timeout': no answer in time), and `instance: 'shutting-down'` while the
   * instance stops. The reasons are logged, not answered: the probe needs no credentials, and a reason names hosts.
   */
  checks: Record<string, CheckState>;
}

/** Hears each change of a dependency's state, with the reason when it is not up. */
export type ReadinessListener = (name: string, state: CheckState, reason: string | null) => void;

/** How long a check may take before its dependency counts as down. */
const CHECK_TIMEOUT_MS = 1000;
/** How long a report is reused. */
const REUSE_MS = 250;

export class Readiness {
  private draining = false;
  private current: Promise<ReadinessReport> | null = null;
  private madeAt = 0;

  private readonly last = new Map<string, CheckState>();
  /** The checks still waiting for their dependency (past the timeout too): no second one is started meanwhile. */
  private readonly pending = new Set<string>();

  private listener: ReadinessListener = () => {};

  constructor(private readonly checks: ReadinessChecks) {}

  /** `listener` hears every later change of a dependency's state (the server logs them). */
  watch(listener: ReadinessListener): void {
    this.listener = listener;
  }

  /** From now on the instance reports that it is not ready: it is shutting down. */
  drain(): void {
    this.draining = true;
  }

  async report(): Promise<ReadinessReport> {
    const now = performance.now();
    if (this.current === null || now - this.madeAt > REUSE_MS) {
      this.madeAt = now;
      this.current = this.check();
    }
    const report = await this.current;
    if (!this.draining) return report;
    return { ready: false, checks: { ...report.checks, instance: 'shutting-down' } };
  }

  private async check(): Promise<ReadinessReport> {
    const names = Object.keys(this.checks) as (keyof ReadinessChecks)[];
    const outcomes = await Promise.all(names.map((name) => this.run(name)));
    const checks: Record<string, CheckState> = {};
    names.forEach((name, i) => {
      const { state, reason } = outcomes[i]!;
      checks[name] = state;
      const before = this.last.get(name);
      // The first report is no change: an instance that starts up is expected to be ready.
      if (before !== state && (before !== undefined || state !== 'up')) this.listener(name, state, reason);
      this.last.set(name, state);
    });
    return { ready: outcomes.every((o) => o.state === 'up'), checks };
  }

  private run(name: keyof ReadinessChecks): Promise<Outcome> {
    if (this.pending.has(name))
      return Promise.resolve({ state: 'timeout', reason: 'the previous check still waits for an answer' });
    this.pending.add(name);
    const check = Promise.resolve().then(() => this.checks[name]());
    void check.catch(() => {}).finally(() => this.pending.delete(name));
    return within(check, CHECK_TIMEOUT_MS);
  }
}

interface Outcome {
  state: CheckState;
  reason: string | null;
}

/** 'up' when `check` resolves within `ms`, else why not. */
async function within(check: Promise<void>, ms: number): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve({ state: 'timeout', reason: `no answer within ${ms} ms` }), ms);
  });
  try {
    return await Promise.race([
      check.then(
        (): Outcome => ({ state: 'up', reason: null }),
        (error: unknown): Outcome => ({ state: 'down', reason: describe(error) }),
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A failure in one line for the log; the database's unavailability (a 503 problem) says more in its cause. */
function describe(error: unknown): string {
  const cause = (error as { cause?: unknown })?.cause;
  const own = error instanceof Error ? error.message : String(error);
  const deeper = cause instanceof Error && cause.message !== '' ? `: ${cause.message}` : '';
  return `${own.replace(/^service-unavailable: /, '')}${deeper}`;
}
