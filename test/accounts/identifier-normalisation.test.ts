// Identifiers compare in Unicode NFC (e-mail addresses also without case): `josé` typed as one code point (U+00E9)
// and as e + U+0301 is one identifier for registration, log-in, tokens, password changes and user:create. Accounts
// that collided before (written by an earlier version, or brought by a backup) are kept, marked, and listed by
// `trellis user:check-identifiers`, directly on PostgreSQL and through a running embedded server's admin socket.

import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dbCommands } from '../../src/cli/commands/index.js';
import type { CommandIO } from '../../src/cli/io.js';
import { hashPassword } from '../../src/domain/accounts/passwords.js';
import type { Db } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';
import { openPglite } from '../../src/storage/pglite.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { identifierCollisions, userByIdentifier } from '../../src/storage/queries/accounts.js';
import { insertUserRows } from '../../src/storage/queries/backup.js';
import { migrations } from '../../src/storage/schema/index.js';
import {
  type BackendName,
  backendsUnderTest,
  describeBackends,
  freshDatabase,
  type Harness,
  scratchPostgresDatabase,
} from '../helpers/harness.js';
import { runCli, serveInstance } from '../helpers/process.js';

/** `josé` with a precomposed é, and with e followed by a combining acute accent. */
const NFC = 'jos\u00e9';
const NFD = 'jose\u0301';

const register = (h: Harness, identifier: string, password = 'first-secret') =>
  h.request('POST', '/register', { body: { type: 'User', uniqueUserIdentifier: identifier, password } });
const login = (h: Harness, identifier: string, password: string) =>
  h.request('POST', '/token', { body: { type: 'Token', uniqueUserIdentifier: identifier, password } });

function captureIO(): CommandIO & { lines: { out: string[]; err: string[] } } {
  const lines = { out: [] as string[], err: [] as string[] };
  return {
    lines,
    out: (l) => lines.out.push(l),
    err: (l) => lines.err.push(l),
    confirm: async () => false,
    interactive: false,
    cwd: process.cwd(),
  };
}

/** POST /token from a given local address (the login throttle counts per address too). */
function loginFrom(h: Harness, from: string, identifier: string, password: string): Promise<number> {
  const { hostname, port } = new URL(h.url);
  const payload = JSON.stringify({ type: 'Token', uniqueUserIdentifier: identifier, password });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: hostname,
        port,
        path: '/token',
        method: 'POST',
        localAddress: from,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const usersCalled = async (db: Db, ...identifiers: string[]) =>
  (
    await db.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE identifier = ANY($1::text[])', [
      identifiers,
    ])
  ).rows[0]!.n;

describeBackends('identifiers compared in Unicode NFC', (h) => {
  it('registers one account for the NFC and the NFD spelling, with or without an @', async () => {
    for (const [first, second] of [
      [NFC, NFD],
      [`${NFD}@nfc.dev`, `${NFC}@nfc.dev`],
      // e-mail addresses also without case
      [`${NFC}@case.dev`, `JOSE\u0301@Case.dev`],
    ] as const) {
      const created = await register(h(), first);
      expect(created.status).toBe(201);
      const again = await register(h(), second, 'second-secret');
      expect(again.status).toBe(400);
      expect(again.json.type).toBe(`${h().url}/error/400/reserved-identifier`);
      expect(again.headers.get('location')).toBeNull();
      expect(await usersCalled(h().db, first, second)).toBe(1);
      // The account keeps the spelling it registered with.
      const id = created.headers.get('location')!.slice(1);
      const token = (await login(h(), first, 'first-secret')).json.token;
      const me = await h().request('GET', '/me', { token });
      expect(me.json.id).toBe(id);
      expect(me.json.data.email).toBe(first);
    }
    // Identifiers without an @ keep their case: these are two accounts, as before.
    expect((await register(h(), 'Zoe-name')).status).toBe(201);
    expect((await register(h(), 'zoe-name')).status).toBe(201);
  });

  it('logs in, changes the password and resolves user:create with either spelling', async () => {
    const created = await register(h(), `${NFD}@either.dev`);
    const id = created.headers.get('location')!.slice(1);
    const token = await login(h(), `${NFC}@Either.dev`, 'first-secret');
    expect(token.status).toBe(201);
    expect((await h().request('GET', '/me', { token: token.json.token })).json.id).toBe(id);
    const changed = await h().request('POST', '/change-password', {
      body: {
        type: 'ActionChangePassword',
        uniqueUserIdentifier: `${NFC}@either.dev`,
        currentPassword: 'first-secret',
        newPassword: 'second-secret',
      },
    });
    expect(changed.status).toBe(204);
    expect((await login(h(), `${NFD}@either.dev`, 'first-secret')).status).toBe(401);
    expect((await login(h(), `${NFD}@either.dev`, 'second-secret')).status).toBe(201);
    // user:create refuses the other spelling too.
    const io = captureIO();
    const code = await dbCommands['user:create']!(
      { config: h().config, services: h().services },
      [`${NFC}@either.dev`, 'third-secret'],
      io,
    );
    expect(code).toBe(1);
    expect(io.lines.err).toEqual(['user:create failed: The identifier is already in use.']);
    expect(await usersCalled(h().db, `${NFC}@either.dev`, `${NFD}@either.dev`)).toBe(1);
    // token:revoke --user finds the account by either spelling.
    expect(await h().services.accounts.findUser(`${NFC}@either.dev`)).toBe(id);
  });

  it('counts failed log-ins of every spelling on one identifier', async () => {
    expect((await register(h(), `${NFC}@throttle.dev`)).status).toBe(201);
    for (let i = 0; i < 5; i++)
      expect(await loginFrom(h(), `127.0.9.${i + 1}`, `${NFD}@throttle.dev`, 'wrong')).toBe(401);
    expect(await loginFrom(h(), '127.0.9.9', `${NFC}@throttle.dev`, 'first-secret')).toBe(429);
  });

  it('user:check-identifiers finds nothing where nothing collides', async () => {
    const io = captureIO();
    expect(await dbCommands['user:check-identifiers']!({ config: h().config, services: h().services }, [], io)).toBe(0);
    expect(io.lines.out).toEqual(['No two accounts share an identifier.']);
    expect(await dbCommands['user:check-identifiers']!({ config: h().config, services: h().services }, ['x'], io)).toBe(
      2,
    );
  });
});

