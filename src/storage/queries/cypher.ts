// The `cypher-path-subset` search step: a query of the Cypher subset (src/domain/search/cypher-parse.ts) compiled to
// ONE parameterised SQL statement over `elements`, returning paths as ids in path order. Every value is a bind
// parameter; the only text generated into the SQL is our own (aliases, column names, our caps).
//
// Shape of the statement (built by `Compilation.compile`):
//   u        the UNWIND rows (jsonb_array_elements of the bound list, WITH ORDINALITY), when there is an UNWIND
//   w<i>     per pattern, a recursive walk: a state machine over the pattern's relation segments. A row is a
//            partial path (nodes, rels, the position of each pattern node in it) and its state (segment, hops in
//            it). The walk starts from the pattern end that is best bound (ids from WHERE/UNWIND, then conditions,
//            then a label) and extends one relation per step through index probes; READ access is checked on
//            every node as it is added (and so on every relation: one whose two ends the caller may read is
//            readable), which prunes early: a path with an element the caller cannot read is dropped anyway, so
//            pruning gives the same result while walking far less.
//   w<i>c    the walk, capped at MAX_EXPLORED rows (a row beyond it is an error, never a silent truncation)
//   m        complete matches: the walks joined on shared variables, the WHERE conditions that span variables,
//            relationship uniqueness across patterns; capped at MAX_PATHS rows (beyond: an error)
//   final    ordering (ORDER BY, then UNWIND order, shorter paths first, ids), DISTINCT, SKIP and LIMIT.
//
// Semantics chosen where Cypher and our data model meet:
// - A node pattern matches nodes only (elements without start/end); its label is the element `type`, a relation's
//   type is the element `type`. Relations whose start or end is itself a relation cannot be part of a path.
// - `n.id` is the element id, `n.created`/`n.updated` its timestamps; every other `n.key` is `data.key`. A JSON
//   null and a missing key are both null.
// - Values compare as JSON: numbers numerically, strings as strings, `=` between different types is false (not
//   null), an ordering comparison (< <= > >=) between different types, or on lists and maps, is null (so false in
//   WHERE, as in Cypher). `created`/`updated` compare as timestamps with a parameter or literal that parses as a
//   date; ids compare with strings as UUIDs.
// - Relationship isomorphism: a relation appears at most once in a match (across all its patterns); nodes repeat.
// - Without ORDER BY the order is still deterministic: UNWIND order, then shorter paths, then node and relation ids.
//
// Caps (a 400 `bad-content` with a detail saying which, never a silently truncated answer, except the first):
// - a path has at most MAX_HOPS (32) relations: unbounded `*`, `*..`, `*n..` stop there (longer paths are not
//   found); an explicit bound above it is refused by the parser;
// - at most MAX_EXPLORED (100,000) partial paths explored, all walks together: bounds time and memory per query;
// - at most MAX_PATHS (10,000) matches when the query returns them all (no LIMIT): each is hydrated. With a LIMIT
//   the order is still defined over all matches (a LIMIT cannot stop the search early, and truncating would make
//   it return an arbitrary subset), so they are all found and ordered, but only SKIP + LIMIT come back: up to
//   MAX_EXPLORED matches are allowed then;
// - at most MAX_UNWIND (10,000) UNWIND items; queries up to 16,384 characters (parser).
// Relations in a walk get no READ check of their own; see step() and docs/decisions/020-cypher-relations-unchecked.md.
import type { PathsOutput } from '../../domain/search/types.js';
import {
  cypherError,
  MAX_HOPS,
  parseCypher,
  type ComparisonOp,
  type CypherQuery,
  type Direction,
  type Expr,
  type Pattern,
  type StringOp,
} from '../../domain/search/cypher-parse.js';
import { badContent } from '../../errors.js';
import { timestamptzBound, unstorableAt, unstorableParameter } from '../../domain/values.js';
import type { Queryable } from '../db.js';
import { inlineCheck } from './access.js';
import { shownFileSql, shownTimeSql } from './element-json.js';
import { preparedName } from './statement-names.js';

/** Matches (complete paths) a query without LIMIT may return; more is a 400, never a truncation. */
export const MAX_PATHS = 10_000;
/** Partial paths a query may explore (all rows of its walks); more is a 400. Bounds work and memory per query. */
export const MAX_EXPLORED = 100_000;
/** Items an UNWIND list may hold. */
export const MAX_UNWIND = 10_000;

export interface CypherLimits {
  maxPaths: number;
  maxExplored: number;
}
const LIMITS: CypherLimits = { maxPaths: MAX_PATHS, maxExplored: MAX_EXPLORED };

/**
 * Runs a query of the subset for `userId` and returns its paths (ids in path order). A query outside the subset,
 * a missing `$parameter` or a query over the caps is a 400 `bad-content`. `limits` exists for tests.
 */
export async function runCypherPaths(
  q: Queryable,
  userId: string,
  query: string,
  parameters: Readonly<Record<string, unknown>>,
  limits: CypherLimits = LIMITS,
): Promise<PathsOutput> {
  const compiled = compileCypher(parseCypher(query), parameters, userId, limits);
  const { rows } = await q.query<{ explored: number; matched: number; nodes: string[] | null; rels: string[] | null }>(compiled.text, compiled.values, preparedName('cypher', compiled.text));
  const counts = rows[0];
  if (counts && counts.explored > limits.maxExplored)
    throw badContent(
      `The Cypher query explores more than ${limits.maxExplored} partial paths, the limit. Bind the start of the pattern (WHERE n.id = $id, UNWIND), add labels and relation types, or lower the upper bounds of variable-length relations.`,
    );
  if (counts && counts.matched > compiled.matchCap)
    throw badContent(
      compiled.limited
        ? `The Cypher query matches more than ${compiled.matchCap} paths before SKIP/LIMIT, the limit. Narrow it down (labels, relation types, WHERE conditions).`
        : `The Cypher query matches more than ${compiled.matchCap} paths, the limit without LIMIT. Add a LIMIT, or narrow it down (labels, relation types, WHERE conditions).`,
    );
  return { paths: rows.filter((r) => r.nodes !== null).map((r) => ({ nodeIds: r.nodes!, relationIds: r.rels ?? [] })) };
}

