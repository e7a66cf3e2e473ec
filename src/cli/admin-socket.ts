// PGlite allows one process per data directory. While the embedded server runs, CLI commands are handed to it over
// a unix socket inside DATA_DIR (mode 0600, so only the owner of the data can use it) and run in the server with
// its database. Protocol: newline-delimited JSON. Client: {command, args, interactive}, later {answer}.
// Server: {out} | {err} | {confirm} | {exit}. `cwd` is the CLI's working directory, for relative paths.

import { createHash } from 'node:crypto';
import { chmod, rm } from 'node:fs/promises';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Services } from '../services.js';
import { dbCommands } from './commands/index.js';
import type { CommandIO } from './io.js';

/**
 * DATA_DIR/admin.sock, or, when that path is too long for a unix socket (about 104 bytes on some systems), a path in
 * the temp directory derived from DATA_DIR so that the CLI finds the same one.
 */
function adminSocketPath(dataDir: string): string {
  const path = join(dataDir, 'admin.sock');
  if (Buffer.byteLength(path) < 100) return path;
  return join(tmpdir(), `trellis-${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}.sock`);
}

function send(socket: Socket, message: object) {
  socket.write(`${JSON.stringify(message)}\n`);
}

export async function startAdminSocket(config: Config, services: Services, logger: Logger) {
  const path = adminSocketPath(config.runtime.dataDir);
  await rm(path, { force: true });
  const server = createServer((socket) => {
    const lines = createInterface({ input: socket });
    let pendingAnswer: ((answer: boolean) => void) | null = null;
    let started = false;
    lines.on('line', (line) => {
      let message: { command?: string; args?: string[]; interactive?: boolean; cwd?: string; answer?: boolean };
      try {
        message = JSON.parse(line);
      } catch {
        return socket.destroy();
      }
      if (pendingAnswer && typeof message.answer === 'boolean') {
        const resolve = pendingAnswer;
        pendingAnswer = null;
        return resolve(message.answer);
      }
      if (started) return;
      started = true;
      const command = dbCommands[message.command ?? ''];
      if (!command) {
        send(socket, { err: `unknown command ${message.command}` });
        return send(socket, { exit: 2 });
      }
      const io: CommandIO = {
        out: (text) => send(socket, { out: text }),
        err: (text) => send(socket, { err: text }),
        interactive: message.interactive === true,
        cwd: typeof message.cwd === 'string' ? message.cwd : config.runtime.dataDir,
        confirm: (question) =>
          new Promise<boolean>((resolve) => {
            if (message.interactive !== true) return resolve(false);
            pendingAnswer = resolve;
            send(socket, { confirm: question });
          }),
      };
      command({ config, services }, message.args ?? [], io)
        .then((code) => send(socket, { exit: code }))
        .catch((error: Error) => {
          logger.error({ err: error, command: message.command }, 'admin command failed');
          send(socket, { err: error.message });
          send(socket, { exit: 1 });
        });
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  await chmod(path, 0o600);
  return {
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The server went away while it ran a command for the CLI (it stopped, or was killed). */
export class ServerGoneError extends Error {}

/** Runs a command inside the server that owns DATA_DIR. Resolves with the exit code. */
export function runViaServer(dataDir: string, command: string, args: string[], io: CommandIO): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(adminSocketPath(dataDir));
    let exited = false;
    socket.on('error', reject);
    socket.on('connect', () => send(socket, { command, args, interactive: io.interactive, cwd: io.cwd }));
    const lines = createInterface({ input: socket });
    // readline repeats the socket's errors, which the socket's own listener above already reports.
    lines.on('error', () => {});
    lines.on('line', (line) => {
      const message = JSON.parse(line) as { out?: string; err?: string; confirm?: string; exit?: number };
      if (message.out !== undefined) io.out(message.out);
      if (message.err !== undefined) io.err(message.err);
      if (message.confirm !== undefined) void io.confirm(message.confirm).then((answer) => send(socket, { answer }));
      if (message.exit !== undefined) {
        exited = true;
        socket.end();
        resolve(message.exit);
      }
    });
    socket.on('close', () => {
      if (!exited)
        reject(
          new ServerGoneError(
            'the server closed the admin connection before the command finished (did it stop?); run the command again once it is up',
          ),
        );
    });
  });
}
