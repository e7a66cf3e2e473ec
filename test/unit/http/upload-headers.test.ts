// The Upload-* fields of resumable uploads (src/http/upload-headers.ts): structured booleans and integers as the
// draft wants them, the interop versions clients announce, Upload-Incomplete of draft-01, the PATCH media type, and
// the fields of an upload in progress.
import { parseDictionary } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { Problem } from '../../../src/errors.js';
import {
  checkAppendContentType,
  interopVersion,
  parseUploadComplete,
  parseUploadLength,
  parseUploadOffset,
  progressFields,
  uploadCompleteValue,
  uploadLimitField,
  usesUploadIncomplete,
} from '../../../src/http/upload-headers.js';

/** The detail of the 400 that `work` throws. */
function badContent(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(Problem);
    expect((error as Problem).slug).toBe('bad-content');
    expect((error as Problem).status).toBe(400);
    return (error as Problem).detail;
  }
  throw new Error('no problem was thrown');
}

describe('Upload-Complete', () => {
  it('is a structured boolean; parameters are ignored', () => {
    expect(parseUploadComplete('?1')).toBe(true);
    expect(parseUploadComplete('?0')).toBe(false);
    expect(parseUploadComplete('?1;a=b')).toBe(true);
  });

  it('is required, and says which of its mistakes was made', () => {
    expect(badContent(() => parseUploadComplete(undefined))).toMatch(/is required/);
    expect(badContent(() => parseUploadComplete('yes?'))).toMatch(/not a valid structured field/);
    expect(badContent(() => parseUploadComplete('1'))).toMatch(/must be a structured boolean/);
    expect(badContent(() => parseUploadComplete('"?1"'))).toMatch(/must be a structured boolean/);
  });
});

describe('Upload-Length and Upload-Offset', () => {
  it('are non-negative sf-integers', () => {
    expect(parseUploadLength(undefined)).toBeUndefined();
    expect(parseUploadLength('0')).toBe(0);
    expect(parseUploadLength('123456789012345')).toBe(123456789012345);
    expect(parseUploadLength('42;x=1')).toBe(42);
    expect(parseUploadOffset('17')).toBe(17);
  });

  it('refuse decimals, negatives, more than 15 digits and other items', () => {
    for (const value of ['10.0', '-1', '1234567890123456', 'ten', '?1', '"5"', ''])
      expect(badContent(() => parseUploadLength(value))).toMatch(/Upload-Length/);
    for (const value of [undefined, '10.0', '-1', 'x'])
      expect(badContent(() => parseUploadOffset(value))).toMatch(/Upload-Offset' is required/);
  });
});

describe('draft interop versions', () => {
  it('knows 3 to 6 and nothing else', () => {
    expect([undefined, '2', '3', '4', '5', '6', '7', 'x', '3.0'].map(interopVersion)).toEqual([
      null,
      null,
      3,
      4,
      5,
      6,
      null,
      null,
      null,
    ]);
    expect(usesUploadIncomplete(3)).toBe(true);
    expect(usesUploadIncomplete(6)).toBe(false);
  });

  it('translates Upload-Incomplete for interop 3 only, and its absence by whether the request appends', () => {
    const fields = (uploadIncomplete?: string, uploadComplete?: string) => ({ uploadComplete, uploadIncomplete });
    expect(uploadCompleteValue(fields('?1'), 3, false)).toBe('?0');
    expect(uploadCompleteValue(fields('?0'), 3, true)).toBe('?1');
    expect(uploadCompleteValue(fields(), 3, true)).toBe('?1');
    expect(uploadCompleteValue(fields(), 3, false)).toBeUndefined();
    // Upload-Complete wins when both are sent; other versions never read Upload-Incomplete.
    expect(uploadCompleteValue(fields('?1', '?1'), 3, false)).toBe('?1');
    expect(uploadCompleteValue(fields('?1'), 6, false)).toBeUndefined();
    expect(badContent(() => uploadCompleteValue(fields('1'), 3, false))).toMatch(/Upload-Incomplete/);
  });
});

describe('the media type of an append', () => {
  it('is application/partial-upload (parameters and case aside); interop 3 to 5 may send none', () => {
    checkAppendContentType('application/partial-upload', null);
    checkAppendContentType('Application/Partial-Upload; charset=x', 6);
    checkAppendContentType(undefined, 3);
    checkAppendContentType(undefined, 5);
    expect(badContent(() => checkAppendContentType(undefined, 6))).toMatch(/partial-upload/);
    expect(badContent(() => checkAppendContentType(undefined, null))).toMatch(/partial-upload/);
    expect(badContent(() => checkAppendContentType('application/offset+octet-stream', 4))).toMatch(/partial-upload/);
  });
});

describe('the fields of an upload in progress', () => {
  const limits = { maxAge: 3600, maxSize: 1000, minAppendSize: 10, maxAppendSize: 100 };

  it('Upload-Limit is a structured dictionary of the four limits', () => {
    const parsed = parseDictionary(uploadLimitField(limits));
    expect(Object.fromEntries([...parsed].map(([key, [value]]) => [key, value]))).toEqual({
      'max-age': 3600,
      'max-size': 1000,
      'min-append-size': 10,
      'max-append-size': 100,
    });
  });

  it('carry the offset, Upload-Complete: ?0 and the limits', () => {
    const state = { id: 'u', elementId: 'e', offset: 42, length: null, expires: new Date(), limits };
    expect(progressFields(state)).toEqual({
      'upload-offset': '42',
      'upload-complete': '?0',
      'upload-limit': 'max-age=3600, max-size=1000, min-append-size=10, max-append-size=100',
    });
  });
});
