// user:create <identifier> <password> [--id UUID] [--name NAME]: prints the new user's id.

import { Problem } from '../../errors.js';
import { parseElementId } from '../../values.js';
import { commandArgs, type DbCommand } from '../io.js';

const USAGE = 'usage: trellis user:create <identifier> <password> [--id UUID] [--name NAME]';

export const userCreate: DbCommand = async ({ config, services }, args, io) => {
  const parsed = commandArgs(args, { id: { type: 'string' }, name: { type: 'string' } }, USAGE, io);
  if (parsed === null) return 2;
  const { values, positionals } = parsed;
  if (positionals.length !== 2) {
    io.err(USAGE);
    return 2;
  }
  const id = values.id === undefined ? undefined : parseElementId(values.id);
  if (id === null) {
    io.err('--id must be a UUID');
    return 2;
  }
  const [identifier, password] = positionals as [string, string];
  // The operator may mean it (a service account, a test instance): a warning, not a refusal as POST /register gives.
  if (password.length > 0 && services.accounts.passwordTooShort(password))
    io.err(
      `warning: the password is shorter than register.minPasswordLength (${config.settings.register.minPasswordLength} characters)`,
    );
  try {
    const created = await services.accounts.createUser(
      identifier,
      password,
      values.name ? { name: values.name } : {},
      id,
    );
    io.out(created);
    return 0;
  } catch (error) {
    if (error instanceof Problem) {
      io.err(`user:create failed: ${error.detail}`);
      return 1;
    }
    throw error;
  }
};
