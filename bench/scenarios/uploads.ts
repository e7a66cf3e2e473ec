// Uploads: the resumable upload of the file scenarios' file, against a B3 upload taken in turns with it.
import { join } from 'node:path';
import { type Bench, MiB } from '../lib/context.js';
import { auth, compare, failedRow, jsonHeaders, type Servers } from '../lib/measure.js';
import type { Row } from '../lib/report.js';
import type { Step as TransferStep } from '../lib/transfer.js';
import { bestOfEach, type TransferResult, transfer, transferRow, withRss } from '../lib/transfers.js';

const CHUNK = 100 * MiB;

/** What the file scenarios share: the element's file URL, its token and the B3 upload to compare with. */
export interface FileRun {
  fileUrl: string;
  token: string;
  payload: string;
  b3UpName: string;
  b3Upload: () => Promise<TransferResult>;
}

/** The resumable upload against B3 (target 0.6 x), its ratio to B3 with an fsync in its note (`againstDurable`). */
export async function resumableScenario(
  bench: Bench,
  s: Servers,
  run: FileRun,
  name: string,
  againstDurable: (row: Row) => void,
) {
  const upload = resumableUpload(bench, s, run.token);
  const [b3Again, t] = await bestOfEach(bench.settings.fileTries, run.b3Upload, upload.run);
  const base = transferRow(bench, run.b3UpName, s.backend, b3Again!, [[201]]);
  const row = upload.row(t!, name);
  if (row) {
    compare(row, base, 0.6);
    againstDurable(row);
    withRss(row);
    bench.rows.push(row);
  }
}

/**
 * Resumable upload of the same file: POST /<id>/file with `Upload-Complete: ?0` and an empty body starts it
 * (204, `Location: /upload/<id>`), then PATCH /upload/<id> appends 100 MiB chunks at `Upload-Offset`, the last one
 * with `Upload-Complete: ?1` (201). Throughput counts every request of the sequence.
 */
function resumableUpload(bench: Bench, s: Servers, token: string) {
  const { backend } = s;
  const { fileBytes } = bench.settings;
  const chunks = Math.ceil(fileBytes / CHUNK);
  let failed: string | null = null;
  // Each run uploads into a new element.
  const run = async (): Promise<TransferResult> => {
    const location = await newElement(s.trellis.baseUrl, token);
    if (typeof location === 'number') {
      failed = `could not create the element (${location})`;
      return { steps: [], seconds: Infinity, rssGrowthMiB: null };
    }
    return transfer(s.trellis.pid, ...uploadSteps(bench, s.trellis.baseUrl, location, token));
  };
  const row = (t: TransferResult, name: string): Row | null => {
    if (failed !== null) return failedRow(bench, name, backend, failed, '>= 0.6 x B3');
    const first = t.steps[0]!;
    if (
      first.status === 404 ||
      first.status === 405 ||
      (first.status === 204 && !first.location?.startsWith('/upload/'))
    ) {
      bench.log(`${name} on ${backend}: not available (${first.status})`);
      bench.rows.push({
        scenario: name,
        backend,
        status: 'not available',
        target: '>= 0.6 x B3, RSS <= 64 MiB',
        met: null,
        note: `POST /<id>/file with Upload-Complete: ?0 answered ${first.status}`,
      });
      return null;
    }
    return transferRow(bench, name, backend, t, [[204], ...Array.from({ length: chunks - 1 }, () => [204]), [201]]);
  };
  return { run, row };
}

/** A new element's Location, or the status that refused it. */
async function newElement(url: string, token: string): Promise<string | number> {
  const created = await fetch(`${url}/`, {
    method: 'POST',
    headers: jsonHeaders(token),
    body: JSON.stringify({ type: 'Attachment', data: { name: 'resumable' } }),
  });
  await created.arrayBuffer();
  const location = created.headers.get('location');
  return created.status !== 201 || !location ? created.status : location;
}

/** The upload's start, then its chunks; "{location}" is the upload URL the start answers with (transfer.ts). */
function uploadSteps(bench: Bench, url: string, location: string, token: string): TransferStep[] {
  const { fileBytes } = bench.settings;
  const steps: TransferStep[] = [
    { method: 'POST', url: `${url}${location}/file`, headers: { ...auth(token), 'upload-complete': '?0' } },
  ];
  for (let offset = 0; offset < fileBytes; offset += CHUNK) {
    const end = Math.min(fileBytes, offset + CHUNK);
    steps.push({
      method: 'PATCH',
      url: `${url}{location}`,
      headers: {
        ...auth(token),
        'content-type': 'application/partial-upload',
        'upload-offset': String(offset),
        'upload-complete': end === fileBytes ? '?1' : '?0',
      },
      file: join(bench.work, 'payload.bin'),
      start: offset,
      end,
    });
  }
  return steps;
}
