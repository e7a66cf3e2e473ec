// The header fields of file writes and appends as the domain takes them (src/http/upload-requests.ts), and the
// order in which their problems are answered: the first malformed field in the order below wins.
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { Problem } from '../../../src/errors.js';
import { appendFieldsOf, fileWriteOf } from '../../../src/http/upload-requests.js';

/** What the parsers read of a request: its headers, as Node hands them over (lower-case names). */
const request = (headers: Record<string, string>) => ({ headers }) as unknown as FastifyRequest;

const sha = createHash('sha256').update('x').digest();
const digest = `sha-256=:${sha.toString('base64')}:`;

function detailOf(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(Problem);
    return (error as Problem).detail;
  }
  throw new Error('no problem was thrown');
}

describe('a file write', () => {
  it('with Upload-Complete: ?1 is a direct upload: the size announced, the digest, the extension', () => {
    const write = fileWriteOf(
      request({
        'upload-complete': '?1',
        'content-length': '5',
        'repr-digest': digest,
        'content-disposition': 'attachment; filename="a.TXT"',
      }),
      null,
    );
    expect(write.resumable).toBe(false);
    expect(write.fields).toMatchObject({ announced: 5, extension: 'txt' });
    expect((write.fields as { expected: Buffer }).expected.equals(sha)).toBe(true);
    // Upload-Length, when sent, is the size announced.
    expect(fileWriteOf(request({ 'upload-complete': '?1', 'upload-length': '7' }), null).fields).toEqual({
      announced: 7,
      expected: undefined,
      extension: 'bin',
    });
  });

  it('with Upload-Complete: ?0 starts a resumable upload (Upload-Incomplete: ?1 of interop 3 alike)', () => {
    const fields = { length: 9, contentLength: 4, expected: null, extension: 'bin' };
    const headers = { 'upload-length': '9', 'content-length': '4' };
    expect(fileWriteOf(request({ 'upload-complete': '?0', ...headers }), null)).toEqual({ resumable: true, fields });
    expect(fileWriteOf(request({ 'upload-incomplete': '?1', ...headers }), 3)).toEqual({ resumable: true, fields });
  });

  it('answers the first of its mistakes: completeness, length, lengths that disagree, digest', () => {
    const all = {
      'upload-length': 'x',
      'content-length': '3',
      'repr-digest': 'sha-256=:AAAA:',
    };
    expect(detailOf(() => fileWriteOf(request(all), null))).toMatch(/'Upload-Complete' is required/);
    expect(detailOf(() => fileWriteOf(request({ ...all, 'upload-complete': '?1' }), null))).toMatch(
      /'Upload-Length' must be/,
    );
    const disagree = { ...all, 'upload-complete': '?1', 'upload-length': '4' };
    expect(detailOf(() => fileWriteOf(request(disagree), null))).toMatch(/\(4\) and Content-Length \(3\) disagree/);
    expect(detailOf(() => fileWriteOf(request({ ...disagree, 'upload-length': '3' }), null))).toMatch(/32 bytes/);
    // A start is not held to Content-Length = Upload-Length (its first chunk may be shorter): the digest is next.
    expect(detailOf(() => fileWriteOf(request({ ...disagree, 'upload-complete': '?0' }), null))).toMatch(/32 bytes/);
    expect(detailOf(() => fileWriteOf(request({ 'upload-incomplete': 'maybe' }), 3))).toMatch(/Upload-Incomplete/);
  });
});

describe('an append', () => {
  const valid = {
    'upload-complete': '?1',
    'upload-offset': '10',
    'content-type': 'application/partial-upload',
    'content-length': '2',
    'repr-digest': digest,
  };

  it('gives offset, completeness, length, Content-Length and (completing only) the digest', () => {
    const fields = appendFieldsOf(request(valid), null);
    expect(fields).toMatchObject({ complete: true, offset: 10, length: null, contentLength: 2 });
    expect((fields as { expected: Buffer }).expected.equals(sha)).toBe(true);
    expect(appendFieldsOf(request({ ...valid, 'upload-complete': '?0', 'upload-length': '12' }), null)).toEqual({
      complete: false,
      offset: 10,
      length: 12,
      contentLength: 2,
      expected: null,
    });
  });

  it('hands over its first mistake as a problem: completeness, offset, media type, length, digest', () => {
    const steps: Array<[Record<string, string | undefined>, RegExp]> = [
      [{ 'upload-complete': 'x' }, /Upload-Complete/],
      [{ 'upload-offset': '-1' }, /Upload-Offset/],
      [{ 'content-type': 'text/plain' }, /partial-upload/],
      [{ 'upload-length': '1.5' }, /Upload-Length/],
      [{ 'repr-digest': 'sha-256=:AAAA:' }, /32 bytes/],
    ];
    // Each mistake is answered while every one after it is made too.
    let headers: Record<string, string | undefined> = { ...valid };
    for (const [broken] of steps) headers = { ...headers, ...broken };
    for (const [broken, detail] of steps) {
      const fields = appendFieldsOf(request(headers as Record<string, string>), null);
      expect(fields).toBeInstanceOf(Problem);
      expect((fields as Problem).detail).toMatch(detail);
      for (const name of Object.keys(broken)) headers[name] = valid[name as keyof typeof valid];
    }
    // A digest that is not read (no completion) is no mistake.
    expect(appendFieldsOf(request({ ...valid, 'upload-complete': '?0', 'repr-digest': 'x' }), null)).not.toBeInstanceOf(
      Problem,
    );
  });

  it('throws at once an Upload-Incomplete of interop 3 that is no boolean; its absence completes', () => {
    const { 'upload-complete': _, ...rest } = valid;
    expect(detailOf(() => appendFieldsOf(request({ ...rest, 'upload-incomplete': '1' }), 3))).toMatch(
      /Upload-Incomplete/,
    );
    expect(appendFieldsOf(request(rest), 3)).toMatchObject({ complete: true });
    expect(appendFieldsOf(request({ ...rest, 'upload-incomplete': '?1' }), 3)).toMatchObject({ complete: false });
  });
});
