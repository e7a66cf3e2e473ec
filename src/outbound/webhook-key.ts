// The key that seals webhook secrets (domain/webhooks/secrets.ts) when TRELLIS_WEBHOOK_KEY does not give one: a
// file in DATA_DIR, made at the first need, readable by the service's user only. Several instances on one database
// must share one key, so they are given TRELLIS_WEBHOOK_KEY (docs/webhooks.md).
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const WEBHOOK_KEY_FILE = 'webhook.key';

export async function webhookKeyFrom(dataDir: string): Promise<Buffer> {
  const path = join(dataDir, WEBHOOK_KEY_FILE);
  try {
    return Buffer.from((await readFile(path, 'utf8')).trim(), 'base64');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dataDir, { recursive: true });
  // Written whole under another name, then linked into place: of two processes making it at once, one links and the
  // other reads what it linked, never a file half written.
  const draft = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(draft, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  try {
    await link(draft, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await rm(draft, { force: true });
  }
  return Buffer.from((await readFile(path, 'utf8')).trim(), 'base64');
}
