// scripts/build.js and scripts/start.js (npm start) over a real copy of the checkout: a start compiles src/ again
// only when a source's contents changed, then runs what it compiled; scripts/freshness.js tells the explorer's
// sources the same way. The copy shares this checkout's node_modules and starts from its builds.
import { spawnSync } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { staleDigest, TARGETS } from '../../../scripts/freshness.js';

const ROOT = join(import.meta.dirname, '../../..');
/** A full compile of src/ on a busy machine, with room: these are bounds against a hang, not timings. */
const BUILD_MS = 300_000;

describe('npm start over a copy of the checkout', () => {
  let copy: string;
  const node = (script: string, env: NodeJS.ProcessEnv = {}) => {
    const run = spawnSync(process.execPath, [join(copy, script)], {
      cwd: copy,
      encoding: 'utf8',
      env: { ...process.env, DATA_DIR: join(copy, 'data'), ...env },
    });
    return { status: run.status, stderr: run.stderr };
  };
  const compiled = async () => (await stat(join(copy, 'dist/cli/main.js'))).mtimeMs;

  beforeAll(async () => {
    copy = await mkdtemp(join(tmpdir(), 'trellis-build-'));
    const entries = ['src', 'scripts', 'explorer', 'dist', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];
    for (const entry of [...entries, 'package-lock.json'])
      await cp(join(ROOT, entry), join(copy, entry), { recursive: true, preserveTimestamps: true });
    await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
    // Whatever this checkout's builds were made from, the copy's are up to date after this.
    expect(node('scripts/build.js')).toMatchObject({ status: 0 });
  }, BUILD_MS);
  afterAll(() => rm(copy, { recursive: true, force: true }));

  it('builds nothing when nothing changed, nor when a source is only touched', async () => {
    const before = await compiled();
    expect(node('scripts/build.js')).toEqual({ status: 0, stderr: '' });
    await utimes(join(copy, 'src/cli/main.ts'), new Date(), new Date());
    expect(node('scripts/build.js')).toEqual({ status: 0, stderr: '' });
    expect(await compiled()).toBe(before);
  });

  it(
    'compiles again when a source changed, then runs the new code; the next start compiles nothing',
    async () => {
      const source = join(copy, 'src/cli/main.ts');
      const text = await readFile(source, 'utf8');
      // The first of the CLI's messages is the one for an invalid configuration.
      const said = 'io.err(`trellis: ';
      expect(text).toContain(said);
      await writeFile(source, text.replace(said, 'io.err(`trellis (changed): '));
      // An invalid PORT: the CLI says so and ends (EX_CONFIG) before it would serve.
      const first = node('scripts/start.js', { PORT: 'not-a-port' });
      expect(first.status).toBe(78);
      expect(first.stderr).toContain('[build] compiling src/ to dist/');
      expect(first.stderr).toMatch(/^trellis \(changed\): .*PORT/m);
      const second = node('scripts/start.js', { PORT: 'not-a-port' });
      expect(second.status).toBe(78);
      expect(second.stderr).not.toContain('[build]');
      expect(second.stderr).toMatch(/^trellis \(changed\): .*PORT/m);
    },
    BUILD_MS,
  );

  it("tells the explorer's sources the same way: touched is fresh, changed or unbuilt is not", async () => {
    expect(staleDigest(TARGETS.explorer, copy)).toBeNull();
    const source = join(copy, 'explorer/index.html');
    await utimes(source, new Date(), new Date());
    expect(staleDigest(TARGETS.explorer, copy)).toBeNull();
    const text = await readFile(source, 'utf8');
    await writeFile(source, `${text}\n`);
    expect(staleDigest(TARGETS.explorer, copy)).toMatch(/^[0-9a-f]{64}$/);
    await writeFile(source, text);
    expect(staleDigest(TARGETS.explorer, copy)).toBeNull();
    await rm(join(copy, 'explorer/dist/index.html'));
    expect(staleDigest(TARGETS.explorer, copy)).not.toBeNull();
  });
});