// ---------------------------------------------------------------------------------------------------------------
// Bind parameters

/** Collects bind values; identical values of one type share a parameter. `$1` is the caller's id. */
class Binder {
  readonly values: unknown[];
  private readonly seen = new Map<string, string>();
  constructor(userId: string) {
    this.values = [userId];
  }
  bind(value: unknown, type: string): string {
    if (unstorableParameter(value, type)) throw unstorable();
    const key = `${type}|${JSON.stringify(value)}`;
    let ref = this.seen.get(key);
    if (ref === undefined) {
      this.values.push(value);
      ref = `$${this.values.length}::${type}`;
      this.seen.set(key, ref);
    }
    return ref;
  }
  /** A JSON value as jsonb; null (and undefined) as SQL NULL. */
  json(value: unknown): string {
    if (unstorableAt(value) !== null) throw unstorable();
    return this.bind(value === undefined || value === null ? null : JSON.stringify(value), 'jsonb');
  }

  /**
   * The statement and its values with the parameters it does not use left out (and the others renumbered): a
   * value bound for a part of an expression that turned out constant (`a.n = null`) is not referenced, and
   * PostgreSQL refuses a parameter whose type it cannot see ("could not determine data type of parameter").
   */
  finish(text: string): { text: string; values: unknown[] } {
    const used = new Set([...text.matchAll(/\$(\d+)::/g)].map((m) => Number(m[1])));
    used.add(1);
    if (used.size === this.values.length) return { text, values: this.values };
    const renumbered = new Map<number, number>();
    const values: unknown[] = [];
    this.values.forEach((value, i) => {
      if (!used.has(i + 1)) return;
      values.push(value);
      renumbered.set(i + 1, values.length);
    });
    return { text: text.replace(/\$(\d+)::/g, (_, n: string) => `$${renumbered.get(Number(n))}::`), values };
  }
}

/**
 * A value PostgreSQL cannot store (U+0000, an unpaired surrogate) from a query or its parameters is the client's
 * mistake (400), not a failed statement.
 */
const unstorable = () => badContent('A string in the query holds U+0000 or an unpaired surrogate, which stored text never holds.');

/**
 * `fn(args…)` for jsonb_build_array/jsonb_build_object, whose arguments PostgreSQL limits to 100: more are built in
 * chunks and joined with `||` (array concatenation; for objects, a merge in order) as a balanced tree. `perItem`:
 * arguments per item (2 for an object's key and value), which a chunk never splits.
 */
function builtInChunks(fn: string, items: string[], perItem = 1): string {
  const per = Math.floor(100 / perItem);
  if (items.length <= per) return `${fn}(${items.join(', ')})`;
  const chunks: string[] = [];
  for (let i = 0; i < items.length; i += per) chunks.push(`${fn}(${items.slice(i, i + per).join(', ')})`);
  const tree = (from: number, to: number): string => (to - from === 1 ? chunks[from]! : `(${tree(from, (from + to) >> 1)} || ${tree((from + to) >> 1, to)})`);
  return tree(0, chunks.length);
}

const USER = '$1::uuid';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuidString = (v: unknown): v is string => typeof v === 'string' && UUID_RE.test(v);

// ---------------------------------------------------------------------------------------------------------------
// Constant expressions: literals and parameters, evaluated here (their values are known before the statement runs)

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function hasVariables(e: Expr): boolean {
  switch (e.kind) {
    case 'literal':
    case 'parameter':
      return false;
    case 'variable':
    case 'has-label':
      return true;
    case 'property':
      return hasVariables(e.object);
    case 'index':
      return hasVariables(e.object) || hasVariables(e.index);
    case 'list':
      return e.items.some(hasVariables);
    case 'map':
      return e.entries.some((entry) => hasVariables(entry.value));
    case 'not':
    case 'is-null':
      return hasVariables(e.operand);
    default:
      return hasVariables(e.left) || hasVariables(e.right);
  }
}

/** Value of a constant expression (literal, parameter, list, member access, indexing), with Cypher's null rules. */
function evalConstant(e: Expr, parameters: Readonly<Record<string, unknown>>): unknown {
  switch (e.kind) {
    case 'literal':
      return e.value;
    case 'parameter':
      if (!Object.prototype.hasOwnProperty.call(parameters, e.name)) throw cypherError(e.offset, `parameter $${e.name} is missing`);
      return parameters[e.name] ?? null;
    case 'list':
      return e.items.map((item) => evalConstant(item, parameters));
    case 'map':
      return Object.fromEntries(e.entries.map((entry) => [entry.key, evalConstant(entry.value, parameters)]));
    case 'property': {
      const object = evalConstant(e.object, parameters);
      if (object === null) return null;
      if (!isMap(object)) throw cypherError(e.offset, `cannot read property '${e.key}' of a ${typeName(object)}`);
      return Object.prototype.hasOwnProperty.call(object, e.key) ? (object[e.key] ?? null) : null;
    }
    case 'index': {
      const object = evalConstant(e.object, parameters);
      const index = evalConstant(e.index, parameters);
      if (object === null || index === null) return null;
      if (Array.isArray(object)) {
        if (typeof index !== 'number' || !Number.isInteger(index)) throw cypherError(e.index.offset, 'a list index must be an integer');
        return object[index < 0 ? object.length + index : index] ?? null;
      }
      if (isMap(object)) {
        if (typeof index !== 'string') throw cypherError(e.index.offset, 'a map key must be a string');
        return Object.prototype.hasOwnProperty.call(object, index) ? (object[index] ?? null) : null;
      }
      throw cypherError(e.offset, `cannot index a ${typeName(object)}`);
    }
    default:
      throw cypherError(e.offset, 'expected a constant expression');
  }
}

function typeName(v: unknown): string {
  return Array.isArray(v) ? 'list' : v === null ? 'null' : typeof v === 'object' ? 'map' : typeof v;
}

