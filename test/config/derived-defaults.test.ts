// Defaults bounded by other settings follow them: a setting given alone is never refused because a default of
// another key contradicts it (the default moves into the range the given settings allow). Only settings given
// explicitly can contradict each other; that is still refused, naming the key and the value it contradicts.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, validateSettings } from '../../src/config/load.js';
import { runCli, serveInstance } from '../helpers/process.js';

const MiB = 1024 * 1024;

const refusal = (input: unknown) => {
  try {
    validateSettings(input);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return { key: (error as ConfigError).key, message: (error as Error).message };
  }
  return null;
};

describe('derived defaults', () => {
  describe('file chunk limits', () => {
    it('a lone file.maxFileSizeInBytes below the default chunk limits brings them down to it', () => {
      expect(validateSettings({ file: { maxFileSizeInBytes: MiB } }).file).toMatchObject({
        maxFileSizeInBytes: MiB,
        uploadMinChunkSizeInBytes: MiB,
        uploadMaxChunkSizeInBytes: MiB,
      });
      expect(validateSettings({ file: { maxFileSizeInBytes: 50 * MiB } }).file).toMatchObject({
        uploadMinChunkSizeInBytes: 5 * MiB,
        uploadMaxChunkSizeInBytes: 50 * MiB,
      });
      expect(validateSettings({ file: { maxFileSizeInBytes: 0 } }).file).toMatchObject({
        // The maximum chunk's own minimum is one byte; the minimum chunk follows it.
        uploadMinChunkSizeInBytes: 1,
        uploadMaxChunkSizeInBytes: 1,
      });
    });

    it('the default minimum chunk follows a given maximum chunk, and the default maximum a given minimum', () => {
      expect(validateSettings({ file: { uploadMaxChunkSizeInBytes: 2 * MiB } }).file).toMatchObject({
        uploadMinChunkSizeInBytes: 2 * MiB,
        uploadMaxChunkSizeInBytes: 2 * MiB,
      });
      expect(validateSettings({ file: { uploadMinChunkSizeInBytes: 200 * MiB } }).file).toMatchObject({
        uploadMinChunkSizeInBytes: 200 * MiB,
        uploadMaxChunkSizeInBytes: 200 * MiB,
      });
      expect(
        validateSettings({ file: { maxFileSizeInBytes: 3 * MiB, uploadMinChunkSizeInBytes: MiB } }).file,
      ).toMatchObject({ uploadMinChunkSizeInBytes: MiB, uploadMaxChunkSizeInBytes: 3 * MiB });
    });

    it('still refuses explicit settings that contradict each other, naming both and their values', () => {
      expect(refusal({ file: { maxFileSizeInBytes: MiB, uploadMaxChunkSizeInBytes: 2 * MiB } })).toEqual({
        key: 'file.uploadMaxChunkSizeInBytes',
        message:
          'invalid configuration: file.uploadMaxChunkSizeInBytes: 2097152 exceeds file.maxFileSizeInBytes (1048576)',
      });
      expect(refusal({ file: { uploadMinChunkSizeInBytes: 3 * MiB, uploadMaxChunkSizeInBytes: 2 * MiB } })).toEqual({
        key: 'file.uploadMinChunkSizeInBytes',
        message:
          'invalid configuration: file.uploadMinChunkSizeInBytes: 3145728 exceeds file.uploadMaxChunkSizeInBytes (2097152)',
      });
      // A given minimum above a given file limit: the maximum chunk follows the file limit, the minimum contradicts it.
      expect(refusal({ file: { maxFileSizeInBytes: MiB, uploadMinChunkSizeInBytes: 2 * MiB } })).toEqual({
        key: 'file.uploadMinChunkSizeInBytes',
        message:
          'invalid configuration: file.uploadMinChunkSizeInBytes: 2097152 exceeds file.uploadMaxChunkSizeInBytes (1048576, which follows file.maxFileSizeInBytes when not set)',
      });
    });
  });

  describe('page sizes', () => {
    it('the unset ones move into the range of the given ones', () => {
      expect(validateSettings({ pageSize: { max: 3 } }).pageSize).toEqual({ min: 3, default: 3, max: 3 });
      expect(validateSettings({ pageSize: { max: 10 } }).pageSize).toEqual({ min: 5, default: 10, max: 10 });
      expect(validateSettings({ pageSize: { min: 50 } }).pageSize).toEqual({ min: 50, default: 50, max: 100 });
      expect(validateSettings({ pageSize: { min: 200 } }).pageSize).toEqual({ min: 200, default: 200, max: 200 });
      expect(validateSettings({ pageSize: { default: 500 } }).pageSize).toEqual({ min: 5, default: 500, max: 500 });
      expect(validateSettings({ pageSize: { default: 2 } }).pageSize).toEqual({ min: 2, default: 2, max: 100 });
    });

    it('given ones that contradict each other are refused', () => {
      expect(refusal({ pageSize: { min: 50, max: 10 } })?.key).toBe('pageSize.min');
      expect(refusal({ pageSize: { default: 200, max: 100 } })).toEqual({
        key: 'pageSize.default',
        message:
          'invalid configuration: pageSize.default: 200 must lie between pageSize.min (5) and pageSize.max (100)',
      });
    });
  });

  describe('token lifetimes', () => {
    it('the unset ones move into the range of the given ones', () => {
      expect(validateSettings({ token: { maxLifetimeInSeconds: 3600 } }).token).toMatchObject({
        minLifetimeInSeconds: 1800,
        defaultLifetimeInSeconds: 3600,
        maxLifetimeInSeconds: 3600,
      });
      expect(validateSettings({ token: { maxLifetimeInSeconds: 600 } }).token).toMatchObject({
        minLifetimeInSeconds: 600,
        defaultLifetimeInSeconds: 600,
        maxLifetimeInSeconds: 600,
      });
      expect(validateSettings({ token: { minLifetimeInSeconds: 86400 } }).token).toMatchObject({
        minLifetimeInSeconds: 86400,
        defaultLifetimeInSeconds: 86400,
        maxLifetimeInSeconds: 34214400,
      });
      expect(validateSettings({ token: { defaultLifetimeInSeconds: 60 } }).token).toMatchObject({
        minLifetimeInSeconds: 60,
        defaultLifetimeInSeconds: 60,
      });
    });

    it('given ones that contradict each other are refused', () => {
      expect(refusal({ token: { minLifetimeInSeconds: 100, maxLifetimeInSeconds: 50 } })?.key).toBe(
        'token.minLifetimeInSeconds',
      );
      expect(refusal({ token: { defaultLifetimeInSeconds: 60, minLifetimeInSeconds: 100 } })?.key).toBe(
        'token.defaultLifetimeInSeconds',
      );
    });
  });

  describe('login throttle', () => {
    it('failures are remembered at least as long as the longest delay, and the default delays fit a given memory', () => {
      expect(
        validateSettings({ login: { throttle: { maxDelayPerAddressInSeconds: 3600 } } }).login.throttle,
      ).toMatchObject({ maxDelayPerIdentifierInSeconds: 60, forgetFailuresAfterSeconds: 3600 });
      expect(
        validateSettings({ login: { throttle: { forgetFailuresAfterSeconds: 120 } } }).login.throttle,
      ).toMatchObject({
        maxDelayPerIdentifierInSeconds: 60,
        maxDelayPerAddressInSeconds: 120,
        forgetFailuresAfterSeconds: 120,
      });
    });

    it('given ones that contradict each other are refused', () => {
      expect(
        refusal({ login: { throttle: { maxDelayPerAddressInSeconds: 300, forgetFailuresAfterSeconds: 120 } } }),
      ).toEqual({
        key: 'login.throttle.forgetFailuresAfterSeconds',
        message:
          'invalid configuration: login.throttle.forgetFailuresAfterSeconds: 120 is shorter than login.throttle.maxDelayPerAddressInSeconds (300)',
      });
    });
  });

  describe('the real CLI', () => {
    it('starts with a lone file.maxFileSizeInBytes and publishes the chunk limits that follow it', async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'trellis-derived-'));
      try {
        const server = await serveInstance(dataDir, { file: { maxFileSizeInBytes: MiB } });
        try {
          const res = await fetch(`${server.url}/instance-configuration`);
          expect(res.status).toBe(200);
          expect(((await res.json()) as { file: unknown }).file).toMatchObject({
            maxFileSizeInBytes: MiB,
            uploadMinChunkSizeInBytes: MiB,
            uploadMaxChunkSizeInBytes: MiB,
          });
        } finally {
          server.kill('SIGTERM');
          expect((await server.done).code).toBe(0);
        }
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    }, 180_000);

    it('config:check refuses explicit contradictions with exit 78 and one line', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'trellis-derived-'));
      try {
        const path = join(dir, 'trellis.yaml');
        await writeFile(path, 'file:\n  maxFileSizeInBytes: 1048576\n  uploadMaxChunkSizeInBytes: 2097152\n');
        const bad = await runCli(['config:check'], { TRELLIS_CONFIG: path });
        expect(bad.code).toBe(78);
        expect(bad.stderr.trim()).toBe(
          'trellis: invalid configuration: file.uploadMaxChunkSizeInBytes: 2097152 exceeds file.maxFileSizeInBytes (1048576)',
        );
        await writeFile(path, 'file:\n  maxFileSizeInBytes: 1048576\n');
        const good = await runCli(['config:check'], { TRELLIS_CONFIG: path });
        expect(good.code).toBe(0);
        expect(JSON.parse(good.stdout.slice(0, good.stdout.lastIndexOf('}') + 1)).file).toMatchObject({
          maxFileSizeInBytes: MiB,
          uploadMinChunkSizeInBytes: MiB,
          uploadMaxChunkSizeInBytes: MiB,
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, 60_000);
  });
});
