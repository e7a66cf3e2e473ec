// An element's file: its metadata, download, a preview of images and text, and an upload by drag and drop (or a
// file chooser) over the resumable protocol, with a progress bar, pause, resume and cancel.
import type * as tus from 'tus-js-client';
import { type Abilities, authHeaders, type GraphElement, instanceConfiguration, request } from '../api.js';
import { h, replace, uid } from '../dom.js';
import { formatSize } from '../format.js';
import { tell } from '../notice.js';
import { attempt } from '../problem.js';

const MiB = 2 ** 20;
/** Files up to this size are hashed in the browser first, so the service checks the bytes that arrive. */
const DIGEST_LIMIT = 64 * MiB;
const PREVIEW_IMAGE_LIMIT = 20 * MiB;
const PREVIEW_TEXT_BYTES = 64 * 1024;

/** The file and, for those who may write, its upload and delete controls. */
export function fileSection(element: GraphElement, may: Abilities, onChanged: () => void): HTMLElement {
  const section = h(
    'section',
    { 'aria-labelledby': 'file-heading', class: 'file' },
    h('h2', { id: 'file-heading' }, 'File'),
    element.file ? currentFile(element, may.write, onChanged) : h('p', null, 'No file attached.'),
    may.write ? uploader(element, onChanged) : null,
  );
  return section;
}

function currentFile(element: GraphElement, writable: boolean, onChanged: () => void): HTMLElement {
  const file = element.file!;
  const status = h('div');
  const preview = h('div', { class: 'preview' });
  const box = h(
    'div',
    null,
    h(
      'dl',
      { class: 'facts' },
      // The uploaded name is known to the browser it was uploaded from; elsewhere, the name the download gets.
      h('dt', null, 'Name'),
      h('dd', { 'data-file': 'name' }, uploadedName(element) ?? `${element.data.name ?? element.id}.${file.extension}`),
      h('dt', null, 'Size'),
      h(
        'dd',
        { 'data-file': 'size', title: `${file.contentLength.toLocaleString('en')} bytes` },
        formatSize(file.contentLength),
      ),
      h('dt', null, 'Type'),
      h('dd', null, `${file.mimeType} (.${file.extension})`),
      h('dt', null, 'SHA-256'),
      h('dd', null, h('code', { 'data-file': 'sha256' }, file.hash?.sha256 ?? 'not recorded')),
    ),
    h('button', { type: 'button', onclick: () => void attempt(status, () => download(element)) }, 'Download'),
    ' ',
    writable &&
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          onclick: () =>
            void attempt(status, async () => {
              await request('DELETE', `/${element.id}/file`);
              tell('File deleted.');
              onChanged();
            }),
        },
        'Delete file',
      ),
    status,
    preview,
  );
  void attempt(preview, () => showPreview(element, preview));
  return box;
}

/** Fetches the file with the session's token (a plain link could not send it) and saves it under its name. */
async function download(element: GraphElement): Promise<void> {
  const response = await fetch(`/${element.id}/file`, { headers: authHeaders() });
  if (!response.ok) throw new Error(`The download failed: ${response.status}.`);
  const url = URL.createObjectURL(await response.blob());
  const name = uploadedName(element) ?? fileNameOf(response.headers.get('content-disposition'), element);
  const link = h('a', { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

const NAMES_KEY = 'trellis-explorer-file-names';

/**
 * The name the file had when it was uploaded from this browser (the service keeps only its extension), known by
 * the element and the file's digest so that a file replaced elsewhere is not given a stale name.
 */
function uploadedName(element: GraphElement): string | null {
  const names = JSON.parse(localStorage.getItem(NAMES_KEY) ?? '{}') as Record<string, string>;
  return names[`${element.id}:${element.file?.hash?.sha256 ?? ''}`] ?? null;
}

function rememberName(id: string, sha256: string, name: string): void {
  const names = JSON.parse(localStorage.getItem(NAMES_KEY) ?? '{}') as Record<string, string>;
  names[`${id}:${sha256}`] = name;
  localStorage.setItem(NAMES_KEY, JSON.stringify(names));
}

function fileNameOf(disposition: string | null, element: GraphElement): string {
  const encoded = /filename\*=UTF-8''([^;]+)/i.exec(disposition ?? '');
  if (encoded) return decodeURIComponent(encoded[1]!);
  const plain = /filename="([^"]+)"/i.exec(disposition ?? '');
  return plain ? plain[1]! : `${element.id}.${element.file?.extension ?? 'bin'}`;
}

const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|x-ndjson))/;
const TEXT_EXTENSIONS = new Set([
  'txt',
  'md',
  'csv',
  'tsv',
  'json',
  'xml',
  'yaml',
  'yml',
  'log',
  'html',
  'css',
  'js',
  'ts',
]);

