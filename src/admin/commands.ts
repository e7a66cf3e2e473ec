// What a command run over the admin socket gets: its terminal (print, ask yes/no) and the server's services. The CLI
// defines the commands (cli/commands); the server runs them with its own database when the CLI hands them over.
import type { Config } from '../config/schema.js';
import type { Services } from '../services.js';

export interface CommandIO {
  out(line: string): void;
  err(line: string): void;
  /** Asks a yes/no question; false when there is no terminal to ask. */
  confirm(question: string): Promise<boolean>;
  readonly interactive: boolean;
  /** The caller's working directory: relative paths in arguments are resolved against it, also inside a server. */
  readonly cwd: string;
}

interface CommandContext {
  config: Config;
  services: Services;
}

/** A command that needs the database. Returns the process exit code. */
export type DbCommand = (ctx: CommandContext, args: string[], io: CommandIO) => Promise<number>;
