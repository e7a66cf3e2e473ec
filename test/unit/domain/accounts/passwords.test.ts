// Password hashing runs on threads of its own below normal priority (domain/accounts/passwords.ts), a bounded number
// at once, with a bounded queue: beyond it 503 with Retry-After at once.
import { readdir, readFile } from 'node:fs/promises';
import { Algorithm, hash as argon2Hash } from '@node-rs/argon2';
import { describe, expect, it } from 'vitest';
import {
  defaultHashWorkers,
  hashPassword,
  PasswordHashing,
  verifyPassword,
} from '../../../../src/domain/accounts/passwords.js';
import { Problem } from '../../../../src/errors.js';

/** The nice values of this process's threads (Linux: field 19 of /proc/self/task/<tid>/stat). */
async function threadNiceValues(): Promise<number[]> {
  const tids = await readdir('/proc/self/task');
  const values = await Promise.all(
    tids.map(async (tid) => {
      const stat = await readFile(`/proc/self/task/${tid}/stat`, 'utf8').catch(() => null);
      // The command name (field 2) is in parentheses and may hold spaces: count fields after its end.
      return stat === null ? null : Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    }),
  );
  return values.filter((v): v is number => v !== null);
}

describe('password hashing', () => {
  it('hashes and verifies as argon2 does, in either direction', async () => {
    const hashing = new PasswordHashing(2, 10);
    const hash = await hashing.hash('correct horse');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await verifyPassword(hash, 'correct horse')).toBe(true);
    expect(await hashing.verify(hash, 'correct horse')).toBe(true);
    expect(await hashing.verify(hash, 'wrong horse')).toBe(false);
    expect(await hashing.verify(await hashPassword('other'), 'other')).toBe(true);
    // An unknown user (no hash) and a malformed stored hash never authenticate.
    expect(await hashing.verify(null, 'correct horse')).toBe(false);
    expect(await hashing.verify('$argon2id$garbage', 'correct horse')).toBe(false);
  });

  it('runs at most `workers` at once, queues `maxQueued`, and refuses more with 503 and Retry-After', async () => {
    const hashing = new PasswordHashing(1, 2);
    const accepted = [hashing.hash('one'), hashing.hash('two'), hashing.verify(null, 'three')];
    const refused = await hashing.hash('four').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Problem);
    expect(refused).toMatchObject({ slug: 'service-unavailable', status: 503, headers: { 'retry-after': '5' } });
    const [one, two, three] = await Promise.all(accepted);
    expect(await verifyPassword(one as string, 'one')).toBe(true);
    expect(await verifyPassword(two as string, 'two')).toBe(true);
    expect(three).toBe(false);
    // Once the queue has drained there is room again.
    expect(await hashing.verify(one as string, 'one')).toBe(true);
  });

  it.runIf(process.platform === 'linux')('hashes on threads below normal priority', async () => {
    const hashing = new PasswordHashing(2, 10);
    const before = (await threadNiceValues()).filter((nice) => nice === 10).length;
    const running = Promise.all([hashing.hash('a'), hashing.hash('b')]);
    await running;
    // The threads stay for a while after their work, so they can be seen now.
    expect((await threadNiceValues()).filter((nice) => nice === 10).length).toBe(before + 2);
  });
});

describe('password hashing, further', () => {
  it('verifies the argon2i hashes of reference-implementation backups, on the threads and off them', async () => {
    const argon2i = await argon2Hash('legacy secret', { algorithm: Algorithm.Argon2i });
    expect(argon2i).toMatch(/^\$argon2i\$/);
    const hashing = new PasswordHashing(1, 4);
    expect(await hashing.verify(argon2i, 'legacy secret')).toBe(true);
    expect(await hashing.verify(argon2i, 'Legacy secret')).toBe(false);
    expect(await verifyPassword(argon2i, 'legacy secret')).toBe(true);
  });

  it('never authenticates without a stored hash, or with a malformed one', async () => {
    const hashing = new PasswordHashing(1, 4);
    for (const phc of [null, undefined, '']) {
      expect(await verifyPassword(phc, '')).toBe(false);
      expect(await hashing.verify(phc, '')).toBe(false);
    }
    expect(await verifyPassword('not a phc string', 'x')).toBe(false);
  });

  it('salts every hash: the same password twice gives two hashes that both verify', async () => {
    const hashing = new PasswordHashing(2, 4);
    const [a, b] = await Promise.all([hashing.hash('same'), hashing.hash('same')]);
    expect(a).not.toBe(b);
    expect(await hashing.verify(a, 'same')).toBe(true);
    expect(await hashing.verify(b, 'same')).toBe(true);
  });

  it("'auto' workers: half of the cores, at least one", () => {
    expect(defaultHashWorkers(1)).toBe(1);
    expect(defaultHashWorkers(2)).toBe(1);
    expect(defaultHashWorkers(3)).toBe(1);
    expect(defaultHashWorkers(8)).toBe(4);
    expect(defaultHashWorkers()).toBeGreaterThanOrEqual(1);
  });

  it('answers queued jobs in order as threads come free, with no queue at all beyond the threads', async () => {
    const hashing = new PasswordHashing(1, 0);
    const first = hashing.hash('only');
    // No room to wait: refused at once while the one thread works.
    await expect(hashing.verify(null, 'x')).rejects.toMatchObject({ status: 503 });
    expect(await verifyPassword(await first, 'only')).toBe(true);
    const order: string[] = [];
    const queued = new PasswordHashing(1, 3);
    await Promise.all(
      ['a', 'b', 'c', 'd'].map((p) =>
        queued.hash(p).then(() => {
          order.push(p);
        }),
      ),
    );
    expect(order).toEqual(['a', 'b', 'c', 'd']);
  });
});
