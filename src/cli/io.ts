// What a CLI command may do with its terminal: print, and ask a yes/no question. The same command runs in the CLI
// process or, beside a running embedded server, inside the server with this IO carried over the admin socket.
import { createInterface } from 'node:readline/promises';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { CommandIO } from '../admin/commands.js';

export type { CommandIO, DbCommand } from '../admin/commands.js';

export function processIO(): CommandIO {
  const interactive = !!process.stdin.isTTY && !!process.stdout.isTTY;
  return {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    interactive,
    cwd: process.cwd(),
    async confirm(question) {
      if (!interactive) return false;
      const rl = createInterface({ input: process.stdin, output: process.stdout });
      try {
        return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
      } finally {
        rl.close();
      }
    },
  };
}

/**
 * A command's arguments parsed by node's parseArgs, or null once an unknown option or a missing value has been
 * reported with the command's usage (the command then exits 2): the same message whether it runs here or in a
 * server, never a stack trace.
 */
export function commandArgs<T extends ParseArgsConfig['options']>(
  args: string[],
  options: T,
  usage: string,
  io: CommandIO,
): ReturnType<typeof parseArgs<{ args: string[]; options: T; allowPositionals: true }>> | null {
  try {
    return parseArgs({ args, options, allowPositionals: true });
  } catch (error) {
    io.err(`${(error as Error).message}\n${usage}`);
    return null;
  }
}
