// backup:create <dir>: writes the database as a backup folder (reference format) from one consistent snapshot.
import { resolve } from 'node:path';
import { BackupTargetError, createBackup } from '../../backup/create.js';
import { lineProgress } from '../../backup/progress.js';
import { commandArgs, type DbCommand } from '../io.js';

const USAGE = 'usage: trellis backup:create <dir>';

export const backupCreate: DbCommand = async ({ services }, args, io) => {
  const parsed = commandArgs(args, {}, USAGE, io);
  if (parsed === null) return 2;
  if (parsed.positionals.length !== 1) {
    io.err(USAGE);
    return 2;
  }
  const progress = lineProgress((line) => io.err(line), { tty: io.interactive });
  try {
    const report = await createBackup(
      { db: services.db, blobs: services.blobs, now: services.clock.now() },
      resolve(io.cwd, parsed.positionals[0]!),
      { progress },
    );
    io.out(
      `Wrote ${report.nodes} nodes, ${report.relations} relations and ${report.files} files to ${parsed.positionals[0]} in ${report.seconds.toFixed(1)} s` +
        `${report.warnings.length > 0 ? `, with ${report.warnings.length} warning(s)` : ''}.`,
    );
    return 0;
  } catch (error) {
    if (error instanceof BackupTargetError) {
      io.err(`backup:create: ${error.message}`);
      return 1;
    }
    throw error;
  }
};
