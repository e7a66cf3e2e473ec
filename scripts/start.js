// `npm start [-- args]`: `trellis serve` from the compiled dist/, after building whatever of dist/ and explorer/dist
// is out of date (scripts/build.js). When nothing changed that is a read of the sources, and the service runs in
// this same process, so a start costs about what the built service's own start does.
import { build } from './build.js';

try {
  await build({ template: false });
} catch (error) {
  process.stderr.write(`[build] ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
// Imported only now, since the build above may just have written it; a computed specifier, so that the type check
// does not follow it into dist/.
const compiled = new URL('../dist/cli/main.js', import.meta.url).href;
const { main } = /** @type {typeof import('../src/cli/main.js')} */ (await import(compiled));
process.exitCode = await main(['serve', ...process.argv.slice(2)], process.env);
