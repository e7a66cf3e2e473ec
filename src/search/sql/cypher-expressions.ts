// Cypher expressions as SQL over elements rows and the UNWIND value. Values compare as JSON: numbers numerically,
// strings as strings, `=` between different types is false (not null), an ordering comparison between different
// types, or on lists and maps, is null (so false in WHERE, as in Cypher). `n.id` is the element id (compared with
// strings as UUIDs), `n.created`/`n.updated` its timestamps (compared with values that parse as dates), every other
// `n.key` is `data.key`; a JSON null and a missing key are both null. Constant parts are evaluated here.

import { isPlainObject, parseElementId, timestamptzBound } from '../../values.js';
import type { ComparisonOp, Expr, StringOp } from '../language/cypher-ast.js';
import { cypherError } from '../language/cypher-ast.js';
import type { Binder } from './binder.js';
import { shownFileSql, shownTimeSql } from './shown.js';

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
  const tree = (from: number, to: number): string =>
    to - from === 1 ? chunks[from]! : `(${tree(from, (from + to) >> 1)} || ${tree((from + to) >> 1, to)})`;
  return tree(0, chunks.length);
}

/** The caller's id: always the first parameter. */
export const USER = '$1::uuid';

// ---------------------------------------------------------------------------------------------------------------
// Constant expressions: literals and parameters, evaluated here (their values are known before the statement runs)

export function hasVariables(e: Expr): boolean {
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
export function evalConstant(e: Expr, parameters: Readonly<Record<string, unknown>>): unknown {
  switch (e.kind) {
    case 'literal':
      return e.value;
    case 'parameter':
      if (!Object.hasOwn(parameters, e.name)) throw cypherError(e.offset, `parameter $${e.name} is missing`);
      return parameters[e.name] ?? null;
    case 'list':
      return e.items.map((item) => evalConstant(item, parameters));
    case 'map':
      return Object.fromEntries(e.entries.map((entry) => [entry.key, evalConstant(entry.value, parameters)]));
    case 'property': {
      const object = evalConstant(e.object, parameters);
      if (object === null) return null;
      if (!isPlainObject(object))
        throw cypherError(e.offset, `cannot read property '${e.key}' of a ${typeName(object)}`);
      return Object.hasOwn(object, e.key) ? (object[e.key] ?? null) : null;
    }
    case 'index': {
      const object = evalConstant(e.object, parameters);
      const index = evalConstant(e.index, parameters);
      if (object === null || index === null) return null;
      if (Array.isArray(object)) {
        if (typeof index !== 'number' || !Number.isInteger(index))
          throw cypherError(e.index.offset, 'a list index must be an integer');
        return object[index < 0 ? object.length + index : index] ?? null;
      }
      if (isPlainObject(object)) {
        if (typeof index !== 'string') throw cypherError(e.index.offset, 'a map key must be a string');
        return Object.hasOwn(object, index) ? (object[index] ?? null) : null;
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
export type Binding = { kind: 'element'; alias: string } | { kind: 'unwind'; sql: string };
export type Env = ReadonlyMap<string, Binding>;

/**
 * A compiled value. `const`: known now (bound when used). `json`: jsonb (SQL NULL for null or missing). `id`: an
 * element id (uuid). `time`: timestamptz. `bool`: a SQL boolean (a predicate used as a value).
 */
export type Val = { t: 'const'; v: unknown } | { t: 'json' | 'id' | 'time' | 'bool'; sql: string };

const JSON_NULL = `'null'::jsonb`;
const FLIP: Record<ComparisonOp, ComparisonOp> = { '=': '=', '<>': '<>', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

export class ExprCompiler {
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
        return binding.kind === 'element'
          ? { t: 'id', sql: `${binding.alias}.id` }
          : { t: 'json', sql: `NULLIF(${binding.sql}, ${JSON_NULL})` };
      }
      case 'property': {
        if (e.object.kind === 'variable') {
          const binding = this.binding(e.object.name, e.object.offset);
          if (binding.kind === 'element') {
            const alias = binding.alias;
            if (e.key === 'id') return { t: 'id', sql: `${alias}.id` };
            if (e.key === 'created' || e.key === 'updated')
              return { t: 'time', sql: shownTimeSql(`${alias}.${e.key}`) };
            // hasFile and file are shown inside data (element-json.ts) but kept in the file column.
            if (e.key === 'hasFile' || e.key === 'file')
              return { t: 'json', sql: `(${shownFileSql(alias)} -> '${e.key}')` };
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
        if (typeof index === 'number' && Number.isInteger(index))
          return { t: 'json', sql: `NULLIF((${object}) -> ${this.b.bind(index, 'int')}, ${JSON_NULL})` };
        if (typeof index === 'string')
          return { t: 'json', sql: `NULLIF((${object}) -> ${this.b.bind(index, 'text')}, ${JSON_NULL})` };
        throw cypherError(e.index.offset, 'an index must be an integer or a string');
      }
      case 'list':
        return {
          t: 'json',
          sql: builtInChunks(
            'jsonb_build_array',
            e.items.map((item) => this.json(this.value(item))),
          ),
        };
      case 'map': {
        const entries = e.entries.map(
          (entry) => `${this.b.bind(entry.key, 'text')}, ${this.json(this.value(entry.value))}`,
        );
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
      if (ordering)
        return typeof b.v === 'string'
          ? `(${a.sql}::text ${op} ${this.b.bind(b.v.toLowerCase(), 'text')})`
          : 'NULL::boolean';
      // Ids compare as UUIDs (so the primary key can be used); a value that is no UUID equals no id.
      const id = parseElementId(b.v);
      if (id !== null) return `(${a.sql} ${op} ${this.b.bind(id, 'uuid')})`;
      return op === '=' ? 'false' : 'true';
    }
    if (a.t === 'id' && b.t === 'id')
      return ordering ? `(${a.sql}::text ${op} ${b.sql}::text)` : `(${a.sql} ${op} ${b.sql})`;
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
      const type =
        typeof b.v === 'number'
          ? 'number'
          : typeof b.v === 'string'
            ? 'string'
            : typeof b.v === 'boolean'
              ? 'boolean'
              : null;
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
        // A null item keeps SQL's null rule; an item that is no UUID equals no id.
        const ids = items.flatMap((item) => {
          if (item === null) return [null];
          const id = parseElementId(item);
          return id === null ? [] : [id];
        });
        return `(${a.sql} = ANY(${this.b.bind(ids, 'uuid[]')}))`;
      }
      return `(${this.json(a)} = ANY(${this.b.bind(
        items.map((item) => (item === null ? null : JSON.stringify(item))),
        'jsonb[]',
      )}))`;
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
export const safeUuid = (json: string): string =>
  `(CASE WHEN jsonb_typeof(${json}) = 'string' AND (${json} #>> '{}') ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN (${json} #>> '{}')::uuid END)`;

export function typeCondition(b: Binder, alias: string, types: readonly string[]): string {
  return types.length === 1
    ? `${alias}.type = ${b.bind(types[0], 'text')}`
    : `${alias}.type = ANY(${b.bind(types, 'text[]')})`;
}

export const and = (parts: readonly string[]): string => {
  const real = parts.filter((p) => p !== 'true');
  return real.length === 0 ? 'true' : real.join(' AND ');
};
