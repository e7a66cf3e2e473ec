// Password hashing: argon2id for new hashes; verification reads the algorithm from the PHC string, so the argon2i
// hashes of reference-implementation backups verify too.
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Algorithm, hash, verify } from '@node-rs/argon2';
import { serviceUnavailable } from '../../errors.js';

export const hashPassword = (password: string): Promise<string> => hash(password, { algorithm: Algorithm.Argon2id });

// Verified against when the user is unknown, so that the response time does not tell whether the user exists.
const DUMMY_HASH = '$argon2id$v=19$m=19456,t=2,p=1$cxZvRvIDDGl19/0/pe2slg$54IGUfdAIoHPDns0NJpygOhj6+rXM91jVxr+CknFiKA';

export async function verifyPassword(phc: string | null | undefined, password: string): Promise<boolean> {
  try {
    const ok = await verify(phc || DUMMY_HASH, password);
    return ok && !!phc;
  } catch {
    return false; // a malformed stored hash never authenticates
  }
}

/**
 * passwordHashing.workers 'auto': half of the cores, at least one, so that the other half is left whole to the threads
 * that serve requests and move file bytes (on two cores, one hashing thread kept downloads within their quiet time
 * where two, even below normal priority, did not).
 */
export const defaultHashWorkers = (cores = availableParallelism()): number => Math.max(1, Math.floor(cores / 2));

/**
 * A hashing thread's nice value (Linux; elsewhere they run at normal priority): below the threads that serve
 * requests, so that where one shares a core with them it gets about a tenth of its time, but not so far below that a
 * machine busy with other work starves log-ins altogether.
 */
const WORKER_NICE = 10;

/** How long an idle hashing thread is kept before it exits; the next hash starts one again. */
const IDLE_MS = 10_000;

// CommonJS, evaluated as the worker's script: `argon2` is the resolved path of @node-rs/argon2, so the worker loads the
// same module wherever the process was started. The thread lowers its own priority: on Linux /proc/thread-self names
// its thread id, and setpriority on a thread id applies to that thread alone.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  require('node:os').setPriority(tid, workerData.nice);
} catch {}
const argon2 = require(workerData.argon2);
parentPort.on('message', ({ op, password, phc }) => {
  try {
    const result = op === 'hash'
      ? argon2.hashSync(password, { algorithm: ${Algorithm.Argon2id} })
      : argon2.verifySync(phc, password);
    parentPort.postMessage({ result });
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) });
  }
});
`;

const ARGON2_PATH = createRequire(import.meta.url).resolve('@node-rs/argon2');

/** What a job's callback is told: argon2's answer, or that argon2 refused the input (a malformed stored hash). */
type Outcome = { result: string | boolean } | { refused: string };

type Job = ({ op: 'hash'; password: string } | { op: 'verify'; password: string; phc: string }) & {
  /** Called once: with the outcome, or with an error when the thread failed before answering. */
  done(outcome: Outcome | Error): void;
};

/** One hashing thread, one job at a time; the pool (PasswordHashing) decides what it does next. */
class HashThread {
  private readonly worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { argon2: ARGON2_PATH, nice: WORKER_NICE },
    // argon2 holds its memory outside the JavaScript heap; the thread itself needs little.
    resourceLimits: { maxOldGenerationSizeMb: 32 },
  });
  private job: Job | null = null;
  private ended = false;

  constructor(
    private readonly onFree: (thread: HashThread) => void,
    private readonly onGone: (thread: HashThread) => void,
  ) {
    this.worker.on('message', (message: { result?: string | boolean; error?: string }) => {
      const job = this.job!;
      this.job = null;
      this.worker.unref();
      job.done(message.error !== undefined ? { refused: message.error } : { result: message.result! });
      this.onFree(this);
    });
    // A thread that failed (it should not) fails its job; the pool starts another for the next one.
    const gone = (error: Error) => {
      if (this.ended) return;
      this.ended = true;
      this.job?.done(error);
      this.job = null;
      this.onGone(this);
    };
    this.worker.on('error', gone);
    this.worker.on('exit', (code) => gone(new Error(`the password hashing thread exited with ${code}`)));
    this.worker.unref();
  }

  run(job: Job): void {
    this.job = job;
    // Referenced while it works, so that a process waiting only for a hash (a CLI command) does not exit.
    this.worker.ref();
    this.worker.postMessage(
      job.op === 'hash'
        ? { op: 'hash', password: job.password }
        : { op: 'verify', password: job.password, phc: job.phc },
    );
  }

  /** Ends the thread; called only while it has no job (the pool has already let go of it). */
  retire(): void {
    this.ended = true;
    void this.worker.terminate();
  }
}

/**
 * Every argon2 hash and verification of the service goes through here. Each is tens of milliseconds of a core's
 * time: run on libuv's thread pool, as the argon2 library does by default, a flood of registrations or log-ins took
 * every thread that file reads and writes also need, and every core, and held downloads up for its whole length. So
 * they run on threads of their own (at most `workers` at once, by default on half of the cores), below normal
 * priority; up to `maxQueued` wait their turn in order, and beyond that a request is refused at once with 503 and
 * Retry-After rather than waiting for seconds. Threads start with the first job and end after a while without one.
 */
export class PasswordHashing {
  /** Threads without a job, each with the timer that retires it. */
  private readonly idle = new Map<HashThread, NodeJS.Timeout>();
  private threads = 0;
  private readonly waiting: Job[] = [];

  constructor(
    readonly workers: number,
    readonly maxQueued: number,
  ) {}

  async hash(password: string): Promise<string> {
    const outcome = await this.outcome({ op: 'hash', password });
    if ('refused' in outcome) throw new Error(`argon2 refused to hash: ${outcome.refused}`);
    return outcome.result as string;
  }

  async verify(phc: string | null | undefined, password: string): Promise<boolean> {
    const outcome = await this.outcome({ op: 'verify', phc: phc || DUMMY_HASH, password });
    // A malformed stored hash never authenticates.
    return 'result' in outcome && outcome.result === true && !!phc;
  }

  private outcome(job: { op: 'hash'; password: string } | { op: 'verify'; password: string; phc: string }) {
    return new Promise<Outcome>((resolve, reject) =>
      this.submit({ ...job, done: (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)) }),
    );
  }

  /** Hands the job to a free thread, or a new one, or queues it; 503 when the queue is full. */
  private submit(job: Job): void {
    const [free] = this.idle.keys();
    if (free !== undefined) {
      clearTimeout(this.idle.get(free));
      this.idle.delete(free);
      free.run(job);
    } else if (this.threads < this.workers) {
      this.start().run(job);
    } else if (this.waiting.length < this.maxQueued) {
      this.waiting.push(job);
    } else {
      throw serviceUnavailable('This instance is checking the maximum number of passwords at once; retry shortly.');
    }
  }

  private start(): HashThread {
    this.threads++;
    return new HashThread(
      (thread) => {
        const next = this.waiting.shift();
        if (next) {
          thread.run(next);
          return;
        }
        const timer = setTimeout(() => {
          this.idle.delete(thread);
          this.threads--;
          thread.retire();
        }, IDLE_MS);
        timer.unref();
        this.idle.set(thread, timer);
      },
      (thread) => {
        clearTimeout(this.idle.get(thread));
        this.idle.delete(thread);
        this.threads--;
        const next = this.waiting.shift();
        if (next) this.start().run(next);
      },
    );
  }
}
