// user:check-identifiers: lists the accounts whose identifiers are one identifier under the comparison rule (Unicode
// NFC, e-mail addresses also without case), which databases written before that rule, or backups, may hold. Exit 0
// when there are none, 1 with the list.
import { identifierCollisions } from '../../storage/queries/accounts.js';
import { commandArgs, type DbCommand } from '../io.js';

const USAGE = 'usage: trellis user:check-identifiers';

/** A JSON string with every character outside printable ASCII escaped, so that two spellings show as different. */
const visible = (text: string) =>
  JSON.stringify(text).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

export const userCheckIdentifiers: DbCommand = async ({ services }, args, io) => {
  const parsed = commandArgs(args, {}, USAGE, io);
  if (parsed === null) return 2;
  if (parsed.positionals.length > 0) {
    io.err(USAGE);
    return 2;
  }
  const rows = await identifierCollisions(services.db);
  if (rows.length === 0) {
    io.out('No two accounts share an identifier.');
    return 0;
  }
  const keys = new Set(rows.map((r) => r.key));
  for (const key of keys) {
    const group = rows.filter((r) => r.key === key);
    io.out(`${visible(key)}: ${group.length} accounts`);
    for (const r of group)
      io.out(
        `  ${r.id}  ${visible(r.identifier)}  ${r.case_duplicate ? 'logs in with this exact spelling only' : 'logs in with any spelling'}`,
      );
  }
  io.err(
    `${rows.length} accounts share ${keys.size} identifier(s) (compared in Unicode NFC, e-mail addresses without case)`,
  );
  return 1;
};
