// The admin socket's protocol, shared by the server that listens (admin/server.ts) and the CLI that connects
// (cli/admin-socket.ts). PGlite allows one process per data directory. While the embedded server runs, CLI commands
// are handed to it over a unix socket inside DATA_DIR (mode 0600, so only the owner of the data can use it) and run
// in the server with its database. Protocol: newline-delimited JSON. Client: {command, args, interactive}, later
// {answer}. Server: {out} | {err} | {confirm} | {exit}. `cwd` is the CLI's working directory, for relative paths.
import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * DATA_DIR/admin.sock, or, when that path is too long for a unix socket (about 104 bytes on some systems), a path in
 * the temp directory derived from DATA_DIR so that the CLI finds the same one.
 */
export function adminSocketPath(dataDir: string): string {
  const path = join(dataDir, 'admin.sock');
  if (Buffer.byteLength(path) < 100) return path;
  return join(tmpdir(), `trellis-${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}.sock`);
}

export function send(socket: Socket, message: object) {
  socket.write(`${JSON.stringify(message)}\n`);
}
