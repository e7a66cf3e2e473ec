// token:revoke: revokes the active tokens matching the filters (the reference implementation's flags).

import { activeTokens, revokeTokens, type TokenFilter } from '../../storage/queries/accounts.js';
import { isoTime, isUuid } from '../../values.js';
import { type CommandIO, commandArgs, type DbCommand } from '../io.js';

const USAGE = `usage: trellis token:revoke [-f] [--dry-run] [-l] [-u USER] [-g GROUP] [-b "YYYY-MM-DD HH:MM"] [-a "YYYY-MM-DD HH:MM"]
               [--issued-with-expiration-date] [--issued-without-expiration-date]`;

/** "YYYY-MM-DD HH:MM" (UTC) or "YYYY-MM-DD". */
function parseDate(value: string): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}))?$/.exec(value.trim());
  if (!m) return null;
  const [year, month, day, hour, minute] = [+m[1]!, +m[2]!, +m[3]!, +(m[4] ?? 0), +(m[5] ?? 0)];
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute));
  // Date.UTC rolls a 13th month, a 45th day or 99:99 over into a later date; a date nobody typed must not decide
  // what is revoked.
  const exact =
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute;
  return exact ? date : null;
}

const OPTIONS = {
  force: { type: 'boolean', short: 'f' },
  'dry-run': { type: 'boolean' },
  'list-all-affected-tokens': { type: 'boolean', short: 'l' },
  user: { type: 'string', short: 'u' },
  group: { type: 'string', short: 'g' },
  'issued-before': { type: 'string', short: 'b' },
  'issued-after': { type: 'string', short: 'a' },
  'issued-with-expiration-date': { type: 'boolean' },
  'issued-without-expiration-date': { type: 'boolean' },
} as const;

type Values = NonNullable<ReturnType<typeof commandArgs<typeof OPTIONS>>>['values'];
type Context = Parameters<DbCommand>[0];

/** The filter the flags describe, or the exit code once what is wrong with them has been said. */
async function tokenFilter({ services }: Context, values: Values, io: CommandIO): Promise<TokenFilter | number> {
  const filter: TokenFilter = { now: services.clock.now() };
  if (values.user !== undefined) {
    const id = await services.accounts.findUser(values.user);
    if (!id) {
      io.err(`no user ${values.user}`);
      return 1;
    }
    filter.userIds = [id];
  }
  if (values.group !== undefined) {
    if (!isUuid(values.group)) {
      io.err('--group must be a UUID');
      return 2;
    }
    filter.groupId = values.group.toLowerCase();
  }
  for (const [flag, key] of [
    ['issued-before', 'issuedBefore'],
    ['issued-after', 'issuedAfter'],
  ] as const) {
    const raw = values[flag];
    if (raw === undefined) continue;
    const date = parseDate(raw);
    if (!date) {
      io.err(`--${flag} must be "YYYY-MM-DD HH:MM" (UTC)`);
      return 2;
    }
    filter[key] = date;
  }
  if (values['issued-with-expiration-date'] && values['issued-without-expiration-date']) {
    io.err('--issued-with-expiration-date and --issued-without-expiration-date exclude each other');
    return 2;
  }
  filter.withExpirationDate = values['issued-with-expiration-date'];
  filter.withoutExpirationDate = values['issued-without-expiration-date'];
  return filter;
}

export const tokenRevoke: DbCommand = async (ctx, args, io) => {
  const { services } = ctx;
  const parsed = commandArgs(args, OPTIONS, USAGE, io);
  if (parsed === null) return 2;
  const { values, positionals } = parsed;
  if (positionals.length > 0) {
    io.err(`unexpected argument ${positionals[0]} (quote a date with a time: -b "YYYY-MM-DD HH:MM")\n${USAGE}`);
    return 2;
  }
  const filter = await tokenFilter(ctx, values, io);
  if (typeof filter === 'number') return filter;

  const tokens = await activeTokens(services.db, filter);
  io.out(`${tokens.length} active token(s) match.`);
  if (values['list-all-affected-tokens'] || values['dry-run'])
    for (const t of tokens)
      io.out(
        `  ${t.id}  user ${t.identifier} (${t.user_id})  issued ${isoTime(t.issued)}  expires ${t.expires ? isoTime(t.expires) : 'never'}`,
      );
  if (values['dry-run']) {
    io.out('Dry run: nothing was revoked.');
    return 0;
  }
  if (tokens.length === 0) return 0;
  if (!values.force && io.interactive && !(await io.confirm(`Revoke ${tokens.length} token(s)?`))) {
    io.out('Aborted: nothing was revoked.');
    return 1;
  }
  const revoked = await services.db.transaction((tx) =>
    revokeTokens(
      tx,
      tokens.map((t) => t.id),
      services.clock.now(),
    ),
  );
  io.out(`Revoked ${revoked} token(s).`);
  return 0;
};
