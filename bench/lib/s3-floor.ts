// The S3 floor of the file scenarios on the object store, in its own process: the same transfer made with the SDK
// alone, as Trellis makes it (the same part size and queue), with no HTTP server in between.
//   node --import tsx bench/lib/s3-floor.ts '<json>'
// json: {endpoint, accessKeyId, secretAccessKey, bucket, key, direction: 'upload' | 'download', file?}
// Prints one line "BENCHJSON {seconds, bytes}".
import { createReadStream } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { PART_BYTES, QUEUE } from '../../src/blob/s3-blob-store.js';

const job = JSON.parse(process.argv[2]!) as {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
  key: string;
  direction: 'upload' | 'download';
  file?: string;
};
const client = new S3Client({
  endpoint: job.endpoint,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: job.accessKeyId, secretAccessKey: job.secretAccessKey },
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});
const started = process.hrtime.bigint();
let bytes = 0;
if (job.direction === 'upload') {
  const body = createReadStream(job.file!, { highWaterMark: 1 << 20 });
  body.on('data', (chunk) => {
    bytes += chunk.length;
  });
  const upload = new Upload({
    client,
    params: { Bucket: job.bucket, Key: job.key, Body: body },
    partSize: PART_BYTES,
    queueSize: QUEUE,
  });
  await upload.done();
} else {
  const out = await client.send(new GetObjectCommand({ Bucket: job.bucket, Key: job.key }));
  await pipeline(
    out.Body as NodeJS.ReadableStream,
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        bytes += chunk.length;
        callback();
      },
    }),
  );
}
client.destroy();
process.stdout.write(
  `BENCHJSON ${JSON.stringify({ seconds: Number(process.hrtime.bigint() - started) / 1e9, bytes })}\n`,
);
