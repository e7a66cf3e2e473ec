// A new embedded database starts as a copy of a template made once at install (`npm ci` runs scripts/build.js),
// because PostgreSQL's initdb takes several seconds in WASM and a copy of its result a fraction of that. The
// template is only what initdb makes, nothing of Trellis's: the migrations run on the copy as on any new database
// (migrate.ts), so a template is never out of date with the schema. It lives beside the installed PGlite (in
// node_modules/.cache), named by PGlite's version, so a PGlite upgrade never opens a template another version made.
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createPglite } from './pglite.js';

/** The installed PGlite's package folder (node_modules/@electric-sql/pglite). */
function pglitePackage(): string {
  // The package's entry point is in its dist/ folder.
  return dirname(dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite')));
}

/** Where the template for the installed PGlite is (whether or not it has been made). */
export function templateDir(): string {
  const pkg = pglitePackage();
  const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string };
  return join(pkg, '..', '..', '.cache', 'trellis', `pglite-${version}`);
}

/**
 * Makes the template unless it exists: initdb in a folder of its own, closed cleanly (a shutdown checkpoint, so a
 * copy opens without recovery), then renamed into place so that a template is never seen half made. True when made.
 */
export async function makeTemplate(dir = templateDir()): Promise<boolean> {
  if (existsSync(join(dir, 'PG_VERSION'))) return false;
  const making = `${dir}.making-${process.pid}`;
  await rm(making, { recursive: true, force: true });
  await mkdir(dirname(dir), { recursive: true });
  try {
    await (await createPglite(making)).close();
    // Another build made one meanwhile: it is as good, and a start may be copying it.
    if (existsSync(join(dir, 'PG_VERSION'))) return false;
    await rm(dir, { recursive: true, force: true });
    await rename(making, dir);
  } finally {
    await rm(making, { recursive: true, force: true });
  }
  return true;
}

/**
 * Before the embedded database in `dataDir` opens: when the folder does not exist yet and a template does, the
 * folder becomes a copy of it, made under another name and renamed, so that a copy cut short (a crash, a full disk)
 * is never taken for a database. Any failure leaves the folder absent, and PGlite makes the database itself, failing
 * as it would have (a full disk is then told by PostgreSQL's own words, pglite.ts). True when it copied.
 * The caller holds DATA_DIR (datadir-lock.ts): nobody else copies meanwhile.
 */
export async function seedFromTemplate(dataDir: string, template = templateDir()): Promise<boolean> {
  if (existsSync(dataDir) || !existsSync(join(template, 'PG_VERSION'))) return false;
  // Also what a start that crashed while copying left.
  const copy = `${dataDir}.seeding`;
  try {
    await rm(copy, { recursive: true, force: true });
    await cp(template, copy, { recursive: true, errorOnExist: true, force: false });
    await rename(copy, dataDir);
    return true;
  } catch {
    return false;
  } finally {
    await rm(copy, { recursive: true, force: true }).catch(() => {});
  }
}
