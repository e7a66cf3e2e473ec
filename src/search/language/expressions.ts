// The `{{ … }}` expressions of the search pipeline (POST /search). They follow the expr language
// (https://expr-lang.org): a string that is wholly one `{{ … }}` is replaced by the value of the expression, which
// sees the step parameters and `stepResults`.
//
// The source comes from untrusted request bodies, so this module has its own tokenizer, a precedence-climbing parser
// and a tree-walking interpreter (never `eval` or `new Function`), and bounds everything a hostile expression could
// use to hurt the server: source length (config `expression.maxLength`), nesting (parser recursion and tree depth),
// and work (an evaluation step budget per `resolveExpressions` call that also meters long strings, ranges, sorting,
// deep equality and the copying of results). Member access only reads own properties of plain objects and items of
// arrays, so nothing reaches a prototype. Every failure is a 400 `bad-content` naming the offset in the string.
import { badContent } from '../../errors.js';
import { isPlainObject } from '../../values.js';
import { type Budget, Interpreter, MAX_STEPS, MAX_VALUE_DEPTH, setOwn } from './expression-interpreter.js';
import { Parser } from './expression-syntax.js';
import { ExpressionError, endOfQuoted } from './expression-tokens.js';

export interface ExpressionOptions {
  enabled: boolean;
  maxLength: number;
}

/** True when `s` is wholly one `{{ … }}` (whitespace inside the braces is allowed, outside it is not). */
export function isExpression(s: string): boolean {
  if (s.length < 4 || !s.startsWith('{{') || !s.endsWith('}}')) return false;
  // "{{a}} and {{b}}" starts and ends like one expression but is two: the inner text must not close the outer
  // braces. Braces inside string literals don't count; an unterminated literal is left for the parser to report.
  const inner = s.slice(2, -2);
  let depth = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (c === '"' || c === "'" || c === '`') {
      i = endOfQuoted(inner, i);
      if (i < 0) return true;
    } else if (c === '{') depth++;
    else if (c === '}' && --depth < 0) return false;
  }
  return true;
}

/**
 * Deep copy of a JSON value in which every string that is wholly one `{{ … }}` is replaced by the expression's value
 * (any JSON type). Other strings are kept as they are: in particular a string with text around a `{{ }}` is NOT
 * interpolated, because an expression's value is typically a list or an object, which has no sensible place inside
 * a string, and keeping such strings verbatim means data that merely contains braces is never evaluated by accident.
 * Object keys are never evaluated. All expressions of one call share one step budget.
 */
export function resolveExpressions(
  value: unknown,
  scope: Readonly<Record<string, unknown>>,
  options: ExpressionOptions,
): unknown {
  const budget: Budget = { remaining: MAX_STEPS };
  const path: (string | number)[] = [];
  const copy = (v: unknown): unknown => {
    if (path.length > MAX_VALUE_DEPTH)
      throw badContent(`The value is nested more than ${MAX_VALUE_DEPTH} levels deep.`);
    if (typeof v === 'string') return isExpression(v) ? evaluate(v.slice(2, -2), scope, options, budget, 2, path) : v;
    if (Array.isArray(v))
      return v.map((item, i) => {
        path.push(i);
        const out = copy(item);
        path.pop();
        return out;
      });
    if (isPlainObject(v)) {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(v)) {
        path.push(key);
        setOwn(out, key, copy(item));
        path.pop();
      }
      return out;
    }
    return v === undefined ? null : v;
  };
  return copy(value);
}

/** Evaluates the source between the braces and returns a plain JSON value (nil is `null`). */
export function evaluateExpression(
  source: string,
  scope: Readonly<Record<string, unknown>>,
  options: ExpressionOptions,
): unknown {
  return evaluate(source, scope, options, { remaining: MAX_STEPS }, 0, []);
}

function evaluate(
  source: string,
  scope: Readonly<Record<string, unknown>>,
  options: ExpressionOptions,
  budget: Budget,
  base: number,
  path: readonly (string | number)[],
): unknown {
  const where = path.length > 0 ? ` in ${describePath(path)}` : '';
  if (!options.enabled)
    throw badContent(`Expressions are disabled on this server (expression.enabled is false); found one${where}.`);
  if (source.length > options.maxLength)
    throw badContent(
      `The expression${where} is ${source.length} characters long; at most ${options.maxLength} are allowed (expression.maxLength).`,
    );
  try {
    const tree = new Parser(source).parseAll();
    const interpreter = new Interpreter(scope, budget);
    return interpreter.toJson(interpreter.evaluate(tree, null), 0, 0);
  } catch (error) {
    if (error instanceof ExpressionError)
      throw badContent(`Invalid expression${where} at offset ${base + error.offset}: ${error.message}.`);
    // Our limits should keep the stack and string/array sizes in check; this is the last line of defence.
    if (error instanceof RangeError)
      throw badContent(`The expression${where} exceeds an internal limit (${error.message}).`);
    throw error;
  }
}

function describePath(path: readonly (string | number)[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out === '' ? 'the value' : out;
}
