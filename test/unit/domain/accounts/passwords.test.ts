// Password hashing runs on threads of its own below normal priority (domain/accounts/passwords.ts), a bounded number
// at once, with a bounded queue: beyond it 503 with Retry-After at once.
import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { hashPassword, PasswordHashing, verifyPassword } from '../../../../src/domain/accounts/passwords.js';
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
