// POST /search: a pipeline of steps run in order, each seeing the outputs of the earlier ones as `stepResults`.
// This module validates the request, runs each step through its own module (search engine, Cypher paths,
// hydration) and assembles the `_SearchResultResponse` with its optional debug entries. Access is never decided
// here: every step's SQL applies the one access module (SEARCH for the search engine, READ for paths and hydration).
import { performance } from 'node:perf_hooks';
import type { Settings } from '../../config/schema.js';
import { badContent } from '../../errors.js';
import { type ExpressionOptions, resolveExpressions } from '../../search/language/expressions.js';
import { parseSort } from '../../search/language/sort.js';
import {
  type DebugFields,
  type PathsOutput,
  type SearchEngineOptions,
  type SearchEngineOutput,
  TOTAL_HITS_EXACT_UP_TO,
} from '../../search/results.js';
import { type ElementId, isPlainObject as isObject, parseElementId } from '../../values.js';
import type { ElementJson } from '../elements/representation.js';
import { type Metrics, noMetrics } from '../metrics.js';
import type { Transactions, Tx } from '../transactions.js';
import type { AdmissionLimits, SearchAdmission } from './admission.js';
import type { SearchEngine } from './ports.js';
import { runCypherPaths, runSearchEngine } from './steps.js';

/** Step types; the reference implementation's name for the search-engine step is accepted as well. */
const SEARCH_ENGINE = 'searchengine-query-dsl-mixin';
const STEP_TYPES: Record<string, StepKind> = {
  [SEARCH_ENGINE]: 'search-engine',
  'elasticsearch-query-dsl-mixin': 'search-engine',
  'cypher-path-subset': 'cypher',
  'element-hydration': 'hydration',
};
type StepKind = 'search-engine' | 'cypher' | 'hydration';
/** The step type names a request may use (the reference's older name of the search-engine step too). */
export const STEP_TYPE_NAMES = Object.keys(STEP_TYPES);

// Limits the spec leaves open ("not shown"), chosen so one request cannot occupy the database for long.
const MAX_PIPELINE_STEPS = 20;
const MAX_HYDRATED = 10_000;
const PAGE_SIZE = { default: 25, min: 1, max: 1000 };

type JsonObject = Record<string, unknown>;

interface Step {
  index: number;
  type: string;
  kind: StepKind;
  query: unknown;
  parameters: JsonObject;
}

type StepOutput =
  | { kind: 'search-engine'; value: SearchEngineOutput }
  | { kind: 'cypher'; value: PathsOutput }
  | { kind: 'hydration'; value: Hydrated };

/**
 * Hydrated elements as the database rendered them (storage/queries/element-json.ts). The response splices the
 * rendered text in; they are parsed only when a later step's `stepResults` needs them as values.
 */
class Hydrated {
  private parsed: ElementJson[] | null = null;
  constructor(
    readonly ids: ElementId[],
    readonly bodies: string[],
  ) {}

  get elements(): ElementJson[] {
    this.parsed ??= this.bodies.map((body) => JSON.parse(body) as ElementJson);
    return this.parsed;
  }
}

/** What running one step yields: its output (for `stepResults` and hydration) and its extra debug fields. */
interface StepRun {
  output: StepOutput;
  fields: DebugFields;
}

interface DebugEntry extends JsonObject {
  input: { type: string; query: unknown; parameters: JsonObject };
  'step-handler': string;
  start: number;
  end: number;
  duration: number;
}

/**
 * The time each statement of a search may take: the setting, or by default 10 s on a PostgreSQL server and 3 s on
 * the embedded database, which runs one statement at a time for the whole process. 0: no budget (on the embedded
 * database the budget costs searches time, decision 021; an installation that trusts its users may turn it off).
 */
export const searchBudgetSeconds = (settings: Settings, kind: 'postgres' | 'pglite'): number =>
  settings.search.statementTimeoutInSeconds ?? (kind === 'postgres' ? 10 : 3);

/**
 * The admission's limits (admission.ts) for a database of `connections` connections: 'auto' runs half of them at
 * once (at least one), which leaves the other half to every other request.
 */
export const searchAdmissionLimits = (settings: Settings, connections: number): AdmissionLimits => ({
  maxConcurrent:
    settings.search.maxConcurrent === 'auto' ? Math.max(1, Math.floor(connections / 2)) : settings.search.maxConcurrent,
  maxPerUser: settings.search.maxConcurrentPerUser,
  maxQueued: settings.search.maxQueued,
  queueTimeoutMs: Math.round(settings.search.queueTimeoutInSeconds * 1000),
});

export class Search {
  constructor(
    private readonly transactions: Transactions,
    private readonly engine: SearchEngine,
    private readonly settings: Settings,
    private readonly admission: SearchAdmission,
    private readonly metrics: Metrics = noMetrics,
  ) {}

