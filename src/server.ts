// Runs the service: database, background jobs, HTTP listener, the CLI's admin socket, graceful shutdown.
import pino from 'pino';
import { startAdminSocket } from './cli/admin-socket.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config/schema.js';
import { buildApp } from './http/app.js';
import { startJobs } from './jobs.js';
import { createServices } from './services.js';
import { acquireDataDirLock } from './storage/datadir-lock.js';
import { openDatabase } from './storage/open.js';

const REDACT = ['req.headers.authorization', '*.password', '*.currentPassword', '*.newPassword', '*.token'];

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export async function startServer(config: Config, clock: Clock = systemClock): Promise<RunningServer> {
  const logger = pino({ level: config.runtime.logLevel, redact: REDACT });
  const embedded = config.runtime.databaseUrl === null;
  const releaseLock = embedded ? acquireDataDirLock(config.runtime.dataDir) : () => {};
  try {
    const db = await openDatabase(config.runtime, config.settings.database);
    const services = await createServices(config, db, clock);
    await services.blobs.verify();
    // Listing a shared bucket may take long: there the sweep job runs at once, in the background (jobs.ts).
    const swept = config.settings.file.storage === 'disk' ? await services.files.sweep() : 'in the background';
    logger.info({ swept, leasesReleased: await services.uploads.releaseStaleLeases() }, 'file store checked');
    const app = await buildApp({ config, services, logger });
    await app.listen({ port: config.runtime.port, host: config.runtime.host });
    const jobs = startJobs(services, config, logger);
    const admin = embedded ? await startAdminSocket(config, services, logger) : null;
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.runtime.port;
    const url = `http://${config.runtime.host.includes(':') ? `[${config.runtime.host}]` : config.runtime.host}:${port}`;
    logger.info({ url, database: db.kind, dataDir: config.runtime.dataDir }, 'trellis listening');
    let closing: Promise<void> | null = null;
    return {
      url,
      close: () =>
        (closing ??= (async () => {
          await admin?.close();
          await app.close(); // stops accepting, waits for in-flight requests
          await jobs.stop();
          await services.blobs.settled(); // background unlinks of dropped bytes
          await db.close();
          releaseLock();
          logger.info('trellis stopped');
        })()),
    };
  } catch (error) {
    releaseLock();
    throw error;
  }
}
