// `node --import tsx scripts/check-sizes.ts [dir or file...]` (run by `npm run lint` and by the static checks of `npm test`):
// lists every TypeScript file in src/ and explorer/src/ (or the directories given) over 500 lines, and every
// function, method, accessor or arrow function in them whose body spans over 80 lines; exits 1 when there is any.
// Big files and long functions are where a newcomer loses the thread: the limits make a split happen at review.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { isMain } from './process-tools.js';

export const FILE_LIMIT = 500;
export const FUNCTION_LIMIT = 80;
const DEFAULT_DIRS = ['src', 'explorer/src'];

export interface Offender {
  file: string;
  /** 1-based line of the function's start; absent for a whole file. */
  line?: number;
  name?: string;
  lines: number;
}

function typeScriptFiles(dir: string): string[] {
  if (statSync(dir).isFile()) return [dir];
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...typeScriptFiles(path));
    else if (/\.(c|m)?tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) found.push(path);
  }
  return found.sort();
}

/** Lines as `wc -l` counts them (a last line without its newline counts too). */
const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

const nameOf = (name: ts.PropertyName | ts.BindingName | undefined, sf: ts.SourceFile) =>
  name ? name.getText(sf) : '(anonymous)';

/** A readable name for a function: `f`, `Class.method`, `Class.field`, or the variable or property it is given to. */
function functionName(node: ts.FunctionLikeDeclaration, sf: ts.SourceFile): string {
  const owner = (n: ts.Node) =>
    ts.isClassLike(n.parent) && n.parent.name ? `${n.parent.name.text}.` : ts.isClassLike(n.parent) ? '(class).' : '';
  if (ts.isConstructorDeclaration(node)) return `${owner(node)}constructor`;
  if (ts.isFunctionDeclaration(node)) return nameOf(node.name, sf);
  if (ts.isMethodDeclaration(node) || ts.isGetAccessor(node) || ts.isSetAccessor(node))
    return `${owner(node)}${nameOf(node.name, sf)}`;
  if (ts.isFunctionExpression(node) && node.name) return node.name.text;
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent)) return nameOf(parent.name, sf);
  if (ts.isPropertyAssignment(parent)) return nameOf(parent.name, sf);
  if (ts.isPropertyDeclaration(parent)) return `${owner(parent)}${nameOf(parent.name, sf)}`;
  return ts.isArrowFunction(node) ? '(arrow function)' : '(function)';
}

/** The functions of one file whose body spans more than FUNCTION_LIMIT lines. */
export function longFunctions(file: string, text: string): Offender[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Offender[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const fn = node as ts.FunctionLikeDeclaration;
      const body = fn.body!;
      const first = sf.getLineAndCharacterOfPosition(body.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(body.getEnd()).line;
      const lines = last - first + 1;
      if (lines > FUNCTION_LIMIT) {
        const line = sf.getLineAndCharacterOfPosition(fn.getStart(sf)).line + 1;
        found.push({ file, line, name: functionName(fn, sf), lines });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Every file over FILE_LIMIT lines and every function over FUNCTION_LIMIT lines under `dirs` (relative to `root`). */
export function checkSizes(root: string, dirs: string[]): Offender[] {
  const offenders: Offender[] = [];
  for (const dir of dirs) {
    for (const path of typeScriptFiles(join(root, dir))) {
      const file = relative(root, path);
      const text = readFileSync(path, 'utf8');
      const lines = lineCount(text);
      if (lines > FILE_LIMIT) offenders.push({ file, lines });
      offenders.push(...longFunctions(file, text));
    }
  }
  return offenders;
}

if (isMain(import.meta.url)) {
  const dirs = process.argv.length > 2 ? process.argv.slice(2) : DEFAULT_DIRS;
  const offenders = checkSizes(process.cwd(), dirs);
  for (const o of offenders) {
    if (o.line === undefined) console.log(`${o.file}: ${o.lines} lines (at most ${FILE_LIMIT})`);
    else console.log(`${o.file}:${o.line}: ${o.name} spans ${o.lines} lines (at most ${FUNCTION_LIMIT})`);
  }
  const files = offenders.filter((o) => o.line === undefined).length;
  const functions = offenders.length - files;
  if (offenders.length > 0) {
    console.log(
      `sizes: ${files} file(s) over ${FILE_LIMIT} lines, ${functions} function(s) over ${FUNCTION_LIMIT} lines in ${dirs.join(', ')}`,
    );
    process.exit(1);
  }
  console.log(
    `sizes: no file over ${FILE_LIMIT} lines, no function over ${FUNCTION_LIMIT} lines in ${dirs.join(', ')}`,
  );
}
