// What making a large file durable costs, with and without writing behind (src/blob/durable-sink.ts): streams N MiB
// into a file through DurableFileSink, paced like an upload of R MiB/s (default: as fast as the disk takes it), and
// reports the time to write, the tail (the wait for the final fsync after the last byte) and the throughput, for
//   none     no fsync at all (what B3 measures: the bytes are only in the page cache)
//   end      one fsync at the end (what Trellis did before: flush-every larger than the file)
//   behind   DurableFileSink as Trellis uses it (a background fdatasync every FLUSH_EVERY bytes)
// alternating, `--rounds` times. The file is written next to the data directory's disk (default ./data/bench-tmp).
//
//   node --import tsx bench/write-behind.ts [--mib 1024] [--rate MiBps] [--rounds 3] [--dir DIR]
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { DurableFileSink, FLUSH_EVERY } from '../src/blob/durable-sink.js';

const { values: args } = parseArgs({
  options: {
    mib: { type: 'string', default: '1024' },
    rate: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    dir: { type: 'string', default: join('data', 'bench-tmp') },
  },
});
const total = Number(args.mib) * 1024 * 1024;
const rate = args.rate ? Number(args.rate) * 1024 * 1024 : null;
const CHUNK = 64 * 1024; // what an HTTP request body delivers at a time
const blocks = Array.from({ length: 64 }, () => randomBytes(CHUNK));
await mkdir(args.dir, { recursive: true });

/** TOTAL bytes in 64 KiB chunks, at `rate` bytes/s when given; `done` records when the last one was handed over. */
function source(done: { at: number }) {
  return Readable.from(
    (async function* () {
      const started = performance.now();
      for (let sent = 0, i = 0; sent < total; sent += CHUNK, i++) {
        if (rate !== null) {
          const due = started + (sent / rate) * 1000;
          const wait = due - performance.now();
          if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
        }
        yield blocks[i % blocks.length]!;
      }
      done.at = performance.now();
    })(),
    { objectMode: false },
  );
}

const sinks: Record<string, (path: string) => Writable> = {
  none: (path) => createWriteStream(path, { flags: 'wx' }),
  end: (path) => new DurableFileSink(path, { flags: 'wx', flushEvery: Number.MAX_SAFE_INTEGER }),
  behind: (path) => new DurableFileSink(path, { flags: 'wx' }),
};

process.stdout.write(
  `${args.mib} MiB, ${rate === null ? 'unpaced' : `paced at ${args.rate} MiB/s`}, flush every ${FLUSH_EVERY / 1048576} MiB\n`,
);
for (let round = 1; round <= Number(args.rounds); round++)
  for (const [name, make] of Object.entries(sinks)) {
    const path = join(args.dir, `write-behind-${name}.bin`);
    const done = { at: 0 };
    const started = performance.now();
    await pipeline(source(done), make(path));
    const ended = performance.now();
    await rm(path);
    const seconds = (ended - started) / 1000;
    process.stdout.write(
      `round ${round}  ${name.padEnd(6)} ${(total / 1048576 / seconds).toFixed(0).padStart(5)} MiB/s  ` +
        `total ${(ended - started).toFixed(0).padStart(5)} ms, tail after the last byte ${(ended - done.at).toFixed(0).padStart(4)} ms\n`,
    );
  }
