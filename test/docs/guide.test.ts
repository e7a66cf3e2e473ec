// docs/guide.md, run: every command of the guide runs in order against live servers, and what the guide shows as
// their output is checked, so that the guide cannot drift from the service.
//
// How the guide is marked up (the guide's own conventions, stated here once):
// - A ```bash block is run. All blocks run in order in one bash session (so `$TOKEN`, `$NOTE`, … carry over), in a
//   scratch directory, with `set -o pipefail` and an ERR trap: a command that fails fails the test.
// - A ```text block that follows a ```bash block (only blank lines between) is that block's expected output:
//   - Lines before the first line that starts with `{` or `[` must each appear in the output, in this order (the
//     output may hold other lines between them, such as the headers the guide leaves out), except that the header
//     lines shown after a status line (`HTTP/1.1 200 OK`) may come in any order within that response. A line `…`
//     is ignored.
//   - From the first line that starts with `{` or `[` to the end, the block is one JSON document. It must equal the
//     JSON the command printed last (curl prints it on one line; the guide indents it): the same keys in the same
//     order, the same values, arrays in the same order, except the `nodes` and `relations` of a
//     `_PartialCollection`, which the service orders by id and which are compared in any order.
//   - In both, `<… id>` or `<id>` stands for any UUID, `<token>` for any `secret-token:…`, any other `<…>` for any
//     text (in JSON: any value, when it is the whole string), and `$NAME` (capitals) for the value of that shell
//     variable at that point.
// - A ```bash block right after `<!-- guide:skip -->` is not run (installing, creating a PostgreSQL role).
// - A `## ` section marked `<!-- guide:postgres -->` and every section after it need PostgreSQL: they run on a
//   scratch database of the test server (skipped when the run has no PostgreSQL, TRELLIS_TEST_BACKENDS=pglite).
// - Each `## ` section is one test; the sections after a failed one build on it and are skipped.
// What the test puts in place of the machine the guide assumes:
// - `npm start` (with whatever environment its line sets) starts `trellis serve` from the sources in the scratch
//   directory, in the background, and waits until it answers; a server already running on that port is stopped
//   first (the guide says to stop it). `npx trellis …` runs the CLI from the sources (not a possibly stale dist/).
// - The ports 8080 and 8081 become free ports, and the guide's `postgres://trellis:secret@localhost:5432/trellis`
//   the scratch database's URL, in commands and in expected outputs alike.
// - node_modules of the scratch directory is the repository's (for the tus-js-client script).
// To write or update the guide: `TRELLIS_GUIDE_OUTPUT=/tmp/guide.out npm test -- test/docs/guide.test.ts` appends
// every block and what it printed to that file.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../bench/lib/cluster.js';
import { scratchPostgresDatabase } from '../helpers/harness.js';
import { type Finished, spawnCli } from '../helpers/process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GUIDE = join(ROOT, 'docs', 'guide.md');
const GUIDE_PG_URL = 'postgres://trellis:secret@localhost:5432/trellis';
const BLOCK_TIMEOUT_MS = 300_000;
const SERVER_START_TIMEOUT_MS = 180_000;

interface Block {
  code: string;
  expected: string | null;
  /** Line of the ```bash fence in the guide, for messages. */
  line: number;
}

interface Section {
  title: string;
  blocks: Block[];
  needsPostgres: boolean;
}

