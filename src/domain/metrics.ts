// What the domain reports for the service's metrics (src/metrics implements it with Prometheus counters). Most
// measurements are taken at the edges (HTTP hooks, the database and blob store adapters); only what the domain alone
// knows passes through this port.
export interface Metrics {
  /** One step of a search pipeline ran for `seconds` ('search-engine', 'cypher' or 'hydration'). */
  searchStep(kind: string, seconds: number): void;
  /** A search was cancelled at its per-statement budget (search.statementTimeoutInSeconds). */
  searchCancelled(): void;
}

/** Reports nothing: the default of every domain class that takes the port, and what runs with metrics off. */
export const noMetrics: Metrics = {
  searchStep() {},
  searchCancelled() {},
};
