// The FileStore port (domain/files/ports.ts) in SQL: storage/queries/files.ts and setFile of elements.ts.
import type { FileStore } from '../domain/files/ports.js';
import { setFile } from './queries/elements.js';
import * as sql from './queries/files.js';
import { queryable } from './transactions.js';

export const sqlFileStore: FileStore = {
  lockForDownload: (tx, id) => sql.lockForDownload(queryable(tx), id),
  setFile: (tx, id, file, at) => setFile(queryable(tx), id, file, at),
  referencedBlobKeys: (tx, ids) => sql.referencedBlobKeys(queryable(tx), ids),
  fileTags: (tx, ids) => sql.fileTags(queryable(tx), ids),
  lockFileForSweep: (tx, id) => sql.lockFileForSweep(queryable(tx), id),
};
