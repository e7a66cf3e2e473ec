// The server side of the admin socket (protocol.ts): runs the commands it is given with the server's own database.
import { chmod, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Services } from '../services.js';
import type { CommandIO, DbCommand } from './commands.js';
import { adminSocketPath, send } from './protocol.js';

export async function startAdminSocket(
  config: Config,
  services: Services,
  commands: Readonly<Record<string, DbCommand>>,
  logger: Logger,
) {
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
      const name = message.command ?? '';
      const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
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
