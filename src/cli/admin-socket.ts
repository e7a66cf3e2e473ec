// The CLI's side of the admin socket (admin/protocol.ts): hands a command to the running embedded server.
import { createConnection } from 'node:net';
import { createInterface } from 'node:readline';
import { adminSocketPath, send } from '../admin/protocol.js';
import type { CommandIO } from './io.js';

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
