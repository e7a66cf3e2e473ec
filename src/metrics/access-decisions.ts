// Remembered access decisions (storage/access-decisions.ts) as the metrics see them: a lookup that finds a decision
// is a hit unless the decision turns out stale, in which case it is forgotten (the access epoch moved) and decided
// again. Counted by a subclass, so that the cache itself stays as it is.
import type { SessionAccessEpoch } from '../storage/access-decisions.js';
import { type AccessDecision, AccessDecisions } from '../storage/access-decisions.js';
import type { PromMetrics } from './registry.js';

export class CountedAccessDecisions extends AccessDecisions {
  private found = 0;
  private missed = 0;
  private stale = 0;

  constructor(options: { sessionEpoch?: SessionAccessEpoch }, metrics: PromMetrics) {
    super(options);
    metrics.observe(
      'trellis_access_decision_hits_total',
      'Permission checks answered by a remembered decision, without deciding again.',
      () => this.found - this.stale,
      true,
    );
    metrics.observe(
      'trellis_access_decision_misses_total',
      'Permission checks decided by the database: none was remembered, or the remembered one was stale.',
      () => this.missed + this.stale,
      true,
    );
    metrics.observe(
      'trellis_access_epoch_bumps_total',
      'Remembered decisions found stale because the access epoch had moved (a change of access since).',
      () => this.stale,
      true,
    );
    metrics.observe('trellis_access_decisions_remembered', 'Decisions remembered now.', () => this.size);
  }

  override lookup(key: string, now: Date): AccessDecision | undefined {
    const decision = super.lookup(key, now);
    if (decision === undefined) this.missed++;
    else this.found++;
    return decision;
  }

  override forget(key: string): void {
    this.stale++;
    super.forget(key);
  }
}
