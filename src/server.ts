// Runs the service: database, background jobs, HTTP listener, the CLI's admin socket, graceful shutdown.
import { setTimeout as delay } from 'node:timers/promises';
import pino from 'pino';
import type { DbCommand } from './admin/commands.js';
import { startAdminSocket } from './admin/server.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config/schema.js';
import { buildApp } from './http/app.js';
import type { App } from './http/types.js';
import { startJobs } from './jobs.js';
import { serveMetrics } from './metrics/listener.js';
import { createServices } from './services.js';
import { acquireDataDirLock } from './storage/datadir-lock.js';
import { embeddedDatabaseDir, openDatabase } from './storage/open.js';
import { embeddedFailureReport } from './storage/pglite.js';
import type { EmbeddedDatabaseAborted } from './storage/pglite-wire.js';

const REDACT = ['req.headers.authorization', '*.password', '*.currentPassword', '*.newPassword', '*.token'];

export interface RunningServer {
  url: string;
  /** Where Prometheus scrapes (metrics.enabled), or null. */
  metricsUrl: string | null;
  /** Readiness turns 503, then (after health.shutdownDelayInSeconds) in-flight requests finish and it all stops. */
  close(): Promise<void>;
  /**
   * Resolves, with the exit code the process should end with, once the server has stopped on its own: its embedded
   * database aborted (a full disk), which the log has said in one line. A supervisor should start it again.
   */
  stopped: Promise<number>;
}

/**
 * After the embedded database aborted: how long requests still streaming get before their connections close, and
 * how long the whole shutdown may take before the process ends regardless.
 */
const ABORT_GRACE_MS = 2000;
const ABORT_DEADLINE_MS = 10_000;

/**
 * Stops accepting and waits for the requests in flight. Fastify closes the connections idle at that moment; one whose
 * request was still running goes idle later and would hold the exit for the keep-alive timeout (72 s), so idle ones
 * are closed as they appear.
 */
async function closeHttp(app: App): Promise<void> {
  const idle = setInterval(() => app.server.closeIdleConnections(), 100);
  try {
    await app.close();
  } finally {
    clearInterval(idle);
  }
}

/** `adminCommands`: what the admin socket of an embedded server runs for the CLI (cli/commands hands them in). */
export async function startServer(
  config: Config,
  clock: Clock = systemClock,
  adminCommands: Readonly<Record<string, DbCommand>> = {},
): Promise<RunningServer> {
  const logger = pino({ level: config.runtime.logLevel, redact: REDACT });
  const embedded = config.runtime.databaseUrl === null;
  const releaseLock = embedded ? acquireDataDirLock(config.runtime.dataDir) : () => {};
  let abort: (error: EmbeddedDatabaseAborted) => void = () => {};
  const aborted = new Promise<EmbeddedDatabaseAborted>((resolve) => (abort = resolve));
  try {
    const db = await openDatabase(config.runtime, config.settings.database, { onEmbeddedAbort: abort });
    const services = await createServices(config, db, clock);
    const { minFreeSpaceInBytes } = config.settings.storage;
    services.capacity.observe((short) => {
      if (short)
        logger.warn(
          { path: short.path, availableBytes: short.availableBytes, minFreeSpaceInBytes },
          'free disk space is below storage.minFreeSpaceInBytes: writes answer 507 until space is freed',
        );
      else logger.info({ minFreeSpaceInBytes }, 'free disk space is above storage.minFreeSpaceInBytes again');
    });
    await services.capacity.shortOfSpace(); // says so at start
    await services.blobs.verify();
    // Listing a shared bucket may take long: there the sweep job runs at once, in the background (jobs.ts).
    const swept = config.settings.file.storage === 'disk' ? await services.files.sweep() : 'in the background';
    logger.info({ swept, leasesReleased: await services.uploads.releaseStaleLeases() }, 'file store checked');
    const app = await buildApp({ config, services, logger });
    services.readiness.watch((name, state, reason) =>
      state === 'up' ? logger.info({ name }, 'ready again') : logger.warn({ name, state, reason }, 'not ready'),
    );
    await app.listen({ port: config.runtime.port, host: config.runtime.host });
    const metrics = await serveMetrics(services.metrics, config.settings.metrics, logger);
    const jobs = startJobs(services, config, logger);
    services.dispatcher.onError = (err) => logger.error({ err }, 'webhook delivery failed');
    await services.dispatcher.start();
    const admin = embedded ? await startAdminSocket(config, services, adminCommands, logger) : null;
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.runtime.port;
    const url = `http://${config.runtime.host.includes(':') ? `[${config.runtime.host}]` : config.runtime.host}:${port}`;
    logger.info({ url, database: db.kind, dataDir: config.runtime.dataDir }, 'trellis listening');
    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        services.readiness.drain();
        await delay(config.settings.health.shutdownDelayInSeconds * 1000);
        await admin?.close();
        await closeHttp(app);
        await services.dispatcher.stop();
        await jobs.stop();
        await services.blobs.settled(); // background unlinks of dropped bytes
        await db.close();
        await metrics?.close();
        await services.tracing?.shutdown(); // sends the spans not yet sent
        releaseLock();
        logger.info('trellis stopped');
      })());
    // Never go on without the database: requests in flight fail at once (503), the process ends and says why.
    const stopped = aborted.then(async (error) => {
      const dbDir = embeddedDatabaseDir(config.runtime.dataDir);
      const report = await embeddedFailureReport(error, dbDir, minFreeSpaceInBytes);
      logger.fatal({ dataDir: config.runtime.dataDir, postgres: error.postgresSaid }, report.message);
      const cut = setTimeout(() => app.server.closeAllConnections(), ABORT_GRACE_MS);
      try {
        await Promise.race([close(), delay(ABORT_DEADLINE_MS, undefined, { ref: false })]);
      } catch (failure) {
        logger.error({ err: failure }, 'shutdown after the database stopped failed');
      } finally {
        clearTimeout(cut);
      }
      return report.exitCode;
    });
    return { url, metricsUrl: metrics?.url ?? null, close, stopped };
  } catch (error) {
    releaseLock();
    throw error;
  }
}
