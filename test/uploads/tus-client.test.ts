// A real client of the draft: tus-js-client 4.3.1 in Node with its IETF-draft protocols ('ietf-draft-03' announces
// interop version 5 and sends PATCH bodies without a media type; 'ietf-draft-05' announces 6 and sends
// `application/partial-upload`). Each upload is cut off in the middle of a PATCH (the client aborts while the body
// is half sent), resumed with `start()` (HEAD for the offset, then PATCH from there), and checked byte for byte
// and by digest, on both blob stores.

import type { ClientRequest } from 'node:http';
import { Readable } from 'node:stream';
import * as tus from 'tus-js-client';
import { beforeAll, expect, it } from 'vitest';
import { noise, reprDigest, sha256 } from '../files/fixtures.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import { arrived, blobOf, leftovers, uploadRow, waitFor, watchConnections } from './helpers.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const KiB = 1024;
const CHUNK = 256 * KiB;
const settings = {
  file: {
    maxFileSizeInBytes: 16 * 1024 * KiB,
    uploadMinChunkSizeInBytes: 64 * KiB,
    uploadMaxChunkSizeInBytes: 1024 * KiB,
  },
};

interface Exchange {
  method: string;
  status: number;
  offset: string | undefined;
}

/** The request a stalling stack left hanging: the Node request, and the half body it is sending. */
interface Stalled {
  request: ClientRequest;
  half: Readable;
}

/**
 * tus-js-client's own Node HTTP stack, except that its `stallAt`-th PATCH sends only half its body and then waits
 * forever (a connection that hangs), so that the test can abort the upload in the middle of a request.
 */
function stallingStack(stallAt: number, onStall: (stalled: Stalled) => void) {
  const inner = new tus.DefaultHttpStack({});
  let patches = 0;
  return {
    getName: () => 'StallingNodeHttpStack',
    createRequest(method: string, url: string) {
      const req = inner.createRequest(method, url);
      const send = req.send.bind(req);
      req.send = (body?: unknown) => {
        if (method === 'PATCH' && ++patches === stallAt && Buffer.isBuffer(body)) {
          const half = new Readable({ read() {} });
          half.push(body.subarray(0, body.length / 2));
          // The stack sets Content-Length from `size`: the server expects the whole chunk.
          (half as Readable & { size: number }).size = body.length;
          const sent = send(half as never);
          onStall({ request: req.getUnderlyingObject() as ClientRequest, half });
          return sent;
        }
        return send(body as never);
      };
      return req;
    },
  };
}

