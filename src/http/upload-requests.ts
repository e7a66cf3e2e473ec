// The header fields of file writes and appends, parsed into what the domain takes (domain/files/files.ts,
// domain/uploads/upload-requests.ts), in the order their problems have always been answered in.
import type { FastifyRequest } from 'fastify';
import type { DirectUpload } from '../domain/files/files.js';
import type { AppendFields, StartRequest } from '../domain/uploads/upload-requests.js';
import { Problem } from '../errors.js';
import { extensionFromDisposition, parseSha256Digest } from './file-headers.js';
import { headerOf } from './reply.js';
import {
  checkAppendContentType,
  parseUploadComplete,
  parseUploadLength,
  parseUploadOffset,
  uploadCompleteValue,
} from './upload-headers.js';

/** A POST/PUT of `/<id>/file`: a direct upload, or (`Upload-Complete: ?0`) the start of a resumable one. */
export type FileWrite = { resumable: false; fields: DirectUpload } | { resumable: true; fields: StartRequest };

const contentLengthOf = (request: FastifyRequest) => {
  const value = headerOf(request, 'content-length');
  return value === undefined ? undefined : Number(value);
};

const digestOf = (request: FastifyRequest) =>
  parseSha256Digest(headerOf(request, 'repr-digest'), headerOf(request, 'content-digest'));

/** The fields of a file write; every malformed one is a 400 before anything else but authentication. */
export function fileWriteOf(request: FastifyRequest, interop: number | null): FileWrite {
  // Clients of draft interop 3 say `Upload-Incomplete: ?1` for `Upload-Complete: ?0`.
  const complete = parseUploadComplete(
    uploadCompleteValue(
      {
        uploadComplete: headerOf(request, 'upload-complete'),
        uploadIncomplete: headerOf(request, 'upload-incomplete'),
      },
      interop,
      false,
    ),
  );
  const uploadLength = parseUploadLength(headerOf(request, 'upload-length'));
  const contentLength = contentLengthOf(request);
  if (!complete) {
    const expected = digestOf(request) ?? null;
    const extension = extensionFromDisposition(headerOf(request, 'content-disposition'));
    return { resumable: true, fields: { length: uploadLength ?? null, contentLength, expected, extension } };
  }
  if (uploadLength !== undefined && contentLength !== undefined && uploadLength !== contentLength)
    throw new Problem('bad-content', `Upload-Length (${uploadLength}) and Content-Length (${contentLength}) disagree.`);
  const expected = digestOf(request);
  const extension = extensionFromDisposition(headerOf(request, 'content-disposition'));
  return { resumable: false, fields: { announced: uploadLength ?? contentLength, expected, extension } };
}

/**
 * The fields of an append. An `Upload-Incomplete` that is no boolean is refused at once; any other malformed field
 * is handed to the domain as its problem, which answers it once the upload is known to be the caller's.
 */
export function appendFieldsOf(request: FastifyRequest, interop: number | null): AppendFields {
  const completeValue = uploadCompleteValue(
    {
      uploadComplete: headerOf(request, 'upload-complete'),
      uploadIncomplete: headerOf(request, 'upload-incomplete'),
    },
    interop,
    true,
  );
  try {
    const complete = parseUploadComplete(completeValue);
    const offset = parseUploadOffset(headerOf(request, 'upload-offset'));
    checkAppendContentType(headerOf(request, 'content-type'), interop);
    const length = parseUploadLength(headerOf(request, 'upload-length')) ?? null;
    const expected = complete ? (digestOf(request) ?? null) : null;
    return { complete, offset, length, contentLength: contentLengthOf(request), expected };
  } catch (error) {
    if (error instanceof Problem) return error;
    throw error;
  }
}
