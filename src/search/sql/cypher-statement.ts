// A query of the Cypher subset compiled to ONE parameterised SQL statement over `elements`, returning paths as ids in
// path order: per pattern a recursive walk (w<i>) that extends one relation per step and checks READ on every node
// as it is added, the walk capped (w<i>c), the complete matches joined on shared variables (m), then ORDER BY,
// DISTINCT, SKIP and LIMIT. Without ORDER BY the order is still deterministic: UNWIND order, shorter paths, ids. A
// relation appears at most once in a match; nodes repeat. Beyond a cap the answer is a 400, never a truncation
// (docs/search.md); relations get no READ check of their own (docs/decisions/020-cypher-relations-unchecked.md).
import { badContent } from '../../errors.js';
import { storedElementId } from '../../values.js';
import { type CypherQuery, cypherError, type Expr, MAX_HOPS } from '../language/cypher-ast.js';
import { CYPHER_LIMITS, type CypherLimits, MAX_UNWIND } from '../language/limits.js';
import type { PathsOutput } from '../results.js';
import { Binder } from './binder.js';
import {
  and,
  type Binding,
  type Env,
  ExprCompiler,
  evalConstant,
  safeUuid,
  typeCondition,
  USER,
} from './cypher-expressions.js';
import { CypherPlan, type Segment, type Slot, type Start, variablesOf, type Walk } from './cypher-plan.js';

/** SQL: whether the caller (`user`, a uuid expression) may READ the element row `alias` (the access module's check). */
export type ReadCheck = (user: string, alias: string) => string;

/** A row of the compiled statement: the work counts, then one path per row (none when nothing matched). */
export interface PathRow {
  explored: number;
  matched: number;
  nodes: string[] | null;
  rels: string[] | null;
}

/**
 * The paths of the compiled statement's rows (ids in path order), or a 400 `bad-content` when the query explored or
 * matched more than its caps allow.
 */
export function pathsOf(rows: readonly PathRow[], compiled: CompiledCypher, limits: CypherLimits): PathsOutput {
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
  return {
    paths: rows
      .filter((r) => r.nodes !== null)
      .map((r) => ({ nodeIds: r.nodes!.map(storedElementId), relationIds: (r.rels ?? []).map(storedElementId) })),
  };
}

/**
 * A value PostgreSQL cannot store (U+0000, an unpaired surrogate) from a query or its parameters is the client's
 * mistake (400), not a failed statement.
 */
const unstorable = () =>
  badContent('A string in the query holds U+0000 or an unpaired surrogate, which stored text never holds.');

/** Start, with the UNWIND value's id as SQL. */
type Seed = Exclude<Start, { kind: 'unwind' }> | { kind: 'unwind'; uuid: string };

export interface CompiledCypher {
  text: string;
  values: unknown[];
  /** How many matches the statement may find (more: a 400), and whether a LIMIT bounds what it returns. */
  matchCap: number;
  limited: boolean;
}

/**
 * Compiles a validated query to one statement for `userId` (parameters resolved, constant positions checked), READ
 * decided on every node by `readable`. Its rows are PathRows; pathsOf reads them.
 */
export function compileCypher(
  query: CypherQuery,
  parameters: Readonly<Record<string, unknown>>,
  userId: string,
  readable: ReadCheck,
  limits: CypherLimits = CYPHER_LIMITS,
): CompiledCypher {
  return new Compilation(query, parameters, userId, readable, limits).compile();
}

class Compilation {
  private readonly b: Binder;
  private readonly plan: CypherPlan;

  constructor(
    private readonly q: CypherQuery,
    private readonly parameters: Readonly<Record<string, unknown>>,
    userId: string,
    private readonly readCheck: ReadCheck,
    private readonly limits: CypherLimits,
  ) {
    this.b = new Binder([userId], { unstorable, share: true });
    this.plan = new CypherPlan(q, parameters);
  }

