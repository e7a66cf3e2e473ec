// The result rows of a run, the printed table and the JSON file.
import { type CpuSplit, formatCpuSplit } from './cpu-split.js';

type RowStatus = 'measured' | 'failed' | 'not available' | 'not available yet' | 'not run';

export interface Row {
  scenario: string;
  backend: string;
  status: RowStatus;
  /** Requests per second (request scenarios). */
  rps?: number;
  /** Latency percentiles in milliseconds. */
  p50?: number;
  p99?: number;
  /** Throughput in MiB/s (file scenarios). */
  mibps?: number;
  /** Elements per second (backup:load). */
  elementsPerSecond?: number;
  /** Growth of the server's resident set size during the transfer, MiB. */
  rssGrowthMiB?: number;
  requests?: number;
  errors?: number;
  /** Name of the baseline row this one is compared with, and the ratio to it. */
  baseline?: string;
  /** The baseline's throughput in the measurement this row was compared with (taken right before it). */
  baselineValue?: number;
  ratio?: number;
  target?: string;
  /** Whether the target is met; null when the row has no target or could not be measured. */
  met?: boolean | null;
  note?: string;
  /** Fraction of the machine busy with other work just before the measurement (0..1). */
  machineBusy?: number;
  /** Cores used during the measurement per process group (cpu-split.ts). */
  cpu?: CpuSplit;
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number | undefined) => (n === undefined ? '' : n < 10 ? n.toFixed(2) : n.toFixed(1));

function throughput(row: Row): string {
  if (row.rps !== undefined) return `${int(row.rps)} req/s`;
  if (row.mibps !== undefined) return `${int(row.mibps)} MiB/s`;
  if (row.elementsPerSecond !== undefined) return `${int(row.elementsPerSecond)} el/s`;
  return '';
}

function verdict(row: Row): string {
  if (row.status !== 'measured') return row.status;
  if (row.met === true) return 'met';
  if (row.met === false) return 'MISSED';
  return '';
}

export function formatTable(rows: Row[]): string {
  const header = ['scenario', 'backend', 'throughput', 'p50 ms', 'p99 ms', 'ratio', 'target', 'result', 'notes'];
  const cells = rows.map((r) => [
    r.scenario,
    r.backend,
    throughput(r),
    ms(r.p50),
    ms(r.p99),
    r.ratio === undefined
      ? ''
      : `${r.ratio.toFixed(2)} x ${r.baseline}${r.baselineValue === undefined ? '' : ` (${int(r.baselineValue)})`}`,
    r.target ?? '',
    verdict(r),
    [
      r.rssGrowthMiB === undefined ? '' : `RSS +${r.rssGrowthMiB.toFixed(0)} MiB`,
      r.errors ? `${r.errors} errors` : '',
      r.note ?? '',
      r.cpu ? formatCpuSplit(r.cpu) : '',
      r.machineBusy !== undefined && r.machineBusy > 0.1
        ? `machine ${Math.round(r.machineBusy * 100)}% busy before`
        : '',
    ]
      .filter(Boolean)
      .join('; '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) =>
    `| ${c.map((v, i) => (i >= 2 && i <= 4 ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i >= 2 && i <= 4 ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(header), rule, ...cells.map(line)].join('\n');
}