/** The guide's sections with their runnable blocks, by the conventions above. */
function readGuide(text: string): Section[] {
  const lines = text.split('\n');
  const sections: Section[] = [{ title: '(top)', blocks: [], needsPostgres: false }];
  let postgres = false;
  let skipNext = false;
  let last: Block | null = null; // the bash block an immediately following text block belongs to
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('## ')) {
      sections.push({ title: line.slice(3).trim(), blocks: [], needsPostgres: postgres });
      last = null;
    } else if (line.trim() === '<!-- guide:postgres -->') {
      postgres = true;
      sections.at(-1)!.needsPostgres = true;
    } else if (line.trim() === '<!-- guide:skip -->') {
      skipNext = true;
    } else if (/^```\S*\s*$/.test(line)) {
      const lang = line.slice(3).trim();
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
      if (i >= lines.length) throw new Error(`docs/guide.md:${start + 1}: unclosed code block`);
      if (lang === 'bash') {
        if (skipNext) last = null;
        else {
          last = { code: body.join('\n'), expected: null, line: start + 1 };
          sections.at(-1)!.blocks.push(last);
        }
        skipNext = false;
      } else if (lang === 'text' && last && last.expected === null) {
        last.expected = body.join('\n');
        last = null;
      } else {
        last = null;
      }
    } else if (line.trim() !== '') {
      last = null;
    }
  }
  return sections.filter((s) => s.blocks.length > 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Expected output

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const TOKEN = 'secret-token:[0-9A-Za-v]+'; // base58 in the GMP alphabet (domain/accounts/tokens.ts)
const PLACEHOLDER = /<([^<>\n]+)>|\$([A-Z][A-Z0-9_]*)/g;

type Vars = Record<string, string>;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The names of the `$NAME` variables an expected output refers to. */
function variablesIn(expected: string): string[] {
  return [...new Set([...expected.matchAll(PLACEHOLDER)].flatMap((m) => (m[2] ? [m[2]] : [])))];
}

/** A regular expression for one expected line or JSON string, placeholders replaced. */
function patternOf(expected: string, vars: Vars): RegExp {
  let source = '';
  let at = 0;
  for (const m of expected.matchAll(PLACEHOLDER)) {
    source += escapeRegExp(expected.slice(at, m.index));
    at = m.index + m[0].length;
    if (m[2] !== undefined) {
      const value = vars[m[2]];
      if (!value) throw new Error(`the expected output refers to $${m[2]}, which is empty in the session`);
      source += escapeRegExp(value);
    } else if (m[1] === 'id' || / id$/.test(m[1]!)) source += UUID;
    else if (m[1] === 'token') source += TOKEN;
    else source += '[\\s\\S]+?';
  }
  source += escapeRegExp(expected.slice(at));
  return new RegExp(`^${source}$`);
}

/** Why `actual` does not match the expected JSON `expected` (null when it does). */
function jsonMismatch(expected: unknown, actual: unknown, vars: Vars, path = '$', unordered = false): string | null {
  const show = (v: unknown) => JSON.stringify(v);
  if (typeof expected === 'string') {
    if (/^<[^<>]+>$/.test(expected) && expected !== '<id>' && !/ id>$/.test(expected) && expected !== '<token>')
      return actual === undefined ? `${path}: missing` : null;
    if (typeof actual !== 'string' || !patternOf(expected, vars).test(actual))
      return `${path}: expected ${show(expected)}, got ${show(actual)}`;
    return null;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length)
      return `${path}: expected an array of ${expected.length}, got ${show(actual)}`;
    if (!unordered) {
      for (let i = 0; i < expected.length; i++) {
        const why = jsonMismatch(expected[i], actual[i], vars, `${path}[${i}]`);
        if (why) return why;
      }
      return null;
    }
    // Each expected item matches a different actual item (few items: a plain backtracking search).
    const used = new Set<number>();
    const assign = (i: number): boolean => {
      if (i === expected.length) return true;
      for (let j = 0; j < actual.length; j++) {
        if (used.has(j) || jsonMismatch(expected[i], actual[j], vars)) continue;
        used.add(j);
        if (assign(i + 1)) return true;
        used.delete(j);
      }
      return false;
    };
    return assign(0)
      ? null
      : `${path}: the items differ (in any order): expected ${show(expected)}, got ${show(actual)}`;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual))
      return `${path}: expected an object, got ${show(actual)}`;
    const e = expected as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    const missing = Object.keys(e).filter((k) => !(k in a));
    const extra = Object.keys(a).filter((k) => !(k in e));
    if (missing.length > 0 || extra.length > 0)
      return `${path}: keys differ: missing ${show(missing)}, not in the guide ${show(extra)}`;
    if (show(Object.keys(e)) !== show(Object.keys(a)))
      return `${path}: keys in another order: the guide ${show(Object.keys(e))}, the output ${show(Object.keys(a))}`;
    const collection = e.type === '_PartialCollection';
    for (const k of Object.keys(e)) {
      const why = jsonMismatch(e[k], a[k], vars, `${path}.${k}`, collection && (k === 'nodes' || k === 'relations'));
      if (why) return why;
    }
    return null;
  }
  return Object.is(expected, actual) ? null : `${path}: expected ${show(expected)}, got ${show(actual)}`;
}

/** The last JSON document in the output (a line, or lines to the end, starting with `{` or `[`) and what precedes it. */
function splitJson(lines: string[]): { text: string[]; json: unknown } | null {
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!/^[[{]/.test(lines[i]!)) continue;
    try {
      return { text: lines.slice(0, i), json: JSON.parse(lines.slice(i).join('\n')) };
    } catch {
      // not the start of the document: look further up
    }
  }
  return null;
}

/** The output for a failure message, its JSON indented as the guide shows it. */
function shown(output: string): string {
  const split = splitJson(output.split('\n').map((l) => l.replace(/\r$/, '')));
  const json = split ? `\n--- its JSON, indented ---\n${JSON.stringify(split.json, null, 2)}` : '';
  return `--- output ---\n${output}${json}`;
}

/** Why the output does not show what the guide says it shows (null when it does). */
function outputMismatch(expected: string, output: string, vars: Vars): string | null {
  const want = expected.split('\n');
  const jsonAt = want.findIndex((l) => /^[[{]/.test(l));
  const wantText = (jsonAt === -1 ? want : want.slice(0, jsonAt)).filter((l) => l.trim() !== '' && l.trim() !== '…');
  let got = output
    .split('\n')
    .map((l) => l.replace(/\r$/, '').trimEnd())
    .filter((l) => l !== '');
  if (jsonAt !== -1) {
    const split = splitJson(got);
    if (!split) return 'the guide shows JSON, the output holds none';
    const why = jsonMismatch(JSON.parse(want.slice(jsonAt).join('\n')), split.json, vars);
    if (why) return `JSON ${why}`;
    got = split.text;
  }
  // Lines in order; after a status line, the header lines the guide shows are looked for in any order among that
  // response's headers (up to the next status line).
  let at = 0;
  let response: { start: number; end: number } | null = null;
  for (const line of wantText) {
    const pattern = patternOf(line.trimEnd(), vars);
    if (response && /^[a-z][a-z0-9-]*: /.test(line)) {
      const found = got.slice(response.start, response.end).some((l) => pattern.test(l));
      if (!found) return `the header ${JSON.stringify(line)} is not in the response`;
      continue;
    }
    while (at < got.length && !pattern.test(got[at]!)) at++;
    if (at === got.length) return `the line ${JSON.stringify(line)} is not in the output (in this order)`;
    at++;
    if (/^HTTP\/[\d.]+ \d{3}/.test(line)) {
      const next = got.findIndex((l, i) => i >= at && /^HTTP\/[\d.]+ \d{3}/.test(l));
      response = { start: at, end: next === -1 ? got.length : next };
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// The bash session

const PRELUDE = `
set -o pipefail
set -E
trap 'printf "\\n__GUIDE_ERR__ exit %s: %s\\n" "$?" "$BASH_COMMAND" >&2' ERR
npm() {
  if [ "$1" = start ] && [ $# = 1 ]; then GUIDE_SERVES=$((GUIDE_SERVES + 1)); env -0 > "$GUIDE_CTL/serve-$GUIDE_SERVES";
  else command npm "$@"; fi
}
npx() {
  if [ "$1" = trellis ]; then shift; node "$GUIDE_CLI" "$@"; else command npx "$@"; fi
}
`;

class Shell {
  private readonly bash: ChildProcess;
  private stdout = '';
  private count = 0;
  private waiting: ((line: string) => void) | null = null;
  private ended = false;

  constructor(
    cwd: string,
    readonly ctl: string,
    env: Record<string, string>,
  ) {
    this.bash = spawn('bash', ['--noprofile', '--norc'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.bash.stdout!.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
      const m = /__GUIDE_DONE__ (\d+)\n/.exec(this.stdout);
      if (m && this.waiting) {
        this.stdout = this.stdout.slice(m.index + m[0].length);
        const resolve = this.waiting;
        this.waiting = null;
        resolve(m[1]!);
      }
    });
    this.bash.stderr!.on('data', (chunk: Buffer) => process.stderr.write(`[guide bash] ${chunk}`));
    this.bash.on('exit', () => {
      this.ended = true;
      this.waiting?.('exited');
    });
  }

  /** Runs a script in the session; its stdout and stderr together, and the status of its last command. */
  async run(script: string): Promise<{ output: string; status: string }> {
    if (this.ended) throw new Error('the bash session has ended');
    const n = ++this.count;
    const file = join(this.ctl, `block-${n}.sh`);
    const out = join(this.ctl, `out-${n}`);
    writeFileSync(file, `${script}\n`);
    const done = new Promise<string>((resolve) => (this.waiting = resolve));
    this.bash.stdin!.write(`source '${file}' > '${out}' 2>&1 < /dev/null; printf '\\n__GUIDE_DONE__ %s\\n' "$?"\n`);
    let timer: NodeJS.Timeout | undefined;
    const status = await Promise.race([
      done,
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), BLOCK_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (status === 'exited') throw new Error('the bash session ended during the block');
    if (status === 'timeout') throw new Error(`the block did not finish within ${BLOCK_TIMEOUT_MS / 1000} s`);
    return { output: existsSync(out) ? readFileSync(out, 'utf8') : '', status };
  }

  async vars(names: string[]): Promise<Vars> {
    if (names.length === 0) return {};
    const file = join(this.ctl, 'vars');
    await this.run(`printf '%s\\0' ${names.map((n) => `"$${n}"`).join(' ')} > '${file}'`);
    const values = readFileSync(file, 'utf8').split('\0');
    return Object.fromEntries(names.map((n, i) => [n, values[i] ?? '']));
  }

  close(): void {
    if (this.ended) return;
    try {
      process.kill(-this.bash.pid!, 'SIGKILL'); // its process group: bash and anything a block left behind
    } catch {
      // already gone
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Servers started for `npm start`

const SERVER_ENV = ['PORT', 'HOST', 'DATA_DIR', 'DATABASE_URL', 'ANONYMOUS_USER_UUID', 'TRELLIS_CONFIG', 'LOG_LEVEL'];

interface Server {
  process: ChildProcess & { done: Promise<Finished> };
  port: number;
}

async function stopServer(server: Server): Promise<void> {
  if (server.process.exitCode === null) server.process.kill('SIGTERM');
  const res = await server.process.done;
  if (res.code !== 0) throw new Error(`the server on port ${server.port} ended with ${res.code}: ${res.stderr}`);
}

async function startServer(env: Record<string, string>, cwd: string): Promise<Server> {
  const port = Number(env.PORT);
  const child = spawnCli(['serve'], { LOG_LEVEL: 'warn', ...env }, undefined, cwd);
  const exited = child.done.then((r) => {
    throw new Error(`the server for port ${port} exited (${r.code}) before it answered: ${r.stderr}${r.stdout}`);
  });
  exited.catch(() => {}); // once it answers, it ends only when the test stops it
  const answers = (async () => {
    for (const started = Date.now(); Date.now() - started < SERVER_START_TIMEOUT_MS && child.exitCode === null; ) {
      try {
        await fetch(`http://127.0.0.1:${port}/error/404/not-found`);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new Error(`the server for port ${port} did not answer within ${SERVER_START_TIMEOUT_MS / 1000} s`);
  })();
  try {
    await Promise.race([answers, exited]);
  } catch (error) {
    if (child.exitCode === null) child.kill('SIGKILL');
    throw error;
  }
  return { process: child, port };
}

// ---------------------------------------------------------------------------------------------------------------

describe('docs/guide.md', () => {
  const sections = readGuide(readFileSync(GUIDE, 'utf8'));
  const pgAdmin = inject('pgUrl');
  let work: string;
  let shell: Shell;
  const ports = new Map<string, number>(); // the guide's port -> the port used here
  const servers = new Map<number, Server>();
  let database: Awaited<ReturnType<typeof scratchPostgresDatabase>> | null = null;

  /** The guide's text with the test's ports and database URL in place of the guide's. */
  async function localise(text: string): Promise<string> {
    for (const guidePort of new Set([...text.matchAll(/\b808\d\b/g)].map((m) => m[0])))
      if (!ports.has(guidePort)) ports.set(guidePort, await freePort());
    let out = text.replace(/\b808\d\b/g, (p) => String(ports.get(p)));
    if (out.includes(GUIDE_PG_URL)) {
      database ??= await scratchPostgresDatabase();
      out = out.split(GUIDE_PG_URL).join(database.url);
    }
    return out;
  }

  /** Starts a server for each `npm start` the last block ran, in order. */
  async function startRequestedServers(): Promise<void> {
    const files = readdirSync(shell.ctl)
      .filter((f) => f.startsWith('serve-'))
      .sort((a, b) => Number(a.slice(6)) - Number(b.slice(6)));
    for (const file of files) {
      const path = join(shell.ctl, file);
      const all = Object.fromEntries(
        readFileSync(path, 'utf8')
          .split('\0')
          .filter((kv) => kv.includes('='))
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
      rmSync(path);
      const env: Record<string, string> = {};
      for (const key of SERVER_ENV) if (all[key] !== undefined) env[key] = all[key];
      env.PORT ??= await localise('8080');
      const port = Number(env.PORT);
      const running = servers.get(port);
      if (running) {
        servers.delete(port);
        await stopServer(running);
      }
      servers.set(port, await startServer(env, work));
    }
  }

  beforeAll(async () => {
    try {
      execFileSync('curl', ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error('docs/guide.md is run with curl, which is not installed (apt-get install curl)');
    }
    work = await mkdtemp(join(tmpdir(), 'trellis-guide-'));
    const ctl = join(work, '.guide');
    mkdirSync(ctl);
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'));
    shell = new Shell(work, ctl, {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? work,
      LANG: 'C.UTF-8',
      GUIDE_CTL: ctl,
      GUIDE_CLI: join(ROOT, 'bin', 'trellis.js'),
      LOG_LEVEL: 'warn',
    });
    await shell.run(PRELUDE);
  });

  afterAll(async () => {
    for (const server of servers.values()) await stopServer(server).catch(() => {});
    shell?.close();
    await database?.drop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('has sections with commands and outputs', () => {
    expect(sections.length).toBeGreaterThan(5);
    expect(sections.flatMap((s) => s.blocks).filter((b) => b.expected !== null).length).toBeGreaterThan(20);
  });

  const dump = process.env.TRELLIS_GUIDE_OUTPUT;
  let failed: string | null = null; // a section that failed: the ones after it build on it and are skipped
  for (const section of sections) {
    it.skipIf(section.needsPostgres && !pgAdmin)(section.title, { timeout: 600_000 }, async ({ skip }) => {
      if (failed) skip(`"${failed}" failed`);
      failed = section.title;
      for (const block of section.blocks) {
        const code = await localise(block.code);
        const { output } = await shell.run(code);
        const where = `docs/guide.md:${block.line}`;
        if (dump) appendFileSync(dump, `=== ${where}\n${code}\n--- output\n${output}\n`);
        const errors = output.split('\n').filter((l) => l.includes('__GUIDE_ERR__'));
        if (errors.length > 0) throw new Error(`${where}: a command failed: ${errors.join('; ')}\n${output}`);
        await startRequestedServers();
        if (block.expected === null) continue;
        const expected = await localise(block.expected);
        const why = outputMismatch(expected, output, await shell.vars(variablesIn(expected)));
        if (why) throw new Error(`${where}: the output differs from the guide: ${why}\n${shown(output)}`);
      }
      failed = null;
    });
  }
});