  compile(): CompiledCypher {
    const q = this.q;
    const skip = this.count(q.skip, 'SKIP') ?? 0;
    const limit = this.count(q.limit, 'LIMIT');
    const ctes: string[] = [];
    if (q.unwind) {
      const value = evalConstant(q.unwind.expr, this.parameters);
      // Cypher: UNWIND null yields no rows, UNWIND of a single value one row.
      const list = Array.isArray(value) ? value : value === null ? [] : [value];
      if (list.length > MAX_UNWIND)
        throw badContent(`The Cypher UNWIND list has ${list.length} items; at most ${MAX_UNWIND} are allowed.`);
      const env: Env = new Map([[q.unwind.variable, { kind: 'unwind', sql: 'u0.value' }]]);
      const filter = and(this.plan.conjuncts.unwind.map((e) => this.expr(env).predicate(e)));
      ctes.push(
        `u AS (SELECT u0.value, u0.ord FROM jsonb_array_elements(${this.b.json(list)}) WITH ORDINALITY AS u0(value, ord) WHERE ${filter})`,
      );
    }
    const walks = q.patterns.map((pattern, i) => this.plan.walk(pattern, i));
    const seeded: number[] = [];
    for (const walk of walks) {
      const seed = this.seedOf(walk);
      if (seed?.kind === 'unwind') seeded.push(walk.index);
      ctes.push(
        `w${walk.index} (seg, hops, node, nodes, rels, pos, uo) AS (\n${this.anchor(walk, seed)}\nUNION ALL\n${this.step(walk)}\n)`,
      );
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
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
      throw cypherError(e.offset, `${what} must be a non-negative integer`);
    return value;
  }

  /** How a walk finds its first nodes, as SQL where it depends on the UNWIND value. */
  private seedOf(walk: Walk): Seed {
    const start = this.plan.start(walk);
    if (start?.kind !== 'unwind') return start;
    const env: Env = new Map([[this.plan.unwindVariable!, { kind: 'unwind', sql: 'u.value' }]]);
    // A value that is not a UUID string starts nothing.
    return { kind: 'unwind', uuid: safeUuid(this.expr(env).json(this.expr(env).value(start.expr))) };
  }

  /** Conditions a node must meet where it stands in the pattern (label, property map, WHERE on it alone). */
  private nodeCondition(slot: Slot, alias: string): string {
    const parts = slot.labels.length > 0 ? [typeCondition(this.b, alias, slot.labels)] : [];
    const env: Env = new Map([[slot.name, { kind: 'element', alias }]]);
    for (const e of this.plan.conjuncts.node.get(slot.name) ?? []) parts.push(this.expr(env).predicate(e));
    return and(parts);
  }

  private relationCondition(segment: Segment, alias: string): string {
    const parts = segment.types.length > 0 ? [typeCondition(this.b, alias, segment.types)] : [];
    const env: Env = new Map([[segment.name, { kind: 'element', alias }]]);
    for (const e of this.plan.conjuncts.relation.get(segment.name) ?? []) parts.push(this.expr(env).predicate(e));
    return and(parts);
  }

  private readable(alias: string): string {
    return `(${this.readCheck(USER, alias)})`;
  }

  /**
   * The states a walk can be in right after its node `alias` closed segment `from - 1` (the anchor: `from` = 1):
   * ready to walk segment `from`, and, through segments of minimum length 0, ready for later ones (the same node
   * then also stands for the following pattern nodes). The last state (segments + 1) is a complete match.
   */
  private openStates(
    walk: Walk,
    from: number,
    pos: string,
    index: string,
    alias: string,
    conditions: string[],
  ): string[] {
    const last = walk.segments.length;
    const states: string[] = [];
    for (let s = from; ; s++) {
      const where = and(conditions);
      if (s === last || walk.segments[s]!.max >= 1)
        states.push(`SELECT ${s} AS seg, 0 AS hops, ${pos} AS pos${where === 'true' ? '' : ` WHERE ${where}`}`);
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
      const ends =
        seed.direction === 'out' ? ['start_id'] : seed.direction === 'in' ? ['end_id'] : ['start_id', 'end_id'];
      const starts = ends
        .map((end) => `SELECT s0.${end} AS id FROM elements s0 WHERE s0.type = ANY(${types})`)
        .join(' UNION ');
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
      const ways: [string, string][] =
        segment.direction === 'out'
          ? [['start_id', 'end_id']]
          : segment.direction === 'in'
            ? [['end_id', 'start_id']]
            : [
                ['start_id', 'end_id'],
                ['end_id', 'start_id'],
              ];
      ways.forEach(([here, there], d) => {
        const r = `r${s}_${d}`;
        const n = `n${s}_${d}`;
        const hops = 'w.hops + 1';
        const index = '(cardinality(w.nodes) + 1)';
        const states: string[] = [];
        if (segment.max > 1)
          states.push(`SELECT ${s} AS seg, ${hops} AS hops, w.pos AS pos WHERE ${hops} < ${segment.max}`);
        const close = [
          ...(segment.min > 1 ? [`${hops} >= ${segment.min}`] : []),
          this.nodeCondition(walk.slots[s]!, n),
        ];
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
          // above), and the relation rule makes any relation readable with READ on both ends (trellis_allows;
          // asserted by test/elements/access-matrix.test.ts). Its own check, a PL/pgSQL call per
          // relation, would be most of the statement (docs/decisions/020-cypher-relations-unchecked.md).
        ];
        branches.push(`SELECT x.seg, x.hops, ${n}.id AS node, ${r}.id AS rel, x.pos
  FROM elements ${r} JOIN elements ${n} ON ${n}.id = ${r}.${there}
  CROSS JOIN LATERAL (${states.join(' UNION ALL ')}) x
  WHERE ${and(where)}`);
      });
    }
    if (branches.length === 0)
      branches.push(
        'SELECT 0 AS seg, 0 AS hops, NULL::uuid AS node, NULL::uuid AS rel, NULL::int[] AS pos WHERE false',
      );
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
    for (let i = 0; i < walks.length; i++)
      for (let j = i + 1; j < walks.length; j++) where.push(`NOT (p${i}.rels && p${j}.rels)`);
    // Elements rows only for the variables that remaining conditions or ORDER BY read.
    const used = new Set<string>();
    for (const e of [...this.plan.conjuncts.rest, ...this.q.orderBy.map((o) => o.expr)]) variablesOf(e, used);
    const env = new Map<string, Binding>();
    for (const name of used) {
      const at = nodeAt.get(name) ?? relationAt.get(name);
      if (at !== undefined) {
        const alias = `v${env.size}`;
        from.push(`JOIN elements ${alias} ON ${alias}.id = ${at}`);
        env.set(name, { kind: 'element', alias });
      } else if (name === this.plan.unwindVariable) {
        env.set(name, { kind: 'unwind', sql: 'u.value' });
      }
    }
    this.matchEnv = env;
    for (const e of this.plan.conjuncts.rest) where.push(this.expr(env).predicate(e));
    const returned = walks.find((w) => w.pattern.pathVariable === this.q.returns)!;
    const p = `p${returned.index}`;
    const inOrder = (array: string) =>
      returned.reversed
        ? `ARRAY(SELECT t.x FROM unnest(${array}) WITH ORDINALITY AS t(x, o) ORDER BY t.o DESC)`
        : array;
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