const ID = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/**
 * Accounts a database may hold from before the rule: two spellings of one address (and an old case duplicate of one
 * of them, as backup:load marked those), two of a name, and one on its own.
 */
const EARLIER_USERS = [
  { id: ID(3), identifier: `${NFC}@old.dev`, case_duplicate: false },
  { id: ID(2), identifier: `${NFD}@old.dev`, case_duplicate: false },
  { id: ID(1), identifier: `JOSE\u0301@OLD.DEV`, case_duplicate: true },
  { id: ID(5), identifier: 'zo\u00eb', case_duplicate: false },
  { id: ID(4), identifier: 'zoe\u0308', case_duplicate: false },
  { id: ID(6), identifier: 'solo@old.dev', case_duplicate: false },
];

/** Writes EARLIER_USERS into a database that has the baseline schema only, each with its password. */
async function writeEarlierUsers(db: Db): Promise<void> {
  await migrate(db, migrations.slice(0, 1));
  for (const [i, u] of EARLIER_USERS.entries()) {
    await db.query(`INSERT INTO elements (id, type, data, created, updated) VALUES ($1, 'User', $2, now(), now())`, [
      u.id,
      { email: u.identifier },
    ]);
    await db.query('INSERT INTO users (id, identifier, password_hash, case_duplicate) VALUES ($1, $2, $3, $4)', [
      u.id,
      u.identifier,
      await hashPassword(`secret-${i}`),
      u.case_duplicate,
    ]);
  }
}

/** A database with the baseline schema only, for `body`; PGlite in `dataDir/db` as the CLI opens it. */
async function withEarlierDatabase(
  backend: BackendName,
  dataDir: string,
  body: (db: Db, env: Record<string, string>) => Promise<void>,
): Promise<void> {
  if (backend === 'pglite') {
    const db = await openPglite(join(dataDir, 'db'));
    try {
      await body(db, { DATA_DIR: dataDir });
    } finally {
      await db.close();
    }
    return;
  }
  const scratch = await scratchPostgresDatabase();
  const db = await openPostgres(scratch.url, 2);
  try {
    await body(db, { DATA_DIR: dataDir, DATABASE_URL: scratch.url });
  } finally {
    await db.close();
    await scratch.drop();
  }
}

const EXPECTED_LISTING = [
  `"jos\\u00e9@old.dev": 3 accounts`,
  `  ${ID(2)}  "jose\\u0301@old.dev"  logs in with any spelling`,
  `  ${ID(1)}  "JOSE\\u0301@OLD.DEV"  logs in with this exact spelling only`,
  `  ${ID(3)}  "jos\\u00e9@old.dev"  logs in with this exact spelling only`,
  `"zo\\u00eb": 2 accounts`,
  `  ${ID(4)}  "zoe\\u0308"  logs in with any spelling`,
  `  ${ID(5)}  "zo\\u00eb"  logs in with this exact spelling only`,
];

