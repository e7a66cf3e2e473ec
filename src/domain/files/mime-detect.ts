// The `mimeType` of an uploaded file, detected from its leading bytes (kept while the upload streamed).
import { fileTypeFromBuffer } from 'file-type';

/** How many leading bytes uploads keep for detection; more than file-type's 4100, for container formats. */
export const SNIFF_BYTES = 64 * 1024;

/**
 * `file-type`'s magic-number detection; otherwise `text/plain` when the sniffed head is valid UTF-8 without NUL
 * bytes (only the head is checked: a text file is not read twice), otherwise `application/octet-stream`. An empty
 * file has no bytes to detect anything from: `application/octet-stream`.
 */
export async function detectMimeType(head: Buffer, size: number): Promise<string> {
  if (size === 0) return 'application/octet-stream';
  const detected = await fileTypeFromBuffer(head);
  if (detected) return detected.mime;
  return looksLikeUtf8Text(head, head.length < size) ? 'text/plain' : 'application/octet-stream';
}

function looksLikeUtf8Text(head: Buffer, truncated: boolean): boolean {
  if (head.includes(0)) return false;
  try {
    // stream: true lets a multi-byte character cut off at the end of a truncated head pass.
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: truncated });
    return true;
  } catch {
    return false;
  }
}
