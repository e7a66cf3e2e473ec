// Schemas of `/<id>/file` (direct and resumable uploads, ranged downloads) and `/upload/<id>` (resumable uploads).
import { Type } from 'typebox';
import { ALLOW, CONDITIONAL_HEADERS, empty, header, IdParams, LOCATION, type ResponseSpec, Uuid } from './common.js';
import { problems } from './problems.js';

const optional = (description: string) => Type.Optional(Type.String({ description }));

const DIGEST = 'sha-256=:<base64 of the 32-byte digest>:';
const DRAFT_HEADERS = {
  'upload-draft-interop-version': optional(
    'The resumable-upload draft interop version the client speaks; with it, a 104 interim response announces the upload.',
  ),
  'upload-incomplete': optional('Draft interop 3: ?1 for Upload-Complete: ?0.'),
};

/** Upload-Offset, Upload-Complete: ?0 and Upload-Limit: an upload in progress. */
const PROGRESS = {
  'Upload-Offset': header('The bytes stored so far.'),
  'Upload-Complete': header('?0: the upload goes on.'),
  'Upload-Limit': header('max-age=<seconds>, max-size=<bytes>, min-append-size=<bytes>, max-append-size=<bytes>'),
};

const FILE_ETAG = header('A strong validator of the file.');
const ACCEPT_RANGES = header('bytes');
const FILE_ALLOW = ALLOW('GET, HEAD, POST, PUT, DELETE (with UPDATE on the element)');

const fileBytes = (description: string, mediaType = '*/*') => ({
  content: { [mediaType]: { schema: { type: 'string', format: 'binary', description } } },
});

const downloaded = (description: string, extra: ResponseSpec['headers'] = {}): ResponseSpec => ({
  description,
  headers: {
    ETag: FILE_ETAG,
    'Accept-Ranges': ACCEPT_RANGES,
    Allow: FILE_ALLOW,
    'Content-Disposition': header("attachment, with a file name from the element's name (or id) and extension."),
    'Repr-Digest': header(`${DIGEST} of the whole file; absent for files stored before hashes were kept.`, false),
    ...extra,
  },
  // The media type is the one detected from the bytes at upload.
  content: { '*/*': { schema: Type.String({ format: 'binary' }) } },
});

export const downloadSchema = {
  operationId: 'downloadFile',
  summary: "Download an element's file, or one range of it",
  description: 'The Content-Type is the type detected from the bytes when they were uploaded.',
  tags: ['Files'],
  params: IdParams,
  headers: Type.Object({
    range: optional('One range: bytes=<start>-<end>, bytes=<start>- or bytes=-<suffix length>.'),
    'if-range': optional('The range applies only while this ETag is current; otherwise the whole file is sent.'),
    ...CONDITIONAL_HEADERS,
  }),
  response: {
    200: downloaded('The whole file.'),
    206: downloaded('The range asked for.', { 'Content-Range': header('bytes <start>-<end>/<total>') }),
    304: empty('If-None-Match matched the current ETag: no body.', {
      ETag: FILE_ETAG,
      'Accept-Ranges': ACCEPT_RANGES,
      Allow: FILE_ALLOW,
    }),
    ...problems(400, 401, 404, 412, 416),
  },
};

const uploadSchema = (operationId: string, summary: string, conflict: string) => ({
  operationId,
  summary,
  description: `Upload-Complete: ?1 uploads the whole body as the file (201). Upload-Complete: ?0 starts a resumable upload with the body as its first chunk (204, Location of the upload); continue it with PATCH /upload/{id}. ${conflict}`,
  tags: ['Files'],
  params: IdParams,
  headers: Type.Object({
    'upload-complete': Type.String({ description: '?1: the body is the whole file; ?0: start a resumable upload.' }),
    'upload-length': optional('The total size in bytes; cannot be changed later.'),
    'content-disposition': optional('Its filename gives the extension.'),
    'repr-digest': optional(`${DIGEST}: the expected digest of the whole file (400 on a mismatch).`),
    'content-digest': optional('Read as Repr-Digest when that is absent.'),
    ...DRAFT_HEADERS,
    ...CONDITIONAL_HEADERS,
  }),
  body: fileBytes('The file, or the first chunk of a resumable upload (may be empty).'),
  response: {
    201: empty('The file is stored; Location names it.', { Location: LOCATION }),
    204: empty('A resumable upload started; Location names it.', { Location: LOCATION, ...PROGRESS }),
    ...problems(400, 401, 404, 409, 412),
  },
});

export const createFileSchema = uploadSchema(
  'uploadFile',
  'Upload the file of an element that has none',
  'An element that has a file answers 409.',
);
export const replaceFileSchema = uploadSchema(
  'replaceFile',
  "Upload or replace an element's file",
  'If-Match lets a writer detect a changed file.',
);

export const deleteFileSchema = {
  operationId: 'deleteFile',
  summary: "Delete an element's file",
  tags: ['Files'],
  params: IdParams,
  headers: Type.Object(CONDITIONAL_HEADERS),
  response: { 204: empty('Deleted; the element has no file and no hasFile.'), ...problems(400, 401, 404, 412) },
};

const UploadParams = Type.Object({ id: Uuid('The upload id, from the Location of the request that started it.') });
const UPLOAD_TAGS = ['Resumable uploads'];

export const uploadStateSchema = {
  operationId: 'uploadOffset',
  summary: 'The offset of a resumable upload',
  tags: UPLOAD_TAGS,
  params: UploadParams,
  response: {
    204: empty('The state of the upload.', {
      ...PROGRESS,
      'Upload-Length': header('The declared total size, when one was declared.', false),
      Expires: header('When the upload expires (an HTTP-date).'),
    }),
    ...problems(400, 401, 404, 410),
  },
};

export const appendSchema = {
  operationId: 'appendToUpload',
  summary: 'Append a chunk to a resumable upload, or complete it',
  tags: UPLOAD_TAGS,
  params: UploadParams,
  headers: Type.Object({
    'upload-offset': Type.String({ description: 'The current offset (409 with the expected one otherwise).' }),
    'upload-complete': optional('?1 on the last chunk (the body may be empty), ?0 otherwise.'),
    'upload-length': optional('The total size, if not declared before (it cannot change).'),
    'repr-digest': optional(`${DIGEST} of the whole file, checked on completion.`),
    'content-digest': optional('Read as Repr-Digest when that is absent.'),
    ...DRAFT_HEADERS,
  }),
  body: fileBytes('The chunk (may be empty).', 'application/partial-upload'),
  response: {
    201: empty("Completed: the bytes are the element's file, which Location names.", {
      Location: LOCATION,
      'Upload-Complete': header('?1'),
      'Upload-Offset': header('The size of the file.'),
    }),
    204: empty('The chunk is stored.', PROGRESS),
    ...problems(400, 401, 404, 409, 410, 412),
  },
};

export const cancelUploadSchema = {
  operationId: 'cancelUpload',
  summary: 'Cancel a resumable upload',
  tags: UPLOAD_TAGS,
  params: UploadParams,
  response: { 204: empty('Cancelled; the stored chunks are removed.'), ...problems(400, 401, 404) },
};
