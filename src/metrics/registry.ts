// The service's Prometheus metrics: one registry per service instance (so that several in one process, as in the
// tests, never mix), its metrics defined once here. Names follow Prometheus' conventions (base units in the name,
// `_total` counters) and every label has a bounded set of values: route templates, never paths, ids or tokens.
// docs/operations.md ("Metrics") lists them with their meaning.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Metrics } from '../domain/metrics.js';

/** Latencies of whole requests: a cached GET /<id> takes well under a millisecond, an upload may take minutes. */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];
/** Latencies of one SQL statement or one blob store call. */
const CALL_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** A request's labels: the route's template ('unmatched' for a 404 of the router), its method, `2xx`..`5xx`. */
export interface RequestLabels {
  route: string;
  method: string;
  statusClass: string;
}

/** The children of the request metrics for one set of labels, made once: labelling costs a hash per call. */
interface RequestSeries {
  count: Counter.Internal;
  duration: Histogram.Internal<string>;
}

export class PromMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly requestSeries = new Map<string, RequestSeries>();
  private readonly statementSeries = new Map<string, Histogram.Internal<string>>();

  private readonly requests = new Counter({
    name: 'trellis_http_requests_total',
    help: 'HTTP requests answered, by route template, method and status class.',
    labelNames: ['route', 'method', 'status_class'],
    registers: [this.registry],
  });
  private readonly requestDuration = new Histogram({
    name: 'trellis_http_request_duration_seconds',
    help: 'Time from a request to the end of its response, by route template, method and status class.',
    labelNames: ['route', 'method', 'status_class'],
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });
  readonly receivedBytes = new Counter({
    name: 'trellis_file_received_bytes_total',
    help: 'Bytes of uploads (direct and resumable) stored in the blob store, by store.',
    labelNames: ['store'],
    registers: [this.registry],
  });
  readonly sentBytes = new Counter({
    name: 'trellis_file_sent_bytes_total',
    help: 'Bytes of files (or ranges) downloads opened in the blob store, by store.',
    labelNames: ['store'],
    registers: [this.registry],
  });
  readonly tooManyRequests = new Counter({
    name: 'trellis_http_too_many_requests_total',
    help: 'Requests answered 429 (login back-off, registration throttle), by route template.',
    labelNames: ['route'],
    registers: [this.registry],
  });
  readonly loginBackoffs = new Counter({
    name: 'trellis_login_backoffs_total',
    help: 'Logins and password changes refused because their identifier or address is backing off after failures.',
    registers: [this.registry],
  });
  private readonly statementDuration = new Histogram({
    name: 'trellis_db_statement_duration_seconds',
    help: "Time of one SQL statement, by the statement's name ('unnamed' for statements without one).",
    labelNames: ['statement'],
    buckets: CALL_BUCKETS,
    registers: [this.registry],
  });
  readonly statementErrors = new Counter({
    name: 'trellis_db_statement_errors_total',
    help: 'SQL statements that failed (any error, the database unavailable included), by statement name.',
    labelNames: ['statement'],
    registers: [this.registry],
  });
  private readonly searchStepDuration = new Histogram({
    name: 'trellis_search_step_duration_seconds',
    help: 'Time of one step of a search pipeline, by step type (search-engine, cypher, hydration).',
    labelNames: ['step'],
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });
  private readonly searchCancellations = new Counter({
    name: 'trellis_search_budget_cancellations_total',
    help: 'Searches cancelled at their per-statement budget (search.statementTimeoutInSeconds).',
    registers: [this.registry],
  });
  readonly blobDuration = new Histogram({
    name: 'trellis_blob_operation_duration_seconds',
    help: 'Time of one blob store call until it resolved, by store (disk, s3) and operation.',
    labelNames: ['store', 'operation'],
    buckets: CALL_BUCKETS,
    registers: [this.registry],
  });
  readonly blobErrors = new Counter({
    name: 'trellis_blob_operation_errors_total',
    help: 'Blob store calls that failed, by store (disk, s3) and operation.',
    labelNames: ['store', 'operation'],
    registers: [this.registry],
  });
  // `background_job`, not `job`: Prometheus gives every scraped series the target's `job` label.
  readonly jobRuns = new Counter({
    name: 'trellis_background_job_runs_total',
    help: 'Runs of the background jobs, by job and outcome (success, failure).',
    labelNames: ['background_job', 'outcome'],
    registers: [this.registry],
  });
  readonly jobLastSuccess = new Gauge({
    name: 'trellis_background_job_last_success_timestamp_seconds',
    help: 'When each background job last succeeded, in seconds since 1970.',
    labelNames: ['background_job'],
    registers: [this.registry],
  });

  /** Counts one answered request. */
  request(labels: RequestLabels, seconds: number): void {
    const key = `${labels.route} ${labels.method} ${labels.statusClass}`;
    let series = this.requestSeries.get(key);
    if (series === undefined) {
      const values = { route: labels.route, method: labels.method, status_class: labels.statusClass };
      series = { count: this.requests.labels(values), duration: this.requestDuration.labels(values) };
      this.requestSeries.set(key, series);
    }
    series.count.inc();
    series.duration.observe(seconds);
  }

  /** Times one SQL statement. */
  statement(name: string, seconds: number): void {
    let series = this.statementSeries.get(name);
    if (series === undefined) {
      series = this.statementDuration.labels(name);
      this.statementSeries.set(name, series);
    }
    series.observe(seconds);
  }

  searchStep(kind: string, seconds: number): void {
    this.searchStepDuration.labels(kind).observe(seconds);
  }

  searchCancelled(): void {
    this.searchCancellations.inc();
  }

  /** A gauge (or a counter, `counter: true`) read from the service's state at every scrape. */
  observe(name: string, help: string, read: () => number, counter = false): void {
    const collect = function (this: Gauge | Counter) {
      if (this instanceof Gauge) this.set(read());
      else {
        this.reset();
        this.inc(read());
      }
    };
    if (counter) new Counter({ name, help, registers: [this.registry], collect });
    else new Gauge({ name, help, registers: [this.registry], collect });
  }

  /**
   * Readiness as a gauge, so that Prometheus can alert on it: 1 when ready, and 1 per dependency that is up. Read
   * at each scrape (readiness reuses its report briefly, health/readiness.ts).
   */
  watchReadiness(report: () => Promise<{ ready: boolean; checks: Record<string, string> }>): void {
    new Gauge({
      name: 'trellis_ready',
      help: 'Whether /health/ready answers 200 (1) or 503 (0).',
      registers: [this.registry],
      async collect() {
        this.set((await report()).ready ? 1 : 0);
      },
    });
    new Gauge({
      name: 'trellis_dependency_up',
      help: 'Whether a dependency answers as readiness needs it (1) or not (0): database, blobStore.',
      labelNames: ['dependency'],
      registers: [this.registry],
      async collect() {
        for (const [name, state] of Object.entries((await report()).checks))
          if (name !== 'instance') this.set({ dependency: name }, state === 'up' ? 1 : 0);
      },
    });
  }

  /** The text a scrape receives, and its content type. */
  async exposition(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
