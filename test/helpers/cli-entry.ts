// Runs the CLI from the TypeScript sources (what bin/trellis.js does from dist/), for tests that spawn processes.
import { main } from '../../src/cli/main.js';

process.exitCode = await main(process.argv.slice(2), process.env);