async function showPreview(element: GraphElement, slot: HTMLElement): Promise<void> {
  const file = element.file!;
  if (file.mimeType.startsWith('image/') && file.contentLength <= PREVIEW_IMAGE_LIMIT) {
    const response = await fetch(`/${element.id}/file`, { headers: authHeaders() });
    if (!response.ok) return;
    const url = URL.createObjectURL(await response.blob());
    const image = h('img', { src: url, alt: `Preview of the file of ${element.data.name ?? element.id}` });
    image.addEventListener('load', () => URL.revokeObjectURL(url));
    replace(slot, h('h3', null, 'Preview'), image);
  } else if (TEXT_TYPES.test(file.mimeType) || TEXT_EXTENSIONS.has(file.extension)) {
    // The first bytes are enough for a look; a range request does not fetch the rest.
    const response = await fetch(`/${element.id}/file`, {
      headers: { ...authHeaders(), Range: `bytes=0-${PREVIEW_TEXT_BYTES - 1}` },
    });
    if (!response.ok) return;
    const text = new TextDecoder().decode(await response.arrayBuffer());
    const cut = file.contentLength > PREVIEW_TEXT_BYTES ? ` (the first ${PREVIEW_TEXT_BYTES / 1024} KiB)` : '';
    replace(slot, h('h3', null, `Preview${cut}`), h('pre', { class: 'text-preview', tabindex: '0' }, text));
  }
}

/** `attachment; filename="…"` with an ASCII fallback and the exact name in RFC 8187 form: the extension is kept. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** The file's SHA-256 as the Repr-Digest header wants it, and in hex (how the element states it). */
async function sha256Digest(file: File): Promise<{ header: string; hex: string }> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', await file.arrayBuffer()));
  let binary = '';
  for (const byte of digest) binary += String.fromCharCode(byte);
  const hex = Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return { header: `sha-256=:${btoa(binary)}:`, hex };
}

/**
 * tus-js-client creates an upload with POST; PUT starts it just the same and also replaces a file the element
 * already has (POST would be a 409 then).
 */
function putForCreation(inner: tus.HttpStack): tus.HttpStack {
  return {
    getName: () => 'PutForCreation',
    createRequest: (method, url) => inner.createRequest(method === 'POST' ? 'PUT' : method, url),
  };
}

type UploadState = 'idle' | 'hashing' | 'uploading' | 'paused' | 'interrupted' | 'done' | 'cancelled' | 'failed';

/** The uploader's progress bar, state line, buttons and problem area, and how a state shows in them. */
interface Controls {
  progress: HTMLProgressElement;
  progressText: HTMLSpanElement;
  state: HTMLParagraphElement;
  pause: HTMLButtonElement;
  resume: HTMLButtonElement;
  cancel: HTMLButtonElement;
  problem: HTMLDivElement;
  setState(next: UploadState, message: string): void;
}

function controls(): Controls {
  const progress = h('progress', { id: uid('progress'), max: 100, value: 0 });
  const progressText = h('span', { class: 'progress-text' }, '');
  const state = h('p', { class: 'upload-state', 'data-state': 'idle', role: 'status' }, '');
  const pause = h('button', { type: 'button', disabled: true }, 'Pause');
  const resume = h('button', { type: 'button', disabled: true }, 'Resume');
  const cancel = h('button', { type: 'button', disabled: true }, 'Cancel');
  const problem = h('div');
  const setState = (next: UploadState, message: string) => {
    state.dataset.state = next;
    state.textContent = message;
    pause.disabled = next !== 'uploading';
    resume.disabled = next !== 'paused' && next !== 'interrupted';
    cancel.disabled = !['uploading', 'paused', 'interrupted'].includes(next);
  };
  return { progress, progressText, state, pause, resume, cancel, problem, setState };
}

