// Finds Chromium for the browser tests (playwright-core drives it; no browser is downloaded by a test tool) and, as
// root on Debian, installs Debian's `chromium` package when it is missing.

import { existsSync } from 'node:fs';
import { canInstallPackages, installDebianPackages, type Log } from './debian-packages.js';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

const find = (): string | null => {
  const chosen = process.env.TRELLIS_CHROMIUM;
  if (chosen) return existsSync(chosen) ? chosen : null;
  return CANDIDATES.find((path) => existsSync(path)) ?? null;
};

/** The Chromium executable, installed first when possible; null (with the reason logged) when there is none. */
export async function ensureChromium(log: Log): Promise<string | null> {
  const found = find();
  if (found) return found;
  if (process.env.TRELLIS_CHROMIUM) {
    log(`TRELLIS_CHROMIUM=${process.env.TRELLIS_CHROMIUM} does not exist; the browser tests will fail`);
    return null;
  }
  if (!canInstallPackages()) {
    log('Chromium not found and cannot be installed here (needs root and apt-get); the browser tests will fail');
    return null;
  }
  await installDebianPackages(['chromium'], log);
  return find();
}