for (const backend of backendsUnderTest()) {
  describe(`identifiers that collided before the rule [${backend}]`, () => {
    it('the migration keeps them all, marks all but one, and user:check-identifiers lists them', async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'trellis-identifiers-'));
      try {
        await withEarlierDatabase(backend, dataDir, async (db) => {
          await writeEarlierUsers(db);
          expect(await migrate(db)).toEqual(migrations.slice(1).map((m) => m.version));
          const { rows } = await db.query<{ id: string; case_duplicate: boolean }>(
            'SELECT id, case_duplicate FROM users ORDER BY id',
          );
          // In each group the smallest id that was not a duplicate keeps the identifier.
          expect(rows).toEqual([
            { id: ID(1), case_duplicate: true },
            { id: ID(2), case_duplicate: false },
            { id: ID(3), case_duplicate: true },
            { id: ID(4), case_duplicate: false },
            { id: ID(5), case_duplicate: true },
            { id: ID(6), case_duplicate: false },
          ]);
          // Each logs in with its exact spelling; any other spelling names the one that keeps the identifier.
          for (const u of EARLIER_USERS) expect((await userByIdentifier(db, u.identifier))?.id).toBe(u.id);
          expect((await userByIdentifier(db, `${NFC}@Old.dev`))?.id).toBe(ID(2));
          expect(await userByIdentifier(db, 'ZOE\u0308')).toBeNull();
          // No further spelling can be added.
          await db.query(`INSERT INTO elements (id, type, created, updated) VALUES ($1, 'User', now(), now())`, [
            ID(7),
          ]);
          for (const spelling of [`${NFD}@OLD.dev`, 'Jos\u00e9@old.dev'])
            await expect(
              db.query('INSERT INTO users (id, identifier) VALUES ($1, $2)', [ID(7), spelling]),
            ).rejects.toMatchObject({ code: '23505' });
          expect((await identifierCollisions(db)).map((c) => c.id)).toEqual([ID(2), ID(1), ID(3), ID(4), ID(5)]);
        });
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    });

    it('backup:load marks another spelling of a loaded identifier', async () => {
      const { db, dispose } = await freshDatabase(backend);
      try {
        const hash = await hashPassword('whatever-secret');
        const users = [
          { id: ID(9), identifier: `${NFD}@backup.dev`, password_hash: hash },
          { id: ID(8), identifier: `${NFC}@Backup.dev`, password_hash: hash },
          { id: ID(10), identifier: 'zo\u00eb-b', password_hash: hash },
        ];
        for (const { id } of users)
          await db.query(`INSERT INTO elements (id, type, created, updated) VALUES ($1, 'User', now(), now())`, [id]);
        await insertUserRows(db, users);
        // A later batch of the same load: another spelling of a stored one.
        await db.query(`INSERT INTO elements (id, type, created, updated) VALUES ($1, 'User', now(), now())`, [ID(11)]);
        await insertUserRows(db, [{ id: ID(11), identifier: 'zoe\u0308-b', password_hash: hash }]);
        const { rows } = await db.query<{ id: string; case_duplicate: boolean }>(
          'SELECT id, case_duplicate FROM users ORDER BY id',
        );
        expect(rows).toEqual([
          { id: ID(8), case_duplicate: false },
          { id: ID(9), case_duplicate: true },
          { id: ID(10), case_duplicate: false },
          { id: ID(11), case_duplicate: true },
        ]);
      } finally {
        await dispose();
      }
    });

    it(backend === 'pglite'
      ? 'a server starts on such a database, and user:check-identifiers runs through its admin socket'
      : 'user:check-identifiers runs on such a database with DATABASE_URL', async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'trellis-identifiers-cli-'));
      try {
        if (backend === 'pglite') {
          const db = await openPglite(join(dataDir, 'db'));
          await writeEarlierUsers(db);
          await db.close();
          const server = await serveInstance(dataDir, {});
          try {
            const check = await runCli(['user:check-identifiers'], { DATA_DIR: dataDir });
            expect(check.stderr.trim()).toBe(
              '5 accounts share 2 identifier(s) (compared in Unicode NFC, e-mail addresses without case)',
            );
            expect(check.stdout.trim().split('\n')).toEqual(EXPECTED_LISTING);
            expect(check.code).toBe(1);
            // The server lets every account log in, each with its own spelling.
            for (const [i, u] of EARLIER_USERS.entries()) {
              const res = await fetch(`${server.url}/token`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ type: 'Token', uniqueUserIdentifier: u.identifier, password: `secret-${i}` }),
              });
              expect(res.status).toBe(201);
            }
          } finally {
            server.kill('SIGTERM');
            await server.done;
          }
          return;
        }
        await withEarlierDatabase(backend, dataDir, async (db, env) => {
          await writeEarlierUsers(db);
          const check = await runCli(['user:check-identifiers'], env);
          expect(check.stderr.trim()).toBe(
            '5 accounts share 2 identifier(s) (compared in Unicode NFC, e-mail addresses without case)',
          );
          expect(check.stdout.trim().split('\n')).toEqual(EXPECTED_LISTING);
          expect(check.code).toBe(1);
          // Once one account of each identifier is left, the check is clean.
          await db.query('DELETE FROM elements WHERE id = ANY($1::uuid[])', [[ID(1), ID(3), ID(5)]]);
          const clean = await runCli(['user:check-identifiers'], env);
          expect(clean).toMatchObject({ code: 0, stdout: 'No two accounts share an identifier.\n' });
        });
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    }, 180_000);
  });
}