  /** Searches running and waiting now (admission.ts). */
  get load() {
    return this.admission.load;
  }

  get limits(): AdmissionLimits {
    return this.admission.limits;
  }

  /**
   * Runs the pipeline for an authenticated user and returns the serialised `_SearchResultResponse`, once the
   * admission gives it a turn (admission.ts); `signal` ends a wait whose client went away, and the wait counts from
   * `arrivedAt` (performance.now(), by default now).
   */
  async run(userId: string, body: unknown, signal?: AbortSignal, arrivedAt?: number): Promise<string> {
    const request = parseRequest(body);
    const done = await this.admission.admit(userId, signal, arrivedAt);
    try {
      // The embedded database runs a whole search on this thread without giving the event loop a turn, so the
      // requests that arrived meanwhile would be read only after it, one search each, and never queue or time out:
      // they get their turn first, and queue behind this search (or are refused) while it runs.
      if (this.transactions.embedded) await new Promise((resolve) => setImmediate(resolve));
      return await this.runAdmitted(userId, request);
    } finally {
      done();
    }
  }

  private async runAdmitted(userId: string, request: SearchRequest): Promise<string> {
    const budget = searchBudgetSeconds(this.settings, this.transactions.embedded ? 'pglite' : 'postgres');
    try {
      // Every statement of the search runs under the search's time budget, local to this transaction, so that no
      // query a client can write holds a connection and its CPU for long (on PGlite, the whole process: SECURITY.md).
      return await this.transactions.transaction(
        (tx) => this.runSteps(tx, userId, request),
        budget === 0 ? {} : { statementTimeoutMs: Math.round(budget * 1000) },
      );
    } catch (error) {
      const failure = this.transactions.failureOf(error);
      if (failure === 'statement-cancelled') {
        this.metrics.searchCancelled();
        throw badContent(
          `The search ran longer than its budget of ${budget} s per statement (search.statementTimeoutInSeconds); narrow it down.`,
        );
      }
      // The statement nested deeper than the database's stack allows (pglite-wire.ts raises the same on the embedded one).
      if (failure === 'too-complex')
        throw badContent('The search is too complex for the database to run; simplify it.');
      throw error;
    }
  }

  private async runSteps(tx: Tx, userId: string, request: SearchRequest): Promise<string> {
    const outputs: StepOutput[] = [];
    const debug: DebugEntry[] = [];
    let results: Hydrated = new Hydrated([], []);
    let listed: SearchEngineOutput | null = null;

    const steps = [...request.steps];
    // When the last step is not a hydration its output is hydrated implicitly, so `results` always holds elements.
    // An empty pipeline is a valid search that finds nothing (as in the reference implementation).
    if (steps.length > 0 && steps.at(-1)!.kind !== 'hydration')
      steps.push({ index: steps.length, type: 'element-hydration', kind: 'hydration', query: null, parameters: {} });

    for (const step of steps) {
      const parameters: JsonObject = {
        ...request.parameters,
        ...step.parameters,
        stepResults: outputs.map(stepResult),
      };
      const start = nowSeconds();
      const { output, fields } = await this.runStep(tx, userId, step, parameters, outputs.at(-1) ?? null);
      const end = nowSeconds();
      this.metrics.searchStep(step.kind, end - start);
      outputs.push(output);
      if (output.kind === 'hydration') results = output.value;
      if (output.kind === 'search-engine') listed = output.value;
      if (request.debug)
        debug.push({
          input: { type: step.type, query: step.query ?? null, parameters },
          'step-handler':
            step.index < request.steps.length ? step.type : `${step.type} (implicit, after the last step)`,
          start,
          ...fields,
          end,
          duration: Math.round((end - start) * 1e6) / 1e6,
        });
    }
    const response = `{"type":"_SearchResultResponse","results":[${results.bodies.join(',')}]${listing(listed)}`;
    return request.debug ? `${response},"debug":${debugJson(debug)}}` : `${response}}`;
  }

  private get expressions(): ExpressionOptions {
    return this.settings.expression;
  }

  private async runStep(
    tx: Tx,
    userId: string,
    step: Step,
    parameters: JsonObject,
    previous: StepOutput | null,
  ): Promise<StepRun> {
    switch (step.kind) {
      case 'search-engine': {
        const query = resolveExpressions(step.query, parameters, this.expressions);
        if (!isObject(query))
          throw badContent(`steps[${step.index}].query must be a query DSL object (or an expression yielding one).`);
        const { output, combinedQuery } = await runSearchEngine(
          this.engine,
          tx,
          userId,
          query,
          engineOptions(step, parameters),
        );
        const { totalHits, totalHitsRelation } = output;
        return {
          output: { kind: 'search-engine', value: output },
          fields: { indices: '*', combinedQuery, totalHits, totalHitsRelation },
        };
      }
      case 'cypher': {
        if (typeof step.query !== 'string' || step.query.trim() === '')
          throw badContent(`steps[${step.index}].query must be a Cypher query string.`);
        const paths = await runCypherPaths(this.engine, tx, userId, step.query, parameters);
        return { output: { kind: 'cypher', value: paths }, fields: {} };
      }
      case 'hydration':
        return this.hydrate(tx, userId, step, parameters, previous);
    }
  }

