import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, validateSettings } from '../../../src/config/load.js';

const keyOf = (input: unknown) => {
  try {
    validateSettings(input);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).key;
  }
  return null;
};

describe('configuration', () => {
  it('fills the defaults of DESIGN.md', () => {
    const s = validateSettings({});
    expect(s.file).toEqual({
      maxFileSizeInBytes: 10 * 1024 ** 3,
      uploadMinChunkSizeInBytes: 5 * 1024 ** 2,
      uploadMaxChunkSizeInBytes: 101 * 1024 ** 2,
      uploadChunkDigitsLength: 4,
      uploadExpiresInSecondsAfterFirstRequest: 10800,
      expiredUploadCanBeDeletedAfterExpirationInSeconds: 3600,
      maxConcurrentUploads: 64,
      storage: 'disk',
      s3: { endpoint: null, region: 'us-east-1', bucket: null, prefix: '', timeoutInSeconds: 30 },
    });
    expect(s.server).toEqual({
      maxConnections: 1000,
      bodyIdleTimeoutInSeconds: 30,
      bodyMinBytesPerSecond: 4096,
      bodyRateWindowInSeconds: 30,
    });
    expect(s.pageSize).toEqual({ min: 5, default: 25, max: 100 });
    expect(s.register).toEqual({
      enabled: true,
      uniqueIdentifier: 'email',
      uniqueIdentifierRegex: false,
      minPasswordLength: 8,
      throttle: { enabled: true, registrationsPerAddress: 20, windowInSeconds: 600 },
    });
    expect(s.passwordHashing).toEqual({ workers: 'auto', maxQueued: 100 });
    expect(s.login.throttle).toEqual({
      enabled: true,
      freeFailuresPerIdentifier: 5,
      maxDelayPerIdentifierInSeconds: 60,
      freeFailuresPerAddress: 10,
      maxDelayPerAddressInSeconds: 300,
      forgetFailuresAfterSeconds: 900,
    });
    expect(s.token).toEqual({
      minLifetimeInSeconds: 1800,
      defaultLifetimeInSeconds: 10800,
      maxLifetimeInSeconds: 34214400,
      deleteExpiredTokensAutomaticallyInSeconds: 1209600,
    });
    expect(s.expression).toEqual({ enabled: true, maxLength: 10240 });
    expect(s.instanceConfiguration).toEqual({ enabled: true, showVersion: true });
    expect(s.cache).toEqual({ etagUpperLimitInCollectionEndpoints: 100 });
    expect(s.database).toEqual({
      poolSize: 'auto',
      embeddedCacheSizeInMiB: 'auto',
      connectTimeoutInSeconds: 5,
      statementTimeoutInSeconds: 30,
    });
    expect(validateSettings({ database: { poolSize: 3 } }).database.poolSize).toBe(3);
    expect(validateSettings({ database: { embeddedCacheSizeInMiB: 512 } }).database).toMatchObject({
      poolSize: 'auto',
      embeddedCacheSizeInMiB: 512,
    });
    const bounds = { connectTimeoutInSeconds: 0.5, statementTimeoutInSeconds: 0 };
    expect(validateSettings({ database: bounds }).database).toMatchObject(bounds);
    expect(s.securityTxt).toMatch(/assets\/security\.txt$/);
    expect(validateSettings({ securityTxt: null }).securityTxt).toBeNull();
  });

  it('names the offending key for every kind of mistake', () => {
    expect(keyOf({ file: { uploadMinChunkSizeInBytes: -1 } })).toBe('file.uploadMinChunkSizeInBytes');
    expect(keyOf({ file: { maxFileSizeInBytes: 'big' } })).toBe('file.maxFileSizeInBytes');
    expect(keyOf({ file: { maxFileSizeInBytes: 6 * 1024 ** 4 } })).toBe('file.maxFileSizeInBytes');
    expect(
      keyOf({ file: { maxFileSizeInBytes: 1024, uploadMaxChunkSizeInBytes: 2048, uploadMinChunkSizeInBytes: 10 } }),
    ).toBe('file.uploadMaxChunkSizeInBytes');
    expect(
      keyOf({ file: { uploadMinChunkSizeInBytes: 200 * 1024 ** 2, uploadMaxChunkSizeInBytes: 100 * 1024 ** 2 } }),
    ).toBe('file.uploadMinChunkSizeInBytes');
    expect(keyOf({ pageSize: { min: 50, max: 10, default: 20 } })).toBe('pageSize.min');
    expect(
      keyOf({ token: { minLifetimeInSeconds: 100, maxLifetimeInSeconds: 50, defaultLifetimeInSeconds: 60 } }),
    ).toBe('token.minLifetimeInSeconds');
    expect(keyOf({ unknownKey: 1 })).toBe('unknownKey');
    expect(keyOf({ file: { nope: 1 } })).toBe('file.nope');
    const reason = (input: unknown) => {
      try {
        validateSettings(input);
      } catch (error) {
        return (error as Error).message;
      }
      return null;
    };
    expect(reason({ fiel: 1 })).toMatch(/fiel: unknown key/);
    expect(reason({ file: { maxFileSize: 1 } })).toMatch(/file\.maxFileSize: unknown key/);
    expect(keyOf({ register: { uniqueIdentifierRegex: '([' } })).toBe('register.uniqueIdentifierRegex');
    expect(keyOf({ securityTxt: '/does/not/exist' })).toBe('securityTxt');
    expect(keyOf({ register: { minPasswordLength: 0 } })).toBe('register.minPasswordLength');
    expect(keyOf({ login: { throttle: { forgetFailuresAfterSeconds: 120, maxDelayPerAddressInSeconds: 300 } } })).toBe(
      'login.throttle.forgetFailuresAfterSeconds',
    );
    expect(keyOf({ login: { throttle: { enabled: 'yes' } } })).toBe('login.throttle.enabled');
    expect(keyOf({ baseUrl: 'ftp://x' })).toBe('baseUrl');
    expect(keyOf({ file: { uploadMaxChunkSizeInBytes: 0 } })).toBe('file.uploadMaxChunkSizeInBytes');
    expect(keyOf({ database: { poolSize: 0 } })).toBe('database.poolSize');
    expect(keyOf({ database: { poolSize: 'many' } })).toBe('database.poolSize');
    expect(keyOf({ database: { embeddedCacheSizeInMiB: 8 } })).toBe('database.embeddedCacheSizeInMiB');
    expect(keyOf({ database: { embeddedCacheSizeInMiB: 2048 } })).toBe('database.embeddedCacheSizeInMiB');
    expect(keyOf({ database: { embeddedCacheSizeInMiB: '512MB' } })).toBe('database.embeddedCacheSizeInMiB');
    expect(keyOf({ database: { connectTimeoutInSeconds: 0.01 } })).toBe('database.connectTimeoutInSeconds');
    expect(keyOf({ database: { statementTimeoutInSeconds: -1 } })).toBe('database.statementTimeoutInSeconds');
    // Durations end up in stored timestamps: longer than 100 years would make dates no backup can hold.
    expect(keyOf({ token: { maxLifetimeInSeconds: 10_000_000_000_000 } })).toBe('token.maxLifetimeInSeconds');
    expect(keyOf({ token: { deleteExpiredTokensAutomaticallyInSeconds: 300_000_000_000 } })).toBe(
      'token.deleteExpiredTokensAutomaticallyInSeconds',
    );
    expect(keyOf({ file: { uploadExpiresInSecondsAfterFirstRequest: 300_000_000_000 } })).toBe(
      'file.uploadExpiresInSecondsAfterFirstRequest',
    );
    expect(keyOf({ token: { maxLifetimeInSeconds: 100 * 365 * 24 * 3600 } })).toBeNull();
    // The identifier is a property of the User: not one the service sets itself.
    for (const key of ['created', 'updated', 'id', 'file', 'hasFile'])
      expect(keyOf({ register: { uniqueIdentifier: key } })).toBe('register.uniqueIdentifier');
  });

  it('reads YAML from TRELLIS_CONFIG and the environment', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-config-'));
    const path = join(dir, 'trellis.yaml');
    await writeFile(path, 'pageSize:\n  default: 10\nfile:\n  maxFileSizeInBytes: 1048576000\n');
    const config = loadConfig({
      TRELLIS_CONFIG: path,
      PORT: '9090',
      HOST: '0.0.0.0',
      DATA_DIR: dir,
      ANONYMOUS_USER_UUID: '2D376349-C5E2-42C8-8CE0-D6F525256CF7',
    });
    expect(config.settings.pageSize.default).toBe(10);
    expect(config.settings.file.maxFileSizeInBytes).toBe(1048576000);
    expect(config.runtime).toMatchObject({
      port: 9090,
      host: '0.0.0.0',
      dataDir: dir,
      databaseUrl: null,
      anonymousUserId: '2d376349-c5e2-42c8-8ce0-d6f525256cf7',
    });
    await writeFile(path, 'file: [unclosed');
    expect(() => loadConfig({ TRELLIS_CONFIG: path })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'x' })).toThrow(/PORT/);
    expect(() => loadConfig({ ANONYMOUS_USER_UUID: 'nope' })).toThrow(/ANONYMOUS_USER_UUID/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    await rm(dir, { recursive: true, force: true });
  });

  it('takes the object store from the settings and its credentials only from the environment', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-config-'));
    const path = join(dir, 'trellis.yaml');
    await writeFile(
      path,
      'file:\n  storage: s3\n  s3:\n    endpoint: http://127.0.0.1:7480\n    bucket: files\n    prefix: a/b\n',
    );
    const env = { TRELLIS_CONFIG: path, AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'secret' };
    const config = loadConfig(env);
    expect(config.settings.file).toMatchObject({
      storage: 's3',
      s3: { endpoint: 'http://127.0.0.1:7480', region: 'us-east-1', bucket: 'files', prefix: 'a/b' },
    });
    expect(config.runtime.s3Credentials).toEqual({ accessKeyId: 'AKID', secretAccessKey: 'secret' });
    expect(() => loadConfig({ TRELLIS_CONFIG: path })).toThrow(/AWS_ACCESS_KEY_ID: must be set/);
    expect(() => loadConfig({ ...env, AWS_SECRET_ACCESS_KEY: '' })).toThrow(/AWS_SECRET_ACCESS_KEY/);
    // Credentials have no place in the settings file.
    expect(() => validateSettings({ file: { s3: { accessKeyId: 'AKID' } } })).toThrow(
      /file\.s3\.accessKeyId: unknown key/,
    );
    expect(() => validateSettings({ file: { storage: 's3' } })).toThrow(/file\.s3\.bucket: must be set/);
    expect(() => validateSettings({ file: { storage: 'cloud' } })).toThrow(/file\.storage/);
    expect(() => validateSettings({ file: { s3: { prefix: '/abs' } } })).toThrow(/file\.s3\.prefix/);
    expect(() => validateSettings({ file: { s3: { endpoint: 'ftp://x' } } })).toThrow(/file\.s3\.endpoint/);
    await rm(dir, { recursive: true, force: true });
  });
});
