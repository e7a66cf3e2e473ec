// The webhooks' metrics (docs/operations.md, "Metrics"): deliveries by outcome and their duration, counted where
// they happen; the webhooks enabled and disabled and the age of the oldest event one of them still has to deliver,
// read from the database when Prometheus scrapes.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DeliveryObserver } from '../domain/webhooks/dispatcher.js';

const DELIVERY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

type Stats = () => Promise<{ enabled: number; disabled: number; lagSeconds: number }>;

export function webhookMetrics(registry: Registry, stats: Stats): DeliveryObserver {
  const deliveries = new Counter({
    name: 'trellis_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome: success (2xx), failure (retried), gave-up (the webhook disabled).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'trellis_webhook_delivery_duration_seconds',
    help: 'Time from sending a webhook delivery to its answer (or its failure).',
    buckets: DELIVERY_BUCKETS,
    registers: [registry],
  });
  // One read serves the three gauges of a scrape.
  let pending: Promise<Awaited<ReturnType<Stats>>> | null = null;
  const read = () => {
    pending ??= stats().finally(() => setImmediate(() => (pending = null)));
    return pending;
  };
  const gauge = (name: string, help: string, pick: (s: Awaited<ReturnType<Stats>>) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        this.set(pick(await read()));
      },
    });
  gauge('trellis_webhooks_enabled', 'Webhooks enabled.', (s) => s.enabled);
  gauge(
    'trellis_webhooks_disabled',
    'Webhooks disabled (by their owner, a 410 or an exhausted retry schedule).',
    (s) => s.disabled,
  );
  gauge(
    'trellis_webhook_lag_seconds',
    'Age of the oldest event an enabled webhook has still to deliver (0: none waits).',
    (s) => s.lagSeconds,
  );
  return {
    delivered(outcome, seconds) {
      deliveries.inc({ outcome });
      duration.observe(seconds);
    },
  };
}
