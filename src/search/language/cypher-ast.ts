// The Cypher subset of the `cypher-path-subset` search step, as the parser (cypher-parse.ts) hands it to the SQL
// compiler (search/sql/cypher-statement.ts): a typed AST, already validated (variables bound and of the right
// kind, the returned item a named path, constant positions constant), so the compiler can trust it.
import { badContent } from '../../errors.js';

/**
 * The longest path, in relations, the service walks. Unbounded lengths (`*`, `*..`, `*2..`) stop there; an explicit
 * bound above it is refused, since it could not be honoured.
 */
export const MAX_HOPS = 32;

export type Direction = 'out' | 'in' | 'both';

export interface PropertyEntry {
  offset: number;
  key: string;
  /** A constant expression (literals and parameters only). */
  value: Expr;
}

export interface NodePattern {
  offset: number;
  variable: string | null;
  /** Alternatives (`:A|B`): the element's `type` must be one of them. Empty: any node. */
  labels: string[];
  properties: PropertyEntry[];
}

export interface RelPattern {
  offset: number;
  variable: string | null;
  /** Alternatives (`:A|B`): the element's `type` must be one of them. Empty: any relation. */
  types: string[];
  /** Relative to the pattern's reading order: `out` is `-[]->`, `in` is `<-[]-`, `both` is `-[]-`. */
  direction: Direction;
  /** Null: exactly one relation (no `*`). Otherwise the bounds; `max` null means unbounded (capped at MAX_HOPS). */
  length: { min: number; max: number | null } | null;
  properties: PropertyEntry[];
}

export interface Pattern {
  offset: number;
  pathVariable: string | null;
  /** nodes.length === relations.length + 1; relations[i] joins nodes[i] and nodes[i + 1]. */
  nodes: NodePattern[];
  relations: RelPattern[];
}

export type ComparisonOp = '=' | '<>' | '<' | '<=' | '>' | '>=';
export type StringOp = 'STARTS WITH' | 'ENDS WITH' | 'CONTAINS';

export type Expr =
  | { kind: 'literal'; offset: number; value: null | boolean | number | string }
  | { kind: 'parameter'; offset: number; name: string }
  | { kind: 'variable'; offset: number; name: string }
  | { kind: 'property'; offset: number; object: Expr; key: string }
  | { kind: 'index'; offset: number; object: Expr; index: Expr }
  | { kind: 'list'; offset: number; items: Expr[] }
  | { kind: 'map'; offset: number; entries: { key: string; value: Expr }[] }
  | { kind: 'not'; offset: number; operand: Expr }
  | { kind: 'logical'; offset: number; op: 'AND' | 'OR' | 'XOR'; left: Expr; right: Expr }
  | { kind: 'comparison'; offset: number; op: ComparisonOp; left: Expr; right: Expr }
  | { kind: 'in'; offset: number; left: Expr; right: Expr }
  | { kind: 'string-match'; offset: number; op: StringOp; left: Expr; right: Expr }
  | { kind: 'is-null'; offset: number; operand: Expr; negated: boolean }
  | { kind: 'has-label'; offset: number; variable: string; labels: string[] };

export interface SortItem {
  expr: Expr;
  descending: boolean;
}

/** What a variable stands for. `relations`: the list bound by a variable-length relation (`-[r*]->`). */
export type VariableKind = 'node' | 'relation' | 'relations' | 'path' | 'unwind';

export interface CypherQuery {
  unwind: { offset: number; expr: Expr; variable: string } | null;
  patterns: Pattern[];
  where: Expr | null;
  distinct: boolean;
  /** The returned path variable. */
  returns: string;
  returnsOffset: number;
  orderBy: SortItem[];
  /** Constant expressions (integer literals or parameters). */
  skip: Expr | null;
  limit: Expr | null;
  variables: ReadonlyMap<string, VariableKind>;
}

/** The one error shape of this module: a 400 `bad-content` naming the problem and where it is. */
export function cypherError(offset: number, message: string) {
  return badContent(`Invalid Cypher query at offset ${offset}: ${message}`);
}
