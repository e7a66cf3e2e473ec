// Progress of a long backup phase: a bar redrawn in place on a terminal, plain lines every few seconds otherwise.
// It writes whole lines through the command's IO (which may be carried over the admin socket), so the bar is
// redrawn by moving the cursor up one line before writing the next one, instead of with a bare carriage return.
import { performance } from 'node:perf_hooks';

export interface Progress {
  /** Starts a phase ("loading", "backing up", ...) of `total` units (elements). */
  start(phase: string, total: number): void;
  /** `n` more units are done. */
  tick(n: number): void;
  /** Ends the phase with a summary line. */
  done(): void;
  /** A message that must stay visible (a warning); the bar continues below it. */
  note(line: string): void;
}

export const silentProgress: Progress = { start() {}, tick() {}, done() {}, note() {} };

const UP_AND_CLEAR = '\x1b[1A\x1b[2K';
const BAR_WIDTH = 24;

const int = (n: number) => Math.round(n).toLocaleString('en-US');

export function lineProgress(write: (line: string) => void, options: { tty: boolean; intervalMs?: number }): Progress {
  const interval = options.intervalMs ?? (options.tty ? 100 : 2000);
  let phase = '';
  let total = 0;
  let count = 0;
  let started = 0;
  let lastDraw = 0;
  let barShown = false; // the last line written is a bar that the next draw may overwrite

  const rate = () => {
    const seconds = (performance.now() - started) / 1000;
    return seconds > 0 ? count / seconds : 0;
  };
  const line = () => {
    const percent = total > 0 ? Math.min(100, (count / total) * 100) : 100;
    const counts = `${int(count)}/${int(total)} elements, ${int(rate())}/s`;
    if (!options.tty) return `${phase}: ${counts} (${percent.toFixed(0)}%)`;
    const filled = Math.round((percent / 100) * BAR_WIDTH);
    return `${phase} [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${percent.toFixed(0).padStart(3)}% ${counts}`;
  };
  const draw = () => {
    lastDraw = performance.now();
    if (options.tty) {
      write(`${barShown ? UP_AND_CLEAR : ''}${line()}`);
      barShown = true;
    } else write(line());
  };

  return {
    start(name, n) {
      phase = name;
      total = n;
      count = 0;
      started = performance.now();
      barShown = false;
      if (options.tty) draw();
      else lastDraw = started;
    },
    tick(n) {
      count += n;
      if (performance.now() - lastDraw >= interval) draw();
    },
    done() {
      const seconds = (performance.now() - started) / 1000;
      const summary = `${phase}: ${int(count)} elements in ${seconds.toFixed(1)} s (${int(rate())}/s)`;
      write(options.tty && barShown ? `${UP_AND_CLEAR}${summary}` : summary);
      barShown = false;
    },
    note(text) {
      write(text);
      barShown = false;
    },
  };
}
