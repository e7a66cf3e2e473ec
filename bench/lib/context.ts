// What every scenario family of `npm run bench` shares: the run's settings and options (bench/run.ts parses them),
// its progress log, the rows of the table and where the run keeps its files.

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { PgCluster } from './cluster.js';
import type { Dataset } from './dataset.js';
import type { LoadTool } from './load.js';
import type { Row } from './report.js';

export type Backend = 'postgres' | 'pglite';
export const MiB = 1024 * 1024;
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The run's sizes and durations (written as they are into the results file). */
export interface Settings {
  quick: boolean;
  nodes: number;
  users: number;
  seconds: number;
  warmupSeconds: number;
  connections: number;
  fileBytes: number;
  /** Runs of each file transfer, the fastest counts (quick: 2, to stay under 3 minutes). */
  fileTries: number;
  backends: Backend[];
}

/** The options that pick and change what runs (bench/run.ts lists them). */
export interface Options {
  large: boolean;
  only: RegExp | null;
  tool: LoadTool | undefined;
  profile: boolean;
  sql: string[];
  genericPlans: boolean;
  largeNodes: number;
  largeKeep: string | undefined;
  largeCold: boolean;
  pgSettings: Record<string, string>;
  /** A settings file (TRELLIS_CONFIG) for the Trellis servers under test, to measure a setting against its default. */
  config: string | undefined;
  noBuild: boolean;
}

export interface Bench {
  settings: Settings;
  options: Options;
  /** When the run started (Date.now()). */
  started: number;
  log(msg: string): void;
  /** Whether any of these scenarios is to run (--only). */
  wanted(...scenarios: string[]): boolean;
  rows: Row[];
  datasets: Record<string, Dataset['counts'] & { seconds: number; targets: number }>;
  /** The first measurement of each baseline per backend is listed as a row of its own. */
  listedBaselines: Set<string>;
  tool: LoadTool;
  /** The run's scratch directory. */
  work: string;
  /** The PostgreSQL server of the request, file and S3 scenarios, started by the first that needs it. */
  cluster: PgCluster | null;
}

/** Parses the command line (bench/run.ts documents the options). */
export function parseOptions(args: string[]): { settings: Settings; options: Options } {
  const { values: argv } = parseArgs({
    args,
    options: {
      quick: { type: 'boolean', default: false },
      large: { type: 'boolean', default: false },
      backends: { type: 'string', default: 'postgres,pglite' },
      only: { type: 'string' },
      seconds: { type: 'string' },
      connections: { type: 'string' },
      'file-mib': { type: 'string' },
      tool: { type: 'string' },
      profile: { type: 'boolean', default: false },
      sql: { type: 'string', multiple: true },
      'generic-plans': { type: 'boolean', default: false },
      'large-nodes': { type: 'string' },
      'large-keep': { type: 'string' },
      'large-cold': { type: 'boolean', default: false },
      'pg-set': { type: 'string', multiple: true },
      'no-build': { type: 'boolean', default: false },
      config: { type: 'string' },
    },
  });
  const quick = argv.quick!;
  const settings: Settings = {
    quick,
    nodes: quick ? 10_000 : 100_000,
    users: 200,
    seconds: Number(argv.seconds ?? (quick ? 2 : 10)),
    warmupSeconds: quick ? 1 : 3,
    connections: Number(argv.connections ?? 32),
    fileBytes: Number(argv['file-mib'] ?? (quick ? 128 : 1024)) * MiB,
    fileTries: quick ? 2 : 3,
    backends: argv.backends!.split(',').map((b) => b.trim()) as Backend[],
  };
  for (const b of settings.backends) if (b !== 'postgres' && b !== 'pglite') throw new Error(`unknown backend ${b}`);
  const pgSettings: Record<string, string> = Object.fromEntries(
    (argv['pg-set'] ?? []).map((kv) => {
      const at = kv.indexOf('=');
      if (at < 1) throw new Error(`--pg-set ${kv}: expected NAME=VALUE`);
      return [kv.slice(0, at), kv.slice(at + 1)];
    }),
  );
  const options: Options = {
    large: argv.large!,
    only: argv.only ? new RegExp(argv.only, 'i') : null,
    tool: argv.tool as LoadTool | undefined,
    profile: argv.profile!,
    sql: argv.sql ?? [],
    genericPlans: argv['generic-plans']!,
    largeNodes: Number(argv['large-nodes'] ?? 1_000_000),
    largeKeep: argv['large-keep'],
    largeCold: argv['large-cold']!,
    pgSettings,
    config: argv.config === undefined ? undefined : resolve(argv.config),
    noBuild: argv['no-build']!,
  };
  return { settings, options };
}

/** A run's shared state, before its load tool and scratch directory are known. */
export function createBench(settings: Settings, options: Options): Bench {
  const started = Date.now();
  const log = (msg: string) => {
    const s = Math.round((Date.now() - started) / 1000);
    process.stderr.write(
      `[bench ${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}] ${msg}\n`,
    );
  };
  const { only } = options;
  return {
    settings,
    options,
    started,
    log,
    wanted: (...scenarios) => !only || scenarios.some((s) => only.test(s)),
    rows: [],
    datasets: {},
    listedBaselines: new Set(),
    tool: 'wrk',
    work: '',
    cluster: null,
  };
}

/** The file scenarios' size as their names give it: "128 MiB", "1 GiB". */
export const fileLabel = (settings: Settings): string =>
  settings.fileBytes % (1024 * MiB) === 0
    ? `${settings.fileBytes / (1024 * MiB)} GiB`
    : `${settings.fileBytes / MiB} MiB`;
