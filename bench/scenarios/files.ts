// Files: a direct upload (PUT /<id>/file, Upload-Complete: ?1) and a download of one large file, each right after
// the matching B3 transfer (plain fs streams), then the resumable upload (uploads.ts). Best of settings.fileTries
// each; the targets hold a throughput ratio and an RSS ceiling.
import { join } from 'node:path';
import { type Bench, fileLabel, type Settings } from '../lib/context.js';
import { auth, compare, failedRow, jsonHeaders, listBaseline, type Servers } from '../lib/measure.js';
import type { Row } from '../lib/report.js';
import { bestOfEach, transfer, transferRow, withRss } from '../lib/transfers.js';
import { type FileRun, resumableScenario } from './uploads.js';

/** B3 upload, B3 download, direct upload, download and resumable upload, in that order. */
export const fileScenarioNames = (settings: Settings) => [
  `B3 upload ${fileLabel(settings)}`,
  `B3 download ${fileLabel(settings)}`,
  `upload ${fileLabel(settings)} direct`,
  `download ${fileLabel(settings)}`,
  `upload ${fileLabel(settings)} resumable, 100 MiB chunks`,
];

const TARGET = '>= 0.7 x B3';

export async function fileScenarios(bench: Bench, s: Servers) {
  const run = await fileElement(bench, s);
  if (!run) return;
  const againstDurable = await directUpload(bench, s, run);
  await download(bench, s, run);
  const [, , , , resumableName] = fileScenarioNames(bench.settings) as [string, string, string, string, string];
  if (bench.wanted(resumableName)) await resumableScenario(bench, s, run, resumableName, againstDurable);
}

/**
 * Creates the element that gets the file and checks that the file endpoint is there; null (with the rows said)
 * when it is not.
 */
async function fileElement(bench: Bench, s: Servers): Promise<FileRun | null> {
  const { backend, ds } = s;
  const url = s.trellis.baseUrl;
  const token = ds.users[0]!.token;
  const [b3UpName, , upName, downName, resumableName] = fileScenarioNames(bench.settings) as [
    string,
    string,
    string,
    string,
    string,
  ];
  const created = await fetch(`${url}/`, {
    method: 'POST',
    headers: jsonHeaders(token),
    body: JSON.stringify({ type: 'Attachment', data: { name: 'bench' } }),
  });
  await created.arrayBuffer();
  const location = created.headers.get('location');
  if (created.status !== 201 || !location) {
    bench.rows.push(failedRow(bench, upName, backend, `could not create the element (${created.status})`, TARGET));
    return null;
  }
  const fileUrl = `${url}${location}/file`;
  // The file endpoints may not exist yet in this tree: a 404/405 on an element we own means "no such endpoint".
  const probe = await fetch(fileUrl, { method: 'PUT', headers: fileHeaders(token), body: 'probe' });
  const probeBody = await probe.text();
  if (probe.status === 404 || probe.status === 405) {
    for (const name of [upName, downName, resumableName]) {
      bench.log(`${name} on ${backend}: not available (${probe.status})`);
      bench.rows.push({
        scenario: name,
        backend,
        status: 'not available',
        target: `${name === resumableName ? '>= 0.6 x B3' : TARGET}, RSS <= 64 MiB`,
        met: null,
        note: `PUT /<id>/file answered ${probe.status}`,
      });
    }
    return null;
  }
  if (probe.status !== 201 && probe.status !== 204) {
    const note = `probe PUT /<id>/file answered ${probe.status}: ${probeBody.slice(0, 200)}`;
    bench.rows.push(failedRow(bench, upName, backend, note, TARGET));
    return null;
  }
  const payload = join(bench.work, 'payload.bin');
  const b3Upload = () =>
    transfer(s.baselines.pid, {
      method: 'PUT',
      url: `${s.baselines.baseUrl}/b3/file`,
      headers: { 'content-type': 'application/octet-stream' },
      file: payload,
    });
  return { fileUrl, token, payload, b3UpName, b3Upload };
}

const fileHeaders = (token: string) => ({
  ...auth(token),
  'content-type': 'application/octet-stream',
  'upload-complete': '?1',
});

/**
 * The direct upload against B3, then B3 with an fsync: Trellis makes the file durable (fsync) before it answers;
 * plain B3 leaves it in the page cache. The same baseline with an fsync shows how much of the difference that is.
 */
async function directUpload(bench: Bench, s: Servers, run: FileRun) {
  const { backend } = s;
  const { settings } = bench;
  const [b3UpName, , upName] = fileScenarioNames(settings) as [string, string, string];
  const [b3Up, direct] = await bestOfEach(settings.fileTries, run.b3Upload, () =>
    transfer(s.trellis.pid, { method: 'PUT', url: run.fileUrl, headers: fileHeaders(run.token), file: run.payload }),
  );
  const base = transferRow(bench, b3UpName, backend, b3Up!, [[201]]);
  listBaseline(bench, base, backend);
  const up = transferRow(bench, upName, backend, direct!, [[201, 204]]);
  compare(up, base, 0.7);
  withRss(up);
  bench.rows.push(up);
  const [synced] = await bestOfEach(settings.fileTries, () =>
    transfer(s.baselines.pid, {
      method: 'PUT',
      url: `${s.baselines.baseUrl}/b3/file?fsync=1`,
      headers: { 'content-type': 'application/octet-stream' },
      file: run.payload,
    }),
  );
  const durable = transferRow(bench, `${b3UpName} + fsync`, backend, synced!, [[201]]);
  listBaseline(bench, durable, backend);
  const againstDurable = (row: Row) => {
    if (durable.status === 'measured' && row.status === 'measured')
      row.note = [row.note, `${(row.mibps! / durable.mibps!).toFixed(2)} x B3 + fsync`].filter(Boolean).join('; ');
  };
  againstDurable(up);
  return againstDurable;
}

/** The download against B3's. */
async function download(bench: Bench, s: Servers, run: FileRun) {
  const { backend } = s;
  const [, b3DownName, , downName] = fileScenarioNames(bench.settings) as [string, string, string, string];
  const [b3Down, download] = await bestOfEach(
    bench.settings.fileTries,
    () => transfer(s.baselines.pid, { method: 'GET', url: `${s.baselines.baseUrl}/b3/file`, headers: {} }),
    () => transfer(s.trellis.pid, { method: 'GET', url: run.fileUrl, headers: auth(run.token) }),
  );
  const base = transferRow(bench, b3DownName, backend, b3Down!, [[200]]);
  listBaseline(bench, base, backend);
  const down = transferRow(bench, downName, backend, download!, [[200]]);
  compare(down, base, 0.7);
  withRss(down);
  bench.rows.push(down);
}