describeBackends(
  'resumable uploads: tus-js-client',
  (h) => {
    let alice: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@tus.dev');
      watchConnections(h()); // before tus-js-client connects: its connections are kept alive across requests
    });

    for (const [protocol, extra] of [
      ['ietf-draft-03', {}],
      ['ietf-draft-05', {}],
      ['ietf-draft-05', { uploadDataDuringCreation: true }],
    ] as const) {
      it(`${protocol}${'uploadDataDuringCreation' in extra ? ' (data during creation)' : ''}: uploads, is aborted mid-request, resumes and completes`, async () => {
        const elementId = await createElement(h(), alice.token, { type: 'Doc' });
        const data = noise(5 * CHUNK + 12_345, protocol.length + Object.keys(extra).length);
        const exchanges: Exchange[] = [];
        let uploadId = '';
        const stall: { stalled?: Stalled } = {};

        const outcome: { resolve: (v: 'success') => void; reject: (e: Error) => void } = {
          resolve: () => {},
          reject: () => {},
        };
        let finished = new Promise<'success'>((resolve, reject) => Object.assign(outcome, { resolve, reject }));
        const upload = new tus.Upload(data, {
          endpoint: `${h().url}/${elementId}/file`,
          protocol,
          chunkSize: CHUNK,
          headers: {
            Authorization: `Bearer ${alice.token}`,
            'Content-Disposition': 'attachment; filename="measurements.csv"',
            'Repr-Digest': reprDigest(data), // sent with the creation too: checked on completion
          },
          retryDelays: null, // resumption is driven by the test
          storeFingerprintForResuming: false,
          httpStack: stallingStack(3, (stalled) => {
            stall.stalled = stalled;
          }),
          onAfterResponse: (req, res) => {
            exchanges.push({
              method: req.getMethod(),
              status: res.getStatus(),
              offset: res.getHeader('Upload-Offset'),
            });
            const location = res.getHeader('Location');
            if (req.getMethod() === 'POST' && location) uploadId = location.replace('/upload/', '');
          },
          onSuccess: () => outcome.resolve('success'),
          onError: (error) => outcome.reject(error),
          ...extra,
        } as tus.UploadOptions);
        upload.start();

        // The third PATCH hangs half-way; once the server has read the half that was sent, the client gives up on it.
        await waitFor('the client to send half of a chunk', () => stall.stalled !== undefined && uploadId !== '');
        const before = (await uploadRow(h(), uploadId))!.offset;
        const { request, half } = stall.stalled!;
        await waitFor('the server to read the half chunk', () => half.readableLength === 0 && arrived(h(), request));
        expect((await uploadRow(h(), uploadId))!.offset).toBe(before); // bytes still arriving are not counted
        await upload.abort();
        await waitFor(
          'the server to commit the bytes that arrived',
          async () => (await uploadRow(h(), uploadId))!.offset > before,
        );
        const kept = (await uploadRow(h(), uploadId))!.offset;
        expect(kept).toBeGreaterThan(before);
        expect(kept).toBeLessThan(before + CHUNK);
        expect((await blobOf(h(), uploadId))!.equals(data.subarray(0, kept))).toBe(true);

        // Resume: the client asks for the offset (HEAD) and sends the rest from there.
        finished = new Promise<'success'>((resolve, reject) => Object.assign(outcome, { resolve, reject }));
        upload.start();
        expect(await finished).toBe('success');

        const resumed = exchanges.slice(exchanges.findIndex((e) => e.method === 'HEAD'));
        expect(resumed[0]).toEqual({ method: 'HEAD', status: 204, offset: String(kept) });
        expect(resumed[1]).toMatchObject({ method: 'PATCH', status: 204 });
        expect(resumed.at(-1)).toEqual({ method: 'PATCH', status: 201, offset: String(data.length) });
        expect(exchanges[0]).toMatchObject({ method: 'POST', status: 204 });

        const element = await h().request('GET', `/${elementId}`, { token: alice.token });
        expect(element.json.file).toEqual({
          contentLength: data.length,
          extension: 'csv',
          mimeType: 'application/octet-stream',
          hash: { sha256: sha256(data).toString('hex') },
        });
        const download = await fetch(`${h().url}/${elementId}/file`, {
          headers: { authorization: `Bearer ${alice.token}` },
        });
        expect(Buffer.from(await download.arrayBuffer()).equals(data)).toBe(true);
        expect(download.headers.get('repr-digest')).toBe(reprDigest(data));
        expect(await uploadRow(h(), uploadId)).toBeNull();
        expect(await leftovers(h(), uploadId, elementId)).toEqual([]);
      });
    }

    it('a digest mismatch reaches the client as an error, and nothing is stored', async () => {
      const elementId = await createElement(h(), alice.token, { type: 'Doc' });
      const data = noise(2 * CHUNK + 10, 77);
      let uploadId = '';
      const error = await new Promise<Error>((resolve, reject) => {
        new tus.Upload(data, {
          endpoint: `${h().url}/${elementId}/file`,
          protocol: 'ietf-draft-05',
          chunkSize: CHUNK,
          headers: { Authorization: `Bearer ${alice.token}`, 'Repr-Digest': reprDigest(Buffer.from('other bytes')) },
          retryDelays: null,
          onAfterResponse: (req, res) => {
            const location = res.getHeader('Location');
            if (req.getMethod() === 'POST' && location) uploadId = location.replace('/upload/', '');
          },
          onSuccess: () => reject(new Error('the upload should have failed')),
          onError: resolve,
        } as tus.UploadOptions).start();
      });
      expect(String(error)).toMatch(/response code: 400/);
      expect((await h().request('GET', `/${elementId}`, { token: alice.token })).json.data.hasFile).toBeUndefined();
      // The upload starts over at offset 0: its chunks are discarded, and the element got no file.
      expect((await uploadRow(h(), uploadId))!.offset).toBe(0);
      expect(await blobOf(h(), uploadId)).toBeNull();
      expect(await leftovers(h(), uploadId, elementId)).toEqual([]);
    });
  },
  { settings, blobs: true },
);