// ---------------------------------------------------------------------------------------------------------------
// Expressions to SQL

/** How a variable is reached in the SQL being generated: an elements row alias, or the UNWIND row's jsonb value. */
type Binding = { kind: 'element'; alias: string } | { kind: 'unwind'; sql: string };
type Env = ReadonlyMap<string, Binding>;

/**
 * A compiled value. `const`: known now (bound when used). `json`: jsonb (SQL NULL for null or missing). `id`: an
 * element id (uuid). `time`: timestamptz. `bool`: a SQL boolean (a predicate used as a value).
 */
type Val = { t: 'const'; v: unknown } | { t: 'json' | 'id' | 'time' | 'bool'; sql: string };

const JSON_NULL = `'null'::jsonb`;
const FLIP: Record<ComparisonOp, ComparisonOp> = { '=': '=', '<>': '<>', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

class ExprCompiler {
  constructor(
    private readonly b: Binder,
    private readonly parameters: Readonly<Record<string, unknown>>,
    private readonly env: Env,
  ) {}

  value(e: Expr): Val {
    if (!hasVariables(e)) return { t: 'const', v: evalConstant(e, this.parameters) };
    switch (e.kind) {
      case 'variable': {
        const binding = this.binding(e.name, e.offset);
        // A bare node or relation stands for its identity: `a = b` compares ids.
        return binding.kind === 'element' ? { t: 'id', sql: `${binding.alias}.id` } : { t: 'json', sql: `NULLIF(${binding.sql}, ${JSON_NULL})` };
      }
      case 'property': {
        if (e.object.kind === 'variable') {
          const binding = this.binding(e.object.name, e.object.offset);
          if (binding.kind === 'element') {
            const alias = binding.alias;
            if (e.key === 'id') return { t: 'id', sql: `${alias}.id` };
            if (e.key === 'created' || e.key === 'updated') return { t: 'time', sql: shownTimeSql(`${alias}.${e.key}`) };
            // hasFile and file are shown inside data (element-json.ts) but kept in the file column.
            if (e.key === 'hasFile' || e.key === 'file') return { t: 'json', sql: `(${shownFileSql(alias)} -> '${e.key}')` };
            return { t: 'json', sql: `NULLIF(${alias}.data -> ${this.b.bind(e.key, 'text')}, ${JSON_NULL})` };
          }
        }
        const object = this.json(this.value(e.object));
        return { t: 'json', sql: `NULLIF((${object}) -> ${this.b.bind(e.key, 'text')}, ${JSON_NULL})` };
      }
      case 'index': {
        if (hasVariables(e.index)) throw cypherError(e.index.offset, 'an index must be a literal or a parameter');
        const index = evalConstant(e.index, this.parameters);
        const object = this.json(this.value(e.object));
        if (index === null) return { t: 'const', v: null };
        if (typeof index === 'number' && Number.isInteger(index)) return { t: 'json', sql: `NULLIF((${object}) -> ${this.b.bind(index, 'int')}, ${JSON_NULL})` };
        if (typeof index === 'string') return { t: 'json', sql: `NULLIF((${object}) -> ${this.b.bind(index, 'text')}, ${JSON_NULL})` };
        throw cypherError(e.index.offset, 'an index must be an integer or a string');
      }
      case 'list':
        return { t: 'json', sql: builtInChunks('jsonb_build_array', e.items.map((item) => this.json(this.value(item)))) };
      case 'map': {
        const entries = e.entries.map((entry) => `${this.b.bind(entry.key, 'text')}, ${this.json(this.value(entry.value))}`);
        return { t: 'json', sql: builtInChunks('jsonb_build_object', entries, 2) };
      }
      default:
        return { t: 'bool', sql: this.predicate(e) };
    }
  }

  /** A SQL boolean with Cypher's three-valued logic (SQL NULL is Cypher null). */
  predicate(e: Expr): string {
    switch (e.kind) {
      case 'logical': {
        // A chain of one operator (`a XOR b XOR c …`, parsed left-deep) as a balanced tree: PostgreSQL flattens AND
        // and OR itself, but recurses along `<>`, and PGlite's unchecked stack broke at about 300 levels.
        const operands: Expr[] = [];
        const collect = (x: Expr): void => {
          if (x.kind === 'logical' && x.op === e.op) {
            collect(x.left);
            collect(x.right);
          } else operands.push(x);
        };
        collect(e);
        const parts = operands.map((x) => this.predicate(x));
        const tree = (from: number, to: number): string => {
          if (to - from === 1) return parts[from]!;
          const middle = (from + to) >> 1;
          const [l, r] = [tree(from, middle), tree(middle, to)];
          return e.op === 'XOR' ? `((${l}) <> (${r}))` : `(${l} ${e.op} ${r})`;
        };
        return tree(0, parts.length);
      }
      case 'not':
        return `(NOT ${this.predicate(e.operand)})`;
      case 'comparison':
        return this.compare(e.op, this.value(e.left), this.value(e.right));
      case 'in':
        return this.inList(this.value(e.left), this.value(e.right), e.right.offset);
      case 'string-match':
        return this.stringMatch(e.op, this.value(e.left), this.value(e.right));
      case 'is-null': {
        const v = this.value(e.operand);
        if (v.t === 'const') return (v.v === null) !== e.negated ? 'true' : 'false';
        return `((${v.sql}) IS ${e.negated ? 'NOT ' : ''}NULL)`;
      }
      case 'has-label': {
        const binding = this.binding(e.variable, e.offset);
        if (binding.kind !== 'element') throw cypherError(e.offset, `'${e.variable}' has no type`);
        return typeCondition(this.b, binding.alias, e.labels);
      }
      default:
        return this.bool(this.value(e), e.offset);
    }
  }

  private binding(name: string, offset: number): Binding {
    const binding = this.env.get(name);
    if (!binding) throw cypherError(offset, `variable '${name}' cannot be used here`);
    return binding;
  }

  private bool(v: Val, offset: number): string {
    switch (v.t) {
      case 'const':
        if (v.v === null) return 'NULL::boolean';
        if (typeof v.v === 'boolean') return String(v.v);
        throw cypherError(offset, `expected a boolean condition, found a ${typeName(v.v)}`);
      case 'bool':
        return v.sql;
      case 'json':
        return `(CASE WHEN jsonb_typeof(${v.sql}) = 'boolean' THEN ${v.sql} = 'true'::jsonb END)`;
      default:
        throw cypherError(offset, `expected a boolean condition, found ${v.t === 'id' ? 'an id' : 'a timestamp'}`);
    }
  }

  /** Any value as jsonb (timestamps in the service's own JSON form). */
  json(v: Val): string {
    switch (v.t) {
      case 'const':
        return this.b.json(v.v);
      case 'json':
        return v.sql;
      case 'id':
        return `to_jsonb(${v.sql}::text)`;
      case 'time':
        return `to_jsonb(to_char(${v.sql} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'))`;
      case 'bool':
        return `to_jsonb(${v.sql})`;
    }
  }

  private compare(op: ComparisonOp, a: Val, b: Val): string {
    if (a.t === 'const' && b.t !== 'const') return this.compare(FLIP[op], b, a);
    const ordering = op !== '=' && op !== '<>';
    if (b.t === 'const' && b.v === null) return 'NULL::boolean';
    if (a.t === 'id' && b.t === 'const') {
      if (ordering) return typeof b.v === 'string' ? `(${a.sql}::text ${op} ${this.b.bind(b.v.toLowerCase(), 'text')})` : 'NULL::boolean';
      // Ids compare as UUIDs (so the primary key can be used); a value that is no UUID equals no id.
      if (isUuidString(b.v)) return `(${a.sql} ${op} ${this.b.bind(b.v.toLowerCase(), 'uuid')})`;
      return op === '=' ? 'false' : 'true';
    }
    if (a.t === 'id' && b.t === 'id') return ordering ? `(${a.sql}::text ${op} ${b.sql}::text)` : `(${a.sql} ${op} ${b.sql})`;
    if (a.t === 'id' && b.t === 'json' && !ordering) {
      // As with constants: a UUID string in any case equals the id; anything else equals no id.
      const equal = `(CASE WHEN ${b.sql} IS NULL THEN NULL WHEN ${safeUuid(b.sql)} IS NULL THEN false ELSE ${a.sql} = ${safeUuid(b.sql)} END)`;
      return op === '=' ? equal : `(NOT ${equal})`;
    }
    if (a.t === 'time' && b.t === 'const') {
      const at = typeof b.v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(b.v) ? Date.parse(b.v) : NaN;
      if (!Number.isNaN(at)) return `(${a.sql} ${op} ${this.b.bind(timestamptzBound(at), 'timestamptz')})`;
      return ordering ? 'NULL::boolean' : op === '=' ? 'false' : 'true';
    }
    if (a.t === 'time' && b.t === 'time') return `(${a.sql} ${op} ${b.sql})`;
    const left = this.json(a);
    const right = this.json(b);
    if (!ordering) return `(${left} ${op} ${right})`;
    // Ordering between different types (or on lists and maps) is null, as in Cypher, not jsonb's type order.
    if (b.t === 'const') {
      const type = typeof b.v === 'number' ? 'number' : typeof b.v === 'string' ? 'string' : typeof b.v === 'boolean' ? 'boolean' : null;
      if (type === null) return 'NULL::boolean';
      return `(CASE WHEN jsonb_typeof(${left}) = '${type}' THEN ${left} ${op} ${right} END)`;
    }
    return `(CASE WHEN jsonb_typeof(${left}) = jsonb_typeof(${right}) AND jsonb_typeof(${left}) IN ('number', 'string', 'boolean') THEN ${left} ${op} ${right} END)`;
  }

  /** `x IN list`: SQL's `= ANY` has Cypher's null rules (null when not found and the list holds a null). */
  private inList(a: Val, list: Val, offset: number): string {
    if (list.t === 'const') {
      if (list.v === null) return 'NULL::boolean';
      if (!Array.isArray(list.v)) throw cypherError(offset, `IN needs a list, found a ${typeName(list.v)}`);
      const items = list.v as unknown[];
      if (a.t === 'id') {
        const ids = items.flatMap((item) => (item === null ? [null] : isUuidString(item) ? [item.toLowerCase()] : []));
        return `(${a.sql} = ANY(${this.b.bind(ids, 'uuid[]')}))`;
      }
      return `(${this.json(a)} = ANY(${this.b.bind(items.map((item) => (item === null ? null : JSON.stringify(item))), 'jsonb[]')}))`;
    }
    if (list.t !== 'json') throw cypherError(offset, 'IN needs a list');
    return `(${this.json(a)} = ANY(ARRAY(SELECT NULLIF(t.v, ${JSON_NULL}) FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${list.sql}) = 'array' THEN ${list.sql} END) AS t(v))))`;
  }

  private stringMatch(op: StringOp, a: Val, b: Val): string {
    const l = this.text(a);
    const r = this.text(b);
    if (op === 'STARTS WITH') return `starts_with(${l}, ${r})`;
    if (op === 'ENDS WITH') return `(right(${l}, char_length(${r})) = ${r})`;
    return `(strpos(${l}, ${r}) > 0)`;
  }

  /** A string value as text; anything else is null (string predicates on other types are null in Cypher). */
  private text(v: Val): string {
    switch (v.t) {
      case 'const':
        return typeof v.v === 'string' ? this.b.bind(v.v, 'text') : 'NULL::text';
      case 'json':
        return `(CASE WHEN jsonb_typeof(${v.sql}) = 'string' THEN ${v.sql} #>> '{}' END)`;
      case 'id':
        return `${v.sql}::text`;
      default:
        return 'NULL::text';
    }
  }
}

/** A jsonb value as a uuid when it is a UUID string, else NULL (never a failing cast). */
const safeUuid = (json: string): string =>
  `(CASE WHEN jsonb_typeof(${json}) = 'string' AND (${json} #>> '{}') ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN (${json} #>> '{}')::uuid END)`;

function typeCondition(b: Binder, alias: string, types: readonly string[]): string {
  return types.length === 1 ? `${alias}.type = ${b.bind(types[0], 'text')}` : `${alias}.type = ANY(${b.bind(types, 'text[]')})`;
}

const and = (parts: readonly string[]): string => {
  const real = parts.filter((p) => p !== 'true');
  return real.length === 0 ? 'true' : real.join(' AND ');
};

// ---------------------------------------------------------------------------------------------------------------
// Patterns to walks

/** A pattern node, in walk order. `name` is the variable, or a generated one for anonymous nodes. */
interface Slot {
  name: string;
  labels: string[];
}

/** A relation segment, in walk order: between slots[k] and slots[k + 1] for segment k + 1. */
interface Segment {
  /** Name that conditions on each of its relations are filed under (the variable of a single relation). */
  name: string;
  /** The user's variable, when it binds one relation. */
  variable: string | null;
  types: string[];
  direction: Direction;
  min: number;
  max: number;
}

interface Walk {
  index: number;
  pattern: Pattern;
  reversed: boolean;
  slots: Slot[];
  /** 1-based: segments[0] is unused so that segment numbers match the SQL. */
  segments: Segment[];
}

/** How a walk finds its first nodes. */
type Seed = { kind: 'ids'; ids: string[] } | { kind: 'unwind'; uuid: string } | { kind: 'relations'; types: string[]; direction: Direction } | null;

// Generated names start with a character no Cypher name can hold, so they never meet a user's variable.
const anonymous = (what: string, i: number, j: number) => `\u0000${what}${i}_${j}`;

interface Conjuncts {
  /** Conditions on one node variable (pushed into the walks, checked when the node is reached). */
  node: Map<string, Expr[]>;
  /** Conditions on one relation segment (checked on each of its relations as it is added). */
  relation: Map<string, Expr[]>;
  /** Conditions on the UNWIND variable alone (filter the UNWIND rows). */
  unwind: Expr[];
  /** Everything else: checked on complete matches. */
  rest: Expr[];
  /** `v.id = <constant or UNWIND expression>` / `v.id IN <constant list>`: where a walk can start. */
  seeds: Map<string, { kind: 'ids'; ids: string[] } | { kind: 'unwind'; expr: Expr }>;
}

function splitAnd(e: Expr | null, into: Expr[] = []): Expr[] {
  if (e === null) return into;
  if (e.kind === 'logical' && e.op === 'AND') {
    splitAnd(e.left, into);
    splitAnd(e.right, into);
  } else {
    into.push(e);
  }
  return into;
}

function variablesOf(e: Expr, into = new Set<string>()): Set<string> {
  switch (e.kind) {
    case 'variable':
      into.add(e.name);
      break;
    case 'has-label':
      into.add(e.variable);
      break;
    case 'property':
      variablesOf(e.object, into);
      break;
    case 'index':
      variablesOf(e.object, into);
      variablesOf(e.index, into);
      break;
    case 'list':
      e.items.forEach((item) => variablesOf(item, into));
      break;
    case 'map':
      e.entries.forEach((entry) => variablesOf(entry.value, into));
      break;
    case 'not':
    case 'is-null':
      variablesOf(e.operand, into);
      break;
    case 'literal':
    case 'parameter':
      break;
    default:
      variablesOf(e.left, into);
      variablesOf(e.right, into);
  }
  return into;
}

const propertyCondition = (name: string, key: string, value: Expr, offset: number): Expr => ({
  kind: 'comparison',
  offset,
  op: '=',
  left: { kind: 'property', offset, object: { kind: 'variable', offset, name }, key },
  right: value,
});

// ---------------------------------------------------------------------------------------------------------------
// The statement

interface Compiled {
  text: string;
  values: unknown[];
  /** How many matches the statement may find (more: a 400), and whether a LIMIT bounds what it returns. */
  matchCap: number;
  limited: boolean;
}

/** Compiles a validated query to one statement (parameters resolved, constant positions checked). */
export function compileCypher(query: CypherQuery, parameters: Readonly<Record<string, unknown>>, userId: string, limits: CypherLimits = LIMITS): Compiled {
  return new Compilation(query, parameters, userId, limits).compile();
}

class Compilation {
  private readonly b: Binder;
  private readonly unwindVariable: string | null;
  /** Variable kind by name, generated names included. */
  private readonly kinds = new Map<string, 'node' | 'relation' | 'segment'>();
  private readonly names: { slots: string[]; segments: string[] }[] = [];
  private readonly conjuncts: Conjuncts;

  constructor(
    private readonly q: CypherQuery,
    private readonly parameters: Readonly<Record<string, unknown>>,
    userId: string,
    private readonly limits: CypherLimits,
  ) {
    this.b = new Binder(userId);
    this.unwindVariable = q.unwind?.variable ?? null;
    const conditions = splitAnd(q.where);
    // Name every node and segment; property maps become conditions like WHERE's (`(n {k: v})` is `n.k = v`).
    q.patterns.forEach((pattern, i) => {
      const slots = pattern.nodes.map((node, j) => {
        const name = node.variable ?? anonymous('n', i, j);
        this.kinds.set(name, 'node');
        for (const p of node.properties) conditions.push(propertyCondition(name, p.key, p.value, p.offset));
        return name;
      });
      const segments = pattern.relations.map((rel, j) => {
        const single = rel.length === null && rel.variable !== null;
        const name = single ? rel.variable! : anonymous('r', i, j);
        this.kinds.set(name, single ? 'relation' : 'segment');
        for (const p of rel.properties) conditions.push(propertyCondition(name, p.key, p.value, p.offset));
        return name;
      });
      this.names.push({ slots, segments });
    });
    this.conjuncts = this.classify(conditions);
  }

  private classify(conditions: Expr[]): Conjuncts {
    const c: Conjuncts = { node: new Map(), relation: new Map(), unwind: [], rest: [], seeds: new Map() };
    const file = (map: Map<string, Expr[]>, name: string, e: Expr) => map.set(name, [...(map.get(name) ?? []), e]);
    for (const e of conditions) {
      const vars = [...variablesOf(e)];
      if (vars.length === 1 && this.kinds.get(vars[0]!) === 'node') file(c.node, vars[0]!, e);
      else if (vars.length === 1 && (this.kinds.get(vars[0]!) === 'relation' || this.kinds.get(vars[0]!) === 'segment')) file(c.relation, vars[0]!, e);
      else if (vars.length === 1 && vars[0] === this.unwindVariable) c.unwind.push(e);
      else c.rest.push(e);
      this.noteSeed(e, c.seeds);
    }
    return c;
  }

  /** Records `v.id = X` (X constant or from the UNWIND variable) and `v.id IN <constant list>` as starting points. */
  private noteSeed(e: Expr, seeds: Conjuncts['seeds']): void {
    const idOf = (x: Expr): string | null =>
      x.kind === 'property' && x.key === 'id' && x.object.kind === 'variable' && this.kinds.get(x.object.name) === 'node' ? x.object.name : null;
    const onlyUnwind = (x: Expr) => [...variablesOf(x)].every((v) => v === this.unwindVariable);
    const constantIds = (value: unknown[]): string[] => value.filter(isUuidString).map((id) => id.toLowerCase());
    let variable: string | null = null;
    let other: Expr | null = null;
    if (e.kind === 'comparison' && e.op === '=') {
      if (idOf(e.left) !== null && onlyUnwind(e.right)) [variable, other] = [idOf(e.left), e.right];
      else if (idOf(e.right) !== null && onlyUnwind(e.left)) [variable, other] = [idOf(e.right), e.left];
      if (variable === null || other === null || seeds.has(variable)) return;
      if (hasVariables(other)) seeds.set(variable, { kind: 'unwind', expr: other });
      else seeds.set(variable, { kind: 'ids', ids: constantIds([evalConstant(other, this.parameters)]) });
    } else if (e.kind === 'in' && idOf(e.left) !== null && !hasVariables(e.right)) {
      variable = idOf(e.left)!;
      if (seeds.has(variable)) return;
      const list = evalConstant(e.right, this.parameters);
      if (Array.isArray(list) || list === null) seeds.set(variable, { kind: 'ids', ids: constantIds(list ?? []) });
    }
  }

  compile(): Compiled {
    const q = this.q;
    const skip = this.count(q.skip, 'SKIP') ?? 0;
    const limit = this.count(q.limit, 'LIMIT');
    const ctes: string[] = [];
    if (q.unwind) {
      const value = evalConstant(q.unwind.expr, this.parameters);
      // Cypher: UNWIND null yields no rows, UNWIND of a single value one row.
      const list = Array.isArray(value) ? value : value === null ? [] : [value];
      if (list.length > MAX_UNWIND) throw badContent(`The Cypher UNWIND list has ${list.length} items; at most ${MAX_UNWIND} are allowed.`);
      const env: Env = new Map([[q.unwind.variable, { kind: 'unwind', sql: 'u0.value' }]]);
      const filter = and(this.conjuncts.unwind.map((e) => this.expr(env).predicate(e)));
      ctes.push(`u AS (SELECT u0.value, u0.ord FROM jsonb_array_elements(${this.b.json(list)}) WITH ORDINALITY AS u0(value, ord) WHERE ${filter})`);
    }
    const walks = q.patterns.map((pattern, i) => this.plan(pattern, i));
    const seeded: number[] = [];
    for (const walk of walks) {
      const seed = this.seedOf(walk);
      if (seed?.kind === 'unwind') seeded.push(walk.index);
      ctes.push(`w${walk.index} (seg, hops, node, nodes, rels, pos, uo) AS (\n${this.anchor(walk, seed)}\nUNION ALL\n${this.step(walk)}\n)`);
      ctes.push(`w${walk.index}c AS (SELECT * FROM w${walk.index} LIMIT ${this.limits.maxExplored + 1})`);
    }
    const matchCap = limit === null ? this.limits.maxPaths : Math.max(this.limits.maxPaths, this.limits.maxExplored);
    ctes.push(`m AS (\n${this.matches(walks, seeded, matchCap)}\n)`);
    const keys = this.orderKeys();
    const source = q.distinct ? `(SELECT DISTINCT ON (nodes, rels) * FROM m ORDER BY nodes, rels, ${keys})` : 'm';
    ctes.push(`ranked AS (SELECT nodes, rels, row_number() OVER (ORDER BY ${keys}) AS rn FROM ${source} m)`);
    const window = [`r.rn > ${this.b.bind(skip, 'bigint')}`];
    if (limit !== null) window.push(`r.rn <= ${this.b.bind(skip + limit, 'bigint')}`);
    const explored = walks.map((w) => `(SELECT count(*) FROM w${w.index}c)`).join(' + ');
    const text = `WITH RECURSIVE\n${ctes.join(',\n')}
SELECT c.explored, c.matched, r.nodes::text[] AS nodes, r.rels::text[] AS rels
FROM (SELECT ${explored} AS explored, (SELECT count(*) FROM m) AS matched) c
LEFT JOIN ranked r ON ${window.join(' AND ')}
ORDER BY r.rn`;
    return { ...this.b.finish(text), matchCap, limited: limit !== null };
  }

  private expr(env: Env): ExprCompiler {
    return new ExprCompiler(this.b, this.parameters, env);
  }

  private count(e: Expr | null, what: string): number | null {
    if (e === null) return null;
    const value = evalConstant(e, this.parameters);
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw cypherError(e.offset, `${what} must be a non-negative integer`);
    return value;
  }

  /** Lays a pattern out in walk order, starting from its better-bound end. */
  private plan(pattern: Pattern, index: number): Walk {
    const { slots: slotNames, segments: segmentNames } = this.names[index]!;
    let slots: Slot[] = pattern.nodes.map((node, j) => ({ name: slotNames[j]!, labels: node.labels }));
    let segments: Segment[] = pattern.relations.map((rel, j) => ({
      name: segmentNames[j]!,
      variable: rel.length === null ? rel.variable : null,
      types: rel.types,
      direction: rel.direction,
      min: rel.length?.min ?? 1,
      max: rel.length ? (rel.length.max ?? MAX_HOPS) : 1,
    }));
    const reversed = slots.length > 1 && this.score(slots.at(-1)!) > this.score(slots[0]!);
    if (reversed) {
      slots = [...slots].reverse();
      segments = [...segments].reverse().map((s) => ({ ...s, direction: s.direction === 'out' ? 'in' : s.direction === 'in' ? 'out' : 'both' }));
    }
    return { index, pattern, reversed, slots, segments: [null as unknown as Segment, ...segments] };
  }

  /** How well a node can start a walk: bound ids, then conditions, then a label. */
  private score(slot: Slot): number {
    if (this.conjuncts.seeds.has(slot.name)) return 3;
    if (this.conjuncts.node.has(slot.name)) return 2;
    return slot.labels.length > 0 ? 1 : 0;
  }

  private seedOf(walk: Walk): Seed {
    const seed = this.conjuncts.seeds.get(walk.slots[0]!.name);
    if (seed?.kind === 'ids') return seed;
    if (seed?.kind === 'unwind') {
      const env: Env = new Map([[this.unwindVariable!, { kind: 'unwind', sql: 'u.value' }]]);
      // A value that is not a UUID string starts nothing.
      return { kind: 'unwind', uuid: safeUuid(this.expr(env).json(this.expr(env).value(seed.expr))) };
    }
    // Nothing on the first node at all: start from the nodes that have a relation of the first segment's types,
    // rather than from every node.
    const first = walk.segments[1];
    if (this.score(walk.slots[0]!) === 0 && first && first.types.length > 0 && first.min > 0) return { kind: 'relations', types: first.types, direction: first.direction };
    return null;
  }

  /** Conditions a node must meet where it stands in the pattern (label, property map, WHERE on it alone). */
  private nodeCondition(slot: Slot, alias: string): string {
    const parts = slot.labels.length > 0 ? [typeCondition(this.b, alias, slot.labels)] : [];
    const env: Env = new Map([[slot.name, { kind: 'element', alias }]]);
    for (const e of this.conjuncts.node.get(slot.name) ?? []) parts.push(this.expr(env).predicate(e));
    return and(parts);
  }

  private relationCondition(segment: Segment, alias: string): string {
    const parts = segment.types.length > 0 ? [typeCondition(this.b, alias, segment.types)] : [];
    const env: Env = new Map([[segment.name, { kind: 'element', alias }]]);
    for (const e of this.conjuncts.relation.get(segment.name) ?? []) parts.push(this.expr(env).predicate(e));
    return and(parts);
  }

  private readable(alias: string): string {
    return `(${inlineCheck(USER, 'READ', alias)})`;
  }

  /**
   * The states a walk can be in right after its node `alias` closed segment `from - 1` (the anchor: `from` = 1):
   * ready to walk segment `from`, and, through segments of minimum length 0, ready for later ones (the same node
   * then also stands for the following pattern nodes). The last state (segments + 1) is a complete match.
   */
  private openStates(walk: Walk, from: number, pos: string, index: string, alias: string, conditions: string[]): string[] {
    const last = walk.segments.length;
    const states: string[] = [];
    for (let s = from; ; s++) {
      const where = and(conditions);
      if (s === last || walk.segments[s]!.max >= 1) states.push(`SELECT ${s} AS seg, 0 AS hops, ${pos} AS pos${where === 'true' ? '' : ` WHERE ${where}`}`);
      if (s === last || walk.segments[s]!.min > 0) return states;
      conditions = [...conditions, this.nodeCondition(walk.slots[s]!, alias)];
      pos = `${pos} || ${index}`;
    }
  }

  private anchor(walk: Walk, seed: Seed): string {
    const a = 'a0';
    const where = [`${a}.start_id IS NULL`, this.nodeCondition(walk.slots[0]!, a)];
    let from = `elements ${a}`;
    let uo = 'NULL::bigint';
    if (seed?.kind === 'ids') where.unshift(`${a}.id = ANY(${this.b.bind(seed.ids, 'uuid[]')})`);
    else if (seed?.kind === 'unwind') {
      from = `u JOIN elements ${a} ON ${a}.id = ${seed.uuid}`;
      uo = 'u.ord';
    } else if (seed?.kind === 'relations') {
      const types = this.b.bind(seed.types, 'text[]');
      const ends = seed.direction === 'out' ? ['start_id'] : seed.direction === 'in' ? ['end_id'] : ['start_id', 'end_id'];
      const starts = ends.map((end) => `SELECT s0.${end} AS id FROM elements s0 WHERE s0.type = ANY(${types})`).join(' UNION ');
      from = `(${starts}) s JOIN elements ${a} ON ${a}.id = s.id`;
    }
    where.push(this.readable(a));
    const states = this.openStates(walk, 1, 'ARRAY[1]', '1', a, []);
    return `SELECT x.seg, x.hops, ${a}.id, ARRAY[${a}.id], '{}'::uuid[], x.pos, ${uo}
FROM ${from}
CROSS JOIN LATERAL (${states.join(' UNION ALL ')}) x
WHERE ${and(where)}`;
  }

  /** One relation more, for every segment the row may be walking (each branch is gated by `w.seg`). */
  private step(walk: Walk): string {
    const branches: string[] = [];
    for (let s = 1; s < walk.segments.length; s++) {
      const segment = walk.segments[s]!;
      if (segment.max < 1) continue;
      const ways: [string, string][] = segment.direction === 'out' ? [['start_id', 'end_id']] : segment.direction === 'in' ? [['end_id', 'start_id']] : [['start_id', 'end_id'], ['end_id', 'start_id']];
      ways.forEach(([here, there], d) => {
        const r = `r${s}_${d}`;
        const n = `n${s}_${d}`;
        const hops = 'w.hops + 1';
        const index = '(cardinality(w.nodes) + 1)';
        const states: string[] = [];
        if (segment.max > 1) states.push(`SELECT ${s} AS seg, ${hops} AS hops, w.pos AS pos WHERE ${hops} < ${segment.max}`);
        const close = [...(segment.min > 1 ? [`${hops} >= ${segment.min}`] : []), this.nodeCondition(walk.slots[s]!, n)];
        states.push(...this.openStates(walk, s + 1, `w.pos || ${index}`, index, n, close));
        const where = [
          `w.seg = ${s}`,
          `${r}.${here} = w.node`,
          // An undirected self-loop is one relation, found once.
          ...(d === 1 ? [`${r}.start_id <> ${r}.end_id`] : []),
          this.relationCondition(segment, r),
          `${r}.id <> ALL(w.rels)`,
          `cardinality(w.rels) < ${MAX_HOPS}`,
          `${n}.start_id IS NULL`,
          this.readable(n),
          // No check of the relation itself: its ends are w.node (checked when it was added) and n (checked just
          // above), and the relation rule makes any relation readable with READ on both ends (trellis_allows,
          // migration 004; asserted by test/elements/access-matrix.test.ts). Its own check, a PL/pgSQL call per
          // relation, would be most of the statement (docs/decisions/020-cypher-relations-unchecked.md).
        ];
        branches.push(`SELECT x.seg, x.hops, ${n}.id AS node, ${r}.id AS rel, x.pos
  FROM elements ${r} JOIN elements ${n} ON ${n}.id = ${r}.${there}
  CROSS JOIN LATERAL (${states.join(' UNION ALL ')}) x
  WHERE ${and(where)}`);
      });
    }
    if (branches.length === 0) branches.push('SELECT 0 AS seg, 0 AS hops, NULL::uuid AS node, NULL::uuid AS rel, NULL::int[] AS pos WHERE false');
    return `SELECT st.seg, st.hops, st.node, w.nodes || st.node, w.rels || st.rel, st.pos, w.uo
FROM w${walk.index} w
CROSS JOIN LATERAL (
  ${branches.join('\n  UNION ALL\n  ')}
) st`;
  }

  /** Complete matches: walks joined on shared variables, remaining conditions, relationship uniqueness. */
  private matches(walks: Walk[], seeded: number[], cap: number): string {
    const from: string[] = [];
    const where: string[] = [];
    walks.forEach((w) => {
      from.push(`w${w.index}c p${w.index}`);
      where.push(`p${w.index}.seg = ${w.segments.length}`);
    });
    if (this.q.unwind) {
      if (seeded.length > 0) {
        from.push('u');
        for (const i of seeded) where.push(`p${i}.uo = u.ord`);
      } else {
        from.push('u');
      }
    }
    // Where each variable sits: p<i>.nodes[p<i>.pos[k]] (pos[k] is the position of the walk's k-th pattern node).
    const nodeAt = new Map<string, string>();
    const relationAt = new Map<string, string>();
    for (const w of walks) {
      const p = `p${w.index}`;
      w.slots.forEach((slot, k) => {
        const sql = `${p}.nodes[${p}.pos[${k + 1}]]`;
        const seen = nodeAt.get(slot.name);
        if (seen === undefined) nodeAt.set(slot.name, sql);
        else where.push(`${seen} = ${sql}`);
      });
      for (let s = 1; s < w.segments.length; s++) {
        const variable = w.segments[s]!.variable;
        if (variable !== null) relationAt.set(variable, `${p}.rels[${p}.pos[${s}]]`);
      }
    }
    for (let i = 0; i < walks.length; i++) for (let j = i + 1; j < walks.length; j++) where.push(`NOT (p${i}.rels && p${j}.rels)`);
    // Elements rows only for the variables that remaining conditions or ORDER BY read.
    const used = new Set<string>();
    for (const e of [...this.conjuncts.rest, ...this.q.orderBy.map((o) => o.expr)]) variablesOf(e, used);
    const env = new Map<string, Binding>();
    for (const name of used) {
      const at = nodeAt.get(name) ?? relationAt.get(name);
      if (at !== undefined) {
        const alias = `v${env.size}`;
        from.push(`JOIN elements ${alias} ON ${alias}.id = ${at}`);
        env.set(name, { kind: 'element', alias });
      } else if (name === this.unwindVariable) {
        env.set(name, { kind: 'unwind', sql: 'u.value' });
      }
    }
    this.matchEnv = env;
    for (const e of this.conjuncts.rest) where.push(this.expr(env).predicate(e));
    const returned = walks.find((w) => w.pattern.pathVariable === this.q.returns)!;
    const p = `p${returned.index}`;
    const inOrder = (array: string) => (returned.reversed ? `ARRAY(SELECT t.x FROM unnest(${array}) WITH ORDINALITY AS t(x, o) ORDER BY t.o DESC)` : array);
    const keys = this.q.orderBy.map((o, k) => `, ${this.orderValue(o.expr)} AS k${k}`).join('');
    const joined = from.map((f, k) => (k === 0 || f.startsWith('JOIN ') ? f : `CROSS JOIN ${f}`)).join('\n  ');
    return `SELECT ${inOrder(`${p}.nodes`)} AS nodes, ${inOrder(`${p}.rels`)} AS rels, ${this.q.unwind ? 'u.ord' : 'NULL::bigint'} AS uo${keys}
FROM ${joined}
WHERE ${and(where)}
LIMIT ${cap + 1}`;
  }

  private matchEnv: Env = new Map();

  private orderValue(e: Expr): string {
    const v = this.expr(this.matchEnv).value(e);
    return v.t === 'const' ? this.b.json(v.v) : v.sql;
  }

  /** ORDER BY keys (Cypher: nulls last ascending, first descending), then a deterministic default order. */
  private orderKeys(): string {
    const keys = this.q.orderBy.map((o, k) => `k${k} ${o.descending ? 'DESC NULLS FIRST' : 'ASC NULLS LAST'}`);
    return [...keys, 'uo', 'cardinality(rels)', 'nodes', 'rels'].join(', ');
  }
}
