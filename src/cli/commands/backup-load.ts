// backup:load <dir> [--force]: loads a backup folder (reference format) into the database.
import { resolve } from 'node:path';
import { BackupError } from '../../backup/format.js';
import { DatabaseNotEmptyError, loadBackup } from '../../backup/load.js';
import { lineProgress } from '../../backup/progress.js';
import { commandArgs, type DbCommand } from '../io.js';

const USAGE = 'usage: trellis backup:load <dir> [--force]';

export const backupLoad: DbCommand = async ({ config, services }, args, io) => {
  const parsed = commandArgs(args, { force: { type: 'boolean', short: 'f' } }, USAGE, io);
  if (parsed === null) return 2;
  if (parsed.positionals.length !== 1) {
    io.err(USAGE);
    return 2;
  }
  const dir = resolve(io.cwd, parsed.positionals[0]!);
  const progress = lineProgress((line) => io.err(line), { tty: io.interactive });
  try {
    const report = await loadBackup(
      {
        db: services.db,
        blobs: services.blobs,
        identifierKey: config.settings.register.uniqueIdentifier,
        limits: config.settings.element,
        now: services.clock.now(),
      },
      dir,
      { force: parsed.values.force === true, progress },
    );
    const rate = Math.round((report.nodes + report.relations) / Math.max(report.seconds, 0.001));
    io.out(
      `Loaded ${report.nodes} nodes, ${report.relations} relations, ${report.files} files, ${report.users} users and ${report.tokens} tokens ` +
        `in ${report.seconds.toFixed(1)} s (${rate} elements/s)${report.warnings.length > 0 ? `, with ${report.warnings.length} warning(s)` : ''}.`,
    );
    return 0;
  } catch (error) {
    if (error instanceof BackupError) {
      io.err(`backup:load: invalid backup, nothing was loaded: ${error.message}`);
      return 1;
    }
    if (error instanceof DatabaseNotEmptyError) {
      io.err(`backup:load: ${error.message}`);
      return 1;
    }
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') {
      io.err(`backup:load: ${(error as Error).message}`);
      return 1;
    }
    throw error;
  }
};
