// The CLI commands that work on the database (run in-process, or inside a running embedded server).
import type { DbCommand } from '../io.js';
import { backupCreate } from './backup-create.js';
import { backupLoad } from './backup-load.js';
import { tokenRevoke } from './token-revoke.js';
import { userCheckIdentifiers } from './user-check-identifiers.js';
import { userCreate } from './user-create.js';

export const dbCommands: Record<string, DbCommand> = {
  'user:create': userCreate,
  'user:check-identifiers': userCheckIdentifiers,
  'token:revoke': tokenRevoke,
  'backup:create': backupCreate,
  'backup:load': backupLoad,
};