/** Starts the upload of `file` into the element (`keep` gets it before it starts, for the buttons). */
async function startUpload(
  c: Controls,
  element: GraphElement,
  file: File,
  onChanged: () => void,
  keep: (upload: tus.Upload) => void,
): Promise<void> {
  const { progress, progressText, problem, setState } = c;
  problem.replaceChildren();
  const { file: limits } = await instanceConfiguration();
  // Chunks within the service's append limits (Upload-Limit); smaller ones report progress more often.
  const chunkSize = Math.max(limits.uploadMinChunkSizeInBytes, Math.min(limits.uploadMaxChunkSizeInBytes, 8 * MiB));
  const headers: Record<string, string> = { ...authHeaders(), 'Content-Disposition': contentDisposition(file.name) };
  if (file.size <= DIGEST_LIMIT) {
    setState('hashing', 'Computing the SHA-256 digest…');
    const digest = await sha256Digest(file);
    headers['Repr-Digest'] = digest.header;
    rememberName(element.id, digest.hex, file.name);
  }
  // The upload library is loaded when the first upload starts, not with the page.
  const client = await import('tus-js-client');
  progress.value = 0;
  const upload = new client.Upload(file, {
    endpoint: `${location.origin}/${element.id}/file`,
    protocol: 'ietf-draft-05',
    chunkSize,
    // A dropped connection is retried (HEAD for the offset, then PATCH from there); after these it waits for Resume.
    retryDelays: [0, 1000, 3000],
    storeFingerprintForResuming: false,
    headers,
    httpStack: putForCreation(new client.DefaultHttpStack({})),
    onProgress: (sent, total) => {
      const percent = total === 0 ? 100 : Math.floor((sent / total) * 100);
      progress.value = percent;
      progressText.textContent = `${percent}% (${formatSize(sent)} of ${formatSize(total)})`;
    },
    onError: (error) => {
      const response = (error as tus.DetailedError).originalResponse;
      if (response && response.getStatus() >= 400 && response.getStatus() < 500 && response.getStatus() !== 409) {
        setState('failed', `The upload was refused (${response.getStatus()}).`);
        problem.replaceChildren(h('pre', { class: 'problem', role: 'alert' }, response.getBody()));
        return;
      }
      setState('interrupted', 'The connection was lost. Resume continues from what the service has stored.');
    },
    onSuccess: () => {
      setState('done', 'Uploaded.');
      tell(`File uploaded: ${file.name} (${formatSize(file.size)}).`);
      onChanged();
    },
    // The package's types predate its IETF-draft protocols.
  } as tus.UploadOptions);
  keep(upload);
  setState('uploading', `Uploading ${file.name}…`);
  upload.start();
}

function uploader(element: GraphElement, onChanged: () => void): HTMLElement {
  // The chooser itself stays hidden: the button opens it, so the keyboard reaches one plain control.
  const input = h('input', { type: 'file', hidden: true, 'aria-label': 'File to upload' });
  const c = controls();
  const { progress, progressText, state, pause, resume, cancel, problem, setState } = c;
  const zone = h(
    'div',
    { class: 'drop-zone' },
    h('p', null, 'Drop a file here, or '),
    h(
      'button',
      { type: 'button', onclick: () => input.click() },
      element.file ? 'Choose a file to replace it' : 'Choose a file',
    ),
  );
  let upload: tus.Upload | null = null;
  const start = (file: File) =>
    startUpload(c, element, file, onChanged, (started) => {
      upload = started;
    });

  pause.addEventListener('click', () => {
    void upload?.abort().then(() => setState('paused', 'Paused.'));
  });
  resume.addEventListener('click', () => {
    setState('uploading', 'Resuming…');
    upload?.start();
  });
  cancel.addEventListener('click', () => {
    // abort(true) also deletes the upload on the service (DELETE /upload/<id>), freeing what it stored.
    void upload
      ?.abort(true)
      .then(() => setState('cancelled', 'Cancelled; nothing was kept.'))
      .catch(() => setState('cancelled', 'Cancelled.'));
  });
  input.addEventListener('change', () => {
    const file = input.files?.[0];
    if (file) void start(file);
  });
  zone.addEventListener('dragover', (event) => {
    event.preventDefault();
    zone.classList.add('over');
  });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    zone.classList.remove('over');
    const file = event.dataTransfer?.files[0];
    if (file) void start(file);
  });

  return h(
    'div',
    { class: 'uploader' },
    h('h3', null, element.file ? 'Replace the file' : 'Upload a file'),
    zone,
    input,
    h('div', { class: 'progress' }, h('label', { for: progress.id }, 'Upload progress'), progress, progressText),
    h('div', { class: 'buttons' }, pause, ' ', resume, ' ', cancel),
    state,
    problem,
  );
}
