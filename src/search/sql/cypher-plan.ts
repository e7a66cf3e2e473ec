// The plan of a Cypher query: every node and relation segment named, WHERE split into the conditions each walk
// checks where it stands, and each pattern laid out to start from its better-bound end (ids from WHERE or UNWIND,
// then conditions, then a label).

import { type ElementId, parseElementId } from '../../values.js';
import { type CypherQuery, type Direction, type Expr, MAX_HOPS, type Pattern } from '../language/cypher-ast.js';
import { evalConstant, hasVariables } from './cypher-expressions.js';

/** A pattern node, in walk order. `name` is the variable, or a generated one for anonymous nodes. */
export interface Slot {
  name: string;
  labels: string[];
}

/** A relation segment, in walk order: between slots[k] and slots[k + 1] for segment k + 1. */
export interface Segment {
  /** Name that conditions on each of its relations are filed under (the variable of a single relation). */
  name: string;
  /** The user's variable, when it binds one relation. */
  variable: string | null;
  types: string[];
  direction: Direction;
  min: number;
  max: number;
}

export interface Walk {
  index: number;
  pattern: Pattern;
  reversed: boolean;
  slots: Slot[];
  /** 1-based: segments[0] is unused so that segment numbers match the SQL. */
  segments: Segment[];
}

/** How a walk finds its first nodes: bound ids, the UNWIND value (an expression of it), nodes with a relation of the first segment's types, or every node. */
export type Start =
  | { kind: 'ids'; ids: string[] }
  | { kind: 'unwind'; expr: Expr }
  | { kind: 'relations'; types: string[]; direction: Direction }
  | null;

// Generated names start with a character no Cypher name can hold, so they never meet a user's variable.
const anonymous = (what: string, i: number, j: number) => `\u0000${what}${i}_${j}`;

export interface Conjuncts {
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

export function variablesOf(e: Expr, into = new Set<string>()): Set<string> {
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
      for (const item of e.items) variablesOf(item, into);
      break;
    case 'map':
      for (const entry of e.entries) variablesOf(entry.value, into);
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

export class CypherPlan {
  readonly unwindVariable: string | null;
  /** Variable kind by name, generated names included. */
  private readonly kinds = new Map<string, 'node' | 'relation' | 'segment'>();
  private readonly names: { slots: string[]; segments: string[] }[] = [];
  readonly conjuncts: Conjuncts;

  constructor(
    q: CypherQuery,
    private readonly parameters: Readonly<Record<string, unknown>>,
  ) {
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
      else if (vars.length === 1 && (this.kinds.get(vars[0]!) === 'relation' || this.kinds.get(vars[0]!) === 'segment'))
        file(c.relation, vars[0]!, e);
      else if (vars.length === 1 && vars[0] === this.unwindVariable) c.unwind.push(e);
      else c.rest.push(e);
      this.noteSeed(e, c.seeds);
    }
    return c;
  }

  /** Records `v.id = X` (X constant or from the UNWIND variable) and `v.id IN <constant list>` as starting points. */
  private noteSeed(e: Expr, seeds: Conjuncts['seeds']): void {
    const idOf = (x: Expr): string | null =>
      x.kind === 'property' &&
      x.key === 'id' &&
      x.object.kind === 'variable' &&
      this.kinds.get(x.object.name) === 'node'
        ? x.object.name
        : null;
    const onlyUnwind = (x: Expr) => [...variablesOf(x)].every((v) => v === this.unwindVariable);
    const constantIds = (value: unknown[]): ElementId[] =>
      value.map(parseElementId).filter((id): id is ElementId => id !== null);
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

  /** Lays a pattern out in walk order, starting from its better-bound end. */
  walk(pattern: Pattern, index: number): Walk {
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
      segments = [...segments]
        .reverse()
        .map((s) => ({ ...s, direction: s.direction === 'out' ? 'in' : s.direction === 'in' ? 'out' : 'both' }));
    }
    return { index, pattern, reversed, slots, segments: [null as unknown as Segment, ...segments] };
  }

  /** How well a node can start a walk: bound ids, then conditions, then a label. */
  private score(slot: Slot): number {
    if (this.conjuncts.seeds.has(slot.name)) return 3;
    if (this.conjuncts.node.has(slot.name)) return 2;
    return slot.labels.length > 0 ? 1 : 0;
  }
  /** Where a walk starts. */
  start(walk: Walk): Start {
    const seed = this.conjuncts.seeds.get(walk.slots[0]!.name);
    if (seed !== undefined) return seed;
    // Nothing on the first node at all: start from the nodes that have a relation of the first segment's types,
    // rather than from every node.
    const first = walk.segments[1];
    if (this.score(walk.slots[0]!) === 0 && first && first.types.length > 0 && first.min > 0)
      return { kind: 'relations', types: first.types, direction: first.direction };
    return null;
  }
}
