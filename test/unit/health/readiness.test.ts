// Readiness' report (src/health/readiness.ts): checks shared and reused, a dependency that does not answer in time,
// shutting down, and the changes a listener hears.
import { describe, expect, it } from 'vitest';
import { Readiness } from '../../../src/health/readiness.js';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Readiness', () => {
  it('shares one check between concurrent reports and reuses it briefly', async () => {
    let database = 0;
    const readiness = new Readiness({
      database: async () => {
        database++;
        await pause(20);
      },
      blobStore: async () => {},
    });
    const reports = await Promise.all([readiness.report(), readiness.report(), readiness.report()]);
    for (const report of reports) expect(report).toEqual({ ready: true, checks: { database: 'up', blobStore: 'up' } });
    await readiness.report();
    expect(database).toBe(1);
    await pause(300);
    await readiness.report();
    expect(database).toBe(2);
  });

  it('says down or timeout per dependency, and starts no second check while one still waits', async () => {
    let started = 0;
    const readiness = new Readiness({
      database: () => {
        started++;
        return new Promise(() => {}); // never answers
      },
      blobStore: async () => {
        throw new Error('ENOENT: no such file or directory');
      },
    });
    const heard: string[] = [];
    readiness.watch((name, state, reason) => heard.push(`${name} ${state} ${reason}`));
    const first = await readiness.report();
    expect(first).toEqual({ ready: false, checks: { database: 'timeout', blobStore: 'down' } });
    await pause(300);
    expect((await readiness.report()).checks.database).toBe('timeout');
    expect(started).toBe(1);
    expect(heard).toEqual([
      'database timeout no answer within 1000 ms',
      'blobStore down ENOENT: no such file or directory',
    ]);
  });

  it('tells a listener of changes only, not of the first report when it is up', async () => {
    let up = true;
    const readiness = new Readiness({
      database: async () => {
        if (!up) throw new Error('connect ECONNREFUSED');
      },
      blobStore: async () => {},
    });
    const heard: string[] = [];
    readiness.watch((name, state) => heard.push(`${name} ${state}`));
    await readiness.report();
    up = false;
    await pause(300);
    await readiness.report();
    up = true;
    await pause(300);
    await readiness.report();
    expect(heard).toEqual(['database down', 'database up']);
  });

  it('reports not ready once it drains, whatever its dependencies say', async () => {
    const readiness = new Readiness({ database: async () => {}, blobStore: async () => {} });
    readiness.drain();
    expect(await readiness.report()).toEqual({
      ready: false,
      checks: { database: 'up', blobStore: 'up', instance: 'shutting-down' },
    });
  });
});