  private async hydrate(
    tx: Tx,
    userId: string,
    step: Step,
    parameters: JsonObject,
    previous: StepOutput | null,
  ): Promise<StepRun> {
    const requested =
      step.query === null || step.query === undefined
        ? idsOf(step, previous)
        : explicitIds(step, parameters, this.expressions);
    // Duplicates are dropped, keeping the first occurrence (and so the requested order).
    const ids = [...new Set(requested)];
    const redundant = requested.length - ids.length;
    if (ids.length > MAX_HYDRATED)
      throw badContent(
        `steps[${step.index}] would hydrate ${ids.length} elements; at most ${MAX_HYDRATED} are allowed.`,
      );
    const rows = await this.engine.readableElements(tx, userId, ids);
    const byId = new Map(rows.map((row) => [row.id, row.body]));
    const found = ids.filter((id) => byId.has(id));
    const elements = new Hydrated(
      found,
      found.map((id) => byId.get(id)!),
    );
    const fields: DebugFields = { accessibleElementIds: found };
    if (redundant > 0)
      fields.redundantElementIds = {
        note: 'duplicate element ids were removed before hydration',
        count: redundant,
        elementIds: duplicatesOf(requested),
      };
    return { output: { kind: 'hydration', value: elements }, fields };
  }
}

const nowSeconds = () => Math.round((performance.timeOrigin + performance.now()) * 1000) / 1e6;

interface SearchRequest {
  steps: Step[];
  debug: boolean;
  parameters: JsonObject;
}

function parseRequest(body: unknown): SearchRequest {
  if (!isObject(body)) throw badContent('The request body must be a JSON object with `steps`.');
  for (const key of Object.keys(body))
    if (!['steps', 'debug', 'parameters'].includes(key))
      throw badContent(`Unknown property '${key}' in the search request.`);
  const { steps, debug = false, parameters = {} } = body;
  if (typeof debug !== 'boolean') throw badContent('`debug` must be a boolean.');
  if (parameters !== null && !isObject(parameters)) throw badContent('`parameters` must be an object.');
  if (!Array.isArray(steps)) throw badContent('`steps` must be an array of steps.');
  if (steps.length > MAX_PIPELINE_STEPS) throw badContent(`A search may have at most ${MAX_PIPELINE_STEPS} steps.`);
  return { steps: steps.map(parseStep), debug, parameters: parameters ?? {} };
}

function parseStep(raw: unknown, index: number): Step {
  if (!isObject(raw)) throw badContent(`steps[${index}] must be an object.`);
  for (const key of Object.keys(raw))
    if (!['type', 'query', 'parameters'].includes(key))
      throw badContent(`Unknown property '${key}' in steps[${index}].`);
  const { type, query = null, parameters = {} } = raw;
  if (typeof type !== 'string') throw badContent(`steps[${index}].type must be a string.`);
  const kind = STEP_TYPES[type];
  if (kind === undefined)
    throw badContent(`steps[${index}].type '${type}' is not a step type (${Object.keys(STEP_TYPES).join(', ')}).`);
  if (parameters !== null && !isObject(parameters)) throw badContent(`steps[${index}].parameters must be an object.`);
  if ((parameters as JsonObject | null)?.stepResults !== undefined)
    throw badContent(`steps[${index}].parameters must not set 'stepResults': the pipeline provides it.`);
  if (kind !== 'hydration' && query === null) throw badContent(`steps[${index}] (${type}) needs a query.`);
  return { index, type, kind, query, parameters: parameters ?? {} };
}

