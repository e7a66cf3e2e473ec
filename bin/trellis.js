#!/usr/bin/env node
// The CLI entry point (package.json "bin"). The TypeScript sources are compiled to dist/ by `npm ci` (prepare)
// and by `npm start`.
import { main } from '../dist/cli/main.js';

process.exitCode = await main(process.argv.slice(2), process.env);
