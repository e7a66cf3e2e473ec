// The processes a scenario loads: Trellis itself (bin/trellis.js serve, the build of dist/) and the baselines
// (bench/baselines.ts), each on a free port, with its log in the run's directory.
import { join } from 'node:path';
import { freePort } from './cluster.js';
import { type Backend, type Bench, ROOT } from './context.js';
import { type ServerProcess, startServer } from './procs.js';

/** Node's flags for a server process under --profile (its CPU profile goes to profiles/<name>). */
const profileArgs = (bench: Bench, name: string) =>
  bench.options.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(bench.work, 'profiles', name)}`] : [];

export async function startBaselines(
  bench: Bench,
  backend: Backend,
  dbUrl: string | null,
  dataDir: string,
): Promise<ServerProcess> {
  const port = await freePort();
  // Profiled too, so that a scenario's profile can be read against its baseline's.
  const args = [
    ...profileArgs(bench, `${backend}-baselines`),
    '--import',
    'tsx',
    join(ROOT, 'bench/baselines.ts'),
    '--port',
    String(port),
    '--files',
    join(dataDir, 'baseline-files'),
  ];
  args.push(...(dbUrl ? ['--database-url', dbUrl] : ['--pglite', join(dataDir, 'db')]));
  bench.log(`starting the baselines (${backend})`);
  return startServer({
    name: 'baselines',
    command: process.execPath,
    args,
    env: process.env,
    cwd: ROOT,
    port,
    readyPath: '/b0',
    logFile: join(bench.work, `baselines-${backend}.log`),
  });
}

export async function startTrellis(
  bench: Bench,
  backend: Backend,
  dbUrl: string | null,
  dataDir: string,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  for (const key of [
    'DATABASE_URL',
    'TRELLIS_CONFIG',
    'ANONYMOUS_USER_UUID',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
  ])
    delete env[key];
  if (dbUrl) env.DATABASE_URL = dbUrl;
  if (bench.options.config) env.TRELLIS_CONFIG = bench.options.config;
  Object.assign(env, extraEnv);
  bench.log(`starting Trellis (${backend})`);
  return startServer({
    name: 'trellis',
    command: process.execPath,
    args: [...profileArgs(bench, backend), join(ROOT, 'bin/trellis.js'), 'serve'],
    env,
    cwd: ROOT,
    port,
    readyPath: '/instance-configuration',
    logFile: join(bench.work, `trellis-${backend}.log`),
  });
}

/**
 * `trellis serve` as installed (bin/trellis.js), on its own and outside a run's phases (the soak, the registration
 * flood): data in `work`, on the PostgreSQL server at `databaseUrl` or the embedded database when null.
 */
export async function startStandaloneTrellis(
  work: string,
  databaseUrl: string | null,
  configFile?: string,
): Promise<ServerProcess> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: join(work, 'data'),
    LOG_LEVEL: 'warn',
  };
  for (const key of ['DATABASE_URL', 'TRELLIS_CONFIG', 'ANONYMOUS_USER_UUID']) delete env[key];
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  if (configFile) env.TRELLIS_CONFIG = configFile;
  return startServer({
    name: 'trellis',
    command: process.execPath,
    args: [join(ROOT, 'bin/trellis.js'), 'serve'],
    env,
    cwd: ROOT,
    port,
    readyPath: '/instance-configuration',
    logFile: join(work, 'trellis.log'),
  });
}
