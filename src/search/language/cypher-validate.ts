// The semantic rules of the Cypher subset, checked on the parsed query so that the compiler can trust the AST:
// variables bound and of the right kind, the returned item a named path, constant positions constant.
import { type CypherQuery, cypherError, type Expr, MAX_HOPS, type VariableKind } from './cypher-ast.js';

export function validate(q: Omit<CypherQuery, 'variables'>): CypherQuery {
  const variables = new Map<string, VariableKind>();
  const declare = (name: string, kind: VariableKind, offset: number) => {
    const known = variables.get(name);
    if (known === undefined) {
      variables.set(name, kind);
      return;
    }
    // A node variable may appear several times (the same node); anything else is bound once.
    if (known === 'node' && kind === 'node') return;
    if (known === kind)
      throw cypherError(offset, `variable '${name}' is bound twice (a ${kind} variable can be bound once)`);
    throw cypherError(offset, `variable '${name}' is already bound as a ${known}, it cannot also be a ${kind}`);
  };
  // Property maps may use the UNWIND variable (`(p {id: element.id})`), not pattern variables.
  const unwindOnly = new Set<string>();
  if (q.unwind) {
    requireConstant(q.unwind.expr, 'the UNWIND list');
    declare(q.unwind.variable, 'unwind', q.unwind.offset);
    unwindOnly.add(q.unwind.variable);
  }
  for (const pattern of q.patterns) {
    for (const node of pattern.nodes) {
      if (node.variable !== null) declare(node.variable, 'node', node.offset);
      for (const p of node.properties) requireConstant(p.value, `the value of property '${p.key}'`, unwindOnly);
    }
    let minimum = 0;
    for (const rel of pattern.relations) {
      if (rel.variable !== null) declare(rel.variable, rel.length ? 'relations' : 'relation', rel.offset);
      for (const p of rel.properties) requireConstant(p.value, `the value of property '${p.key}'`, unwindOnly);
      if (rel.length) {
        const { min, max } = rel.length;
        if (max !== null && max < min)
          throw cypherError(
            rel.offset,
            `the relation length *${min}..${max} has its upper bound below its lower bound`,
          );
        if ((max ?? min) > MAX_HOPS)
          throw cypherError(
            rel.offset,
            `a relation length above ${MAX_HOPS} is not supported (paths have at most ${MAX_HOPS} relations)`,
          );
      }
      minimum += rel.length?.min ?? 1;
    }
    if (minimum > MAX_HOPS)
      throw cypherError(
        pattern.offset,
        `the pattern needs more than ${MAX_HOPS} relations (paths have at most ${MAX_HOPS})`,
      );
    if (pattern.pathVariable !== null) declare(pattern.pathVariable, 'path', pattern.offset);
  }
  const returned = variables.get(q.returns);
  const returnOffset = q.returnsOffset;
  if (returned === undefined)
    throw cypherError(
      returnOffset,
      `RETURN names '${q.returns}', which MATCH does not bind (RETURN a path variable: MATCH path = (…) … RETURN path)`,
    );
  if (returned !== 'path')
    throw cypherError(
      returnOffset,
      `RETURN must name a path variable (MATCH path = (…) … RETURN path); '${q.returns}' is a ${returned}`,
    );
  if (q.where) checkExpression(q.where, variables);
  for (const item of q.orderBy) checkExpression(item.expr, variables);
  if (q.skip) requireConstant(q.skip, 'SKIP');
  if (q.limit) requireConstant(q.limit, 'LIMIT');
  return { ...q, variables };
}

/**
 * Constant positions (UNWIND list, property maps, SKIP, LIMIT): literals, lists and parameters with member access
 * and indexing; property maps may also use the variables in `allowed` (the UNWIND variable).
 */
function requireConstant(expr: Expr, what: string, allowed: ReadonlySet<string> = new Set()): void {
  switch (expr.kind) {
    case 'literal':
    case 'parameter':
      return;
    case 'variable':
      if (allowed.has(expr.name)) return;
      throw cypherError(
        expr.offset,
        `${what} must be a literal or a parameter${allowed.size > 0 ? ' (or use the UNWIND variable)' : ''}, not the variable '${expr.name}'`,
      );
    case 'list':
      for (const item of expr.items) requireConstant(item, what, allowed);
      return;
    case 'map':
      for (const entry of expr.entries) requireConstant(entry.value, what, allowed);
      return;
    case 'property':
      requireConstant(expr.object, what, allowed);
      return;
    case 'index':
      requireConstant(expr.object, what, allowed);
      requireConstant(expr.index, what, allowed);
      return;
    default:
      throw cypherError(expr.offset, `${what} must be a literal or a parameter`);
  }
}

/** WHERE and ORDER BY: every variable bound, and used the way its kind allows. */
function checkExpression(expr: Expr, variables: ReadonlyMap<string, VariableKind>): void {
  const kindOf = (name: string, offset: number): VariableKind => {
    const kind = variables.get(name);
    if (kind === undefined) throw cypherError(offset, `variable '${name}' is not defined`);
    return kind;
  };
  const visit = (e: Expr): void => {
    switch (e.kind) {
      case 'literal':
      case 'parameter':
        return;
      case 'variable': {
        const kind = kindOf(e.name, e.offset);
        if (kind === 'path') throw cypherError(e.offset, `path variable '${e.name}' can only be returned`);
        if (kind === 'relations')
          throw cypherError(
            e.offset,
            `'${e.name}' is a variable-length relation (a list of relations) and cannot be used here`,
          );
        return;
      }
      case 'property':
      case 'index':
        visit(e.object);
        if (e.kind === 'index') {
          visit(e.index);
          if (e.object.kind === 'variable' && variables.get(e.object.name) !== 'unwind')
            throw cypherError(e.offset, `'${e.object.name}' cannot be indexed`);
        }
        return;
      case 'list':
        for (const item of e.items) visit(item);
        return;
      case 'map':
        for (const entry of e.entries) visit(entry.value);
        return;
      case 'not':
      case 'is-null':
        visit(e.operand);
        return;
      case 'logical':
      case 'comparison':
      case 'in':
      case 'string-match':
        visit(e.left);
        visit(e.right);
        return;
      case 'has-label': {
        const kind = kindOf(e.variable, e.offset);
        if (kind !== 'node' && kind !== 'relation')
          throw cypherError(e.offset, `'${e.variable}' is a ${kind}; only nodes and relations have a type`);
        return;
      }
    }
  };
  visit(expr);
}
