// `trellis <command>`: serve, config:check, and the database commands (src/cli/commands).
import { systemClock } from '../clock.js';
import { ConfigError, loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { startServer } from '../server.js';
import { createServices } from '../services.js';
import { acquireDataDirLock, DataDirBusyError, lockHolder } from '../storage/datadir-lock.js';
import { IncompatibleSchemaError } from '../storage/migrate.js';
import { embeddedDatabaseDir, openDatabase } from '../storage/open.js';
import { EmbeddedStartFailed, embeddedFailureReport } from '../storage/pglite.js';
import { EmbeddedDatabaseAborted } from '../storage/pglite-wire.js';
import { runViaServer, ServerGoneError } from './admin-socket.js';
import { dbCommands } from './commands/index.js';
import { type CommandIO, processIO } from './io.js';

const USAGE = `usage: trellis <command>
  serve                                      run the HTTP service (what npm start runs)
  config:check                               validate the configuration and print it
  user:create <identifier> <password> [--id UUID] [--name NAME]
  user:check-identifiers                     list accounts whose identifiers are the same (NFC, e-mail case); exit 1 if any
  token:revoke [-f] [--dry-run] [-l] [-u USER] [-g GROUP] [-b "YYYY-MM-DD HH:MM"] [-a "YYYY-MM-DD HH:MM"]
               [--issued-with-expiration-date] [--issued-without-expiration-date]
  backup:create <dir>                        write a backup (reference format) from one consistent snapshot
  backup:load <dir> [--force]                load a backup; --force loads into a database that is not empty`;

/** How long a command waits for the admin socket of a server that holds DATA_DIR but is still starting. */
const SERVER_START_WAIT_MS = 60_000;

/** The admin socket is not there (yet, or any more): nothing was sent, the command may go elsewhere. */
const socketNotReady = (error: unknown) =>
  ['ENOENT', 'ECONNREFUSED'].includes((error as { code?: string })?.code ?? '');

async function runDbCommand(config: Config, name: string, args: string[], io: CommandIO): Promise<number> {
  const command = dbCommands[name]!;
  const { dataDir } = config.runtime;
  // A server that holds DATA_DIR runs the command. It opens its admin socket only once its database is migrated and
  // it listens, and closes it first when it stops: in between, wait for the socket while the server still holds
  // DATA_DIR, and run the command here once it has let go.
  for (const started = Date.now(); config.runtime.databaseUrl === null && lockHolder(dataDir) !== null; ) {
    try {
      return await runViaServer(dataDir, name, args, io);
    } catch (error) {
      if (!socketNotReady(error) || Date.now() - started > SERVER_START_WAIT_MS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const release = config.runtime.databaseUrl === null ? acquireDataDirLock(config.runtime.dataDir) : () => {};
  try {
    const db = await openDatabase(config.runtime, config.settings.database, { use: 'command' });
    try {
      return await command({ config, services: await createServices(config, db, systemClock) }, args, io);
    } finally {
      await db.close();
    }
  } finally {
    release();
  }
}

function waitForSignal(): Promise<string> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}

export async function main(argv: string[], env: NodeJS.ProcessEnv, io: CommandIO = processIO()): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    (name ? io.out : io.err)(USAGE);
    return name ? 0 : 2;
  }
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(`trellis: ${error.message}`);
      return 78; // EX_CONFIG
    }
    throw error;
  }
  try {
    if (name === 'config:check') {
      io.out(
        JSON.stringify(
          {
            ...config.settings,
            runtime: {
              ...config.runtime,
              databaseUrl: config.runtime.databaseUrl ? '(set)' : null,
              s3Credentials: config.runtime.s3Credentials ? '(set)' : null,
            },
          },
          null,
          2,
        ),
      );
      io.out('configuration is valid');
      return 0;
    }
    if (name === 'serve') {
      const server = await startServer(config, systemClock, dbCommands);
      const ended = await Promise.race([waitForSignal(), server.stopped]);
      if (typeof ended === 'number') {
        // The server stopped on its own and has said why: end now, whatever is still pending.
        setTimeout(() => process.exit(ended), 1000).unref();
        return ended;
      }
      io.err(`trellis: ${ended} received, shutting down`);
      await server.close();
      return 0;
    }
    if (name in dbCommands) return await runDbCommand(config, name, args, io);
    io.err(`trellis: unknown command ${name}\n${USAGE}`);
    return 2;
  } catch (error) {
    if (error instanceof DataDirBusyError) {
      io.err(`trellis: ${error.message}`);
      return 75; // EX_TEMPFAIL
    }
    if (error instanceof EmbeddedDatabaseAborted || error instanceof EmbeddedStartFailed) {
      const { dataDir } = config.runtime;
      const report = await embeddedFailureReport(
        error,
        embeddedDatabaseDir(dataDir),
        config.settings.storage.minFreeSpaceInBytes,
      );
      io.err(`trellis: ${report.message}`);
      return report.exitCode;
    }
    if (error instanceof IncompatibleSchemaError) {
      io.err(`trellis: ${error.message}`);
      return 65; // EX_DATAERR
    }
    if (operatorError(error) || error instanceof ServerGoneError) {
      io.err(`trellis: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

/**
 * A failure the operator fixes in the environment, told as a message rather than a stack trace: one of the system
 * (a port in use, a HOST that does not resolve, a DATA_DIR that cannot be created, a database server that does not
 * answer) or a PostgreSQL refusal to connect (SQLSTATE classes 08 connection, 28 authorization, 3D no such
 * database, 53 resources, and 57P03 not accepting connections yet).
 */
function operatorError(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  const { code, syscall } = error as { code?: unknown; syscall?: unknown };
  if (typeof code !== 'string') return false;
  return typeof syscall === 'string' || /^(08|28|3D|53)/.test(code) || code === '57P03';
}
