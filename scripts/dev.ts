// `npm run dev`: the service run from its TypeScript sources by `tsx watch`, which restarts it when a file it
// imports changes. Without DATABASE_URL it keeps its data in the embedded database under DATA_DIR, as `npm start`.
import { main } from '../src/cli/main.js';

process.exitCode = await main(process.argv.slice(2), process.env);
