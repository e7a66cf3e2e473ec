// user:create <identifier> <password> [--id UUID] [--name NAME]: prints the new user's id.
import { parseArgs } from 'node:util';
import { Problem } from '../../errors.js';
import { isUuid } from '../../domain/values.js';
import type { DbCommand } from '../io.js';

export const userCreate: DbCommand = async ({ services }, args, io) => {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { id: { type: 'string' }, name: { type: 'string' } },
  });
  if (positionals.length !== 2) {
    io.err('usage: trellis user:create <identifier> <password> [--id UUID] [--name NAME]');
    return 2;
  }
  if (values.id !== undefined && !isUuid(values.id)) {
    io.err('--id must be a UUID');
    return 2;
  }
  const [identifier, password] = positionals as [string, string];
  try {
    const id = await services.accounts.createUser(identifier, password, values.name ? { name: values.name } : {}, values.id?.toLowerCase());
    io.out(id);
    return 0;
  } catch (error) {
    if (error instanceof Problem) {
      io.err(`user:create failed: ${error.detail}`);
      return 1;
    }
    throw error;
  }
};