function engineOptions(step: Step, p: JsonObject): SearchEngineOptions {
  const where = `steps[${step.index}].parameters`;
  const int = (name: string, fallback: number, min: number, max: number) => {
    const v = p[name] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      throw badContent(`${where}.${name} must be an integer from ${min} to ${max}.`);
    return v;
  };
  const types = (name: string) => {
    const v = p[name] ?? null;
    if (v === null) return null;
    if (!Array.isArray(v) || !v.every((t) => typeof t === 'string'))
      throw badContent(`${where}.${name} must be a list of type names.`);
    return v as string[];
  };
  const minScore = p.minScore ?? null;
  if (minScore !== null && (typeof minScore !== 'number' || !Number.isFinite(minScore)))
    throw badContent(`${where}.minScore must be a number or null.`);
  const page = int('page', 1, 1, 1_000_000);
  const sort = parseSort(p.sort, p.search_after, where);
  if (sort?.after && page !== 1)
    throw badContent(`${where}.page must be 1 with search_after, which says where the page starts.`);
  return {
    page,
    pageSize: int('pageSize', PAGE_SIZE.default, PAGE_SIZE.min, PAGE_SIZE.max),
    minScore,
    nodeTypes: types('nodeTypes'),
    relationTypes: types('relationTypes'),
    sort,
    trackTotalHits: trackTotalHits(p.track_total_hits, where),
  };
}

/**
 * What the response says of the last search-engine step's hits beyond the elements: how many there are, and where a
 * sorted list continues (the last hit's sort values, when the page is full).
 */
function listing(output: SearchEngineOutput | null): string {
  if (output === null) return '';
  const { totalHits, totalHitsRelation, searchAfter } = output;
  return `,"totalHits":${totalHits},"totalHitsRelation":"${totalHitsRelation}"${searchAfter ? `,"searchAfter":${JSON.stringify(searchAfter)}` : ''}`;
}

/**
 * `track_total_hits` as Elasticsearch takes it: true (the default bound), false (no count: 0 and `gte` once there
 * is a hit) or how far the count is exact, at most the default bound.
 */
function trackTotalHits(value: unknown, where: string): number {
  if (value === undefined || value === null || value === true) return TOTAL_HITS_EXACT_UP_TO;
  if (value === false) return 0;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > TOTAL_HITS_EXACT_UP_TO)
    throw badContent(
      `${where}.track_total_hits must be true, false or an integer from 0 to ${TOTAL_HITS_EXACT_UP_TO}.`,
    );
  return value;
}

/** What later steps see of a step's output in `stepResults`. */
const stepResult = (output: StepOutput): unknown =>
  output.kind === 'hydration' ? output.value.elements : output.value;

/** The ids an implicit hydration takes from the previous step: hits in score order, path elements in path order. */
function idsOf(step: Step, previous: StepOutput | null): ElementId[] {
  if (previous === null)
    throw badContent(`steps[${step.index}] (element-hydration) has no query and no previous step to hydrate.`);
  switch (previous.kind) {
    case 'search-engine':
      return previous.value.elements.map((e) => e.id);
    case 'cypher':
      // Each path alternates node, relation, node…; keeping that order makes the results read like the paths.
      return previous.value.paths.flatMap((path) =>
        path.nodeIds.flatMap((node, i) => (i < path.relationIds.length ? [node, path.relationIds[i]!] : [node])),
      );
    case 'hydration':
      return previous.value.ids;
  }
}

function explicitIds(step: Step, parameters: JsonObject, options: ExpressionOptions): ElementId[] {
  const where = `steps[${step.index}].query`;
  if (!isObject(step.query)) throw badContent(`${where} must be an object with 'elementIds'.`);
  for (const key of Object.keys(step.query))
    if (key !== 'elementIds') throw badContent(`Unknown property '${key}' in ${where}.`);
  const ids = resolveExpressions(step.query.elementIds, parameters, options);
  if (!Array.isArray(ids))
    throw badContent(`${where}.elementIds must be a list of element ids (or an expression yielding one).`);
  return ids.map((id, i) => {
    const elementId = parseElementId(id);
    if (elementId === null) throw badContent(`${where}.elementIds[${i}] is not an element id.`);
    return elementId;
  });
}

function duplicatesOf(ids: ElementId[]): ElementId[] {
  const seen = new Set<ElementId>();
  const dupes = new Set<ElementId>();
  for (const id of ids) (seen.has(id) ? dupes : seen).add(id);
  return [...dupes];
}

/**
 * Characters the debug output may have. Every entry repeats the results of all steps before it (its `stepResults`),
 * so the output grows with the square of the steps: 20 hydrations of a 5 MB element overflowed V8's longest string
 * (a 500 after 2 GB of memory). Serialised entry by entry and refused (400) beyond this.
 */
const MAX_DEBUG_CHARS = 64 * 1024 * 1024;

function debugJson(entries: DebugEntry[]): string {
  const parts: string[] = [];
  let size = 0;
  for (const entry of entries) {
    const text = JSON.stringify(entry);
    size += text.length;
    if (size > MAX_DEBUG_CHARS)
      throw badContent(
        `The debug output would exceed ${MAX_DEBUG_CHARS} characters (each step repeats the results before it); ask without debug, or with fewer steps.`,
      );
    parts.push(text);
  }
  return `[${parts.join(',')}]`;
}
