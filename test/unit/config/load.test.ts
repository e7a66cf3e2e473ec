import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
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
      trustedProxies: [],
      forwardedHeader: 'x-forwarded-for',
    });
    expect(s.pageSize).toEqual({ min: 5, default: 25, max: 100 });
    expect(s.register).toEqual({
      enabled: true,
      uniqueIdentifier: 'email',
      uniqueIdentifierRegex: false,
      minPasswordLength: 8,
      throttle: { enabled: true, registrationsPerAddress: 20, windowInSeconds: 600 },
      principalLookup: { lookupsPerWindow: 30, windowInSeconds: 60 },
    });
    expect(s.events).toEqual({
      retentionInSeconds: 86_400,
      maxSubscribers: 500,
      maxSubscribersPerUser: 32,
      heartbeatInSeconds: 15,
      maxBufferedBytes: 1024 * 1024,
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
      embeddedDurable: true,
      connectTimeoutInSeconds: 5,
      statementTimeoutInSeconds: 5,
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
    expect(keyOf({ database: { embeddedDurable: 'no' } })).toBe('database.embeddedDurable');
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

// Defaults bounded by other settings follow them: a setting given alone is never refused because a default of
// another key contradicts it (the default moves into the range the given settings allow). Only settings given
// explicitly can contradict each other; that is still refused, naming the key and the value it contradicts.
// (test/config/derived-defaults.test.ts runs the real CLI with them.)
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

describe('validateSettings, further', () => {
  it('takes no settings (an empty YAML file) as all defaults, and refuses anything but a mapping at the root', () => {
    expect(validateSettings(null)).toEqual(validateSettings({}));
    expect(validateSettings(undefined)).toEqual(validateSettings({}));
    for (const input of [[], 'text', 3])
      expect(() => validateSettings(input)).toThrow(new ConfigError('(root)', 'must be a mapping of keys'));
    expect(() => validateSettings([])).toThrow('invalid configuration: (root): must be a mapping of keys');
  });

  it('serves the shipped security.txt by default, a given file, or none for null', async () => {
    expect(validateSettings({}).securityTxt).toMatch(/[/\\]assets[/\\]security\.txt$/);
    expect(validateSettings({ securityTxt: null }).securityTxt).toBeNull();
    const dir = await mkdtemp(join(tmpdir(), 'trellis-config-'));
    try {
      const path = join(dir, 'security.txt');
      await writeFile(path, 'Contact: mailto:security@example.org\n');
      expect(validateSettings({ securityTxt: path }).securityTxt).toBe(path);
      expect(() => validateSettings({ securityTxt: join(dir, 'missing.txt') })).toThrow(
        new RegExp(`^invalid configuration: securityTxt: cannot read ${join(dir, 'missing.txt')}: ENOENT`),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('takes trusted proxies as addresses, CIDR ranges and names, IPv4 and IPv6, and refuses anything else', () => {
    const server = validateSettings({
      server: {
        trustedProxies: ['10.0.0.7', '10.1.0.0/16', '::1', '2001:db8::/32', 'fd00::/8', 'loopback', 'uniquelocal'],
        forwardedHeader: 'forwarded',
      },
    }).server;
    expect(server.trustedProxies).toHaveLength(7);
    expect(server.forwardedHeader).toBe('forwarded');
    for (const entry of ['10.0.0.300', '10.0.0.0/33', '2001:db8::/129', 'proxy.example', '10.0.0.0/x', ''])
      expect(keyOf({ server: { trustedProxies: ['127.0.0.1', entry] } })).toBe(
        entry === '' ? 'server.trustedProxies.1' : 'server.trustedProxies',
      );
    expect(() => validateSettings({ server: { trustedProxies: ['10.0.0.300'] } })).toThrow(
      "invalid configuration: server.trustedProxies: '10.0.0.300' is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal (invalid IP address: 10.0.0.300)",
    );
    expect(keyOf({ server: { trustedProxies: '10.0.0.1' } })).toBe('server.trustedProxies');
    expect(keyOf({ server: { forwardedHeader: 'x-real-ip' } })).toBe('server.forwardedHeader');
  });

  it('drops the trailing slashes of baseUrl', () => {
    expect(validateSettings({ baseUrl: 'https://trellis.example.org/base//' }).baseUrl).toBe(
      'https://trellis.example.org/base',
    );
    expect(validateSettings({}).baseUrl).toBeNull();
  });

  it('says why in the message, with the values that contradict each other', () => {
    const message = (input: unknown) => refusal(input)?.message;
    expect(message({ pageSize: { min: 50, max: 10 } })).toBe(
      'invalid configuration: pageSize.min: 50 exceeds pageSize.max (10)',
    );
    expect(message({ pageSize: { min: 5, max: 10, default: 20 } })).toBe(
      'invalid configuration: pageSize.default: 20 must lie between pageSize.min (5) and pageSize.max (10)',
    );
    expect(message({ file: { maxFileSizeInBytes: 6 * 1024 ** 4 } })).toBe(
      'invalid configuration: file.maxFileSizeInBytes: exceeds the storage ceiling of 5497558138880 bytes (5 TiB)',
    );
    expect(message({ register: { uniqueIdentifier: 'created' } })).toBe(
      "invalid configuration: register.uniqueIdentifier: 'created' is a property the service sets on every element",
    );
    expect(message({ register: { uniqueIdentifierRegex: '([' } })).toMatch(
      /^invalid configuration: register\.uniqueIdentifierRegex: not a valid regular expression: /,
    );
    expect(message({ file: { storage: 's3' } })).toBe(
      "invalid configuration: file.s3.bucket: must be set when file.storage is 's3'",
    );
  });
});

describe('loadConfig, further', () => {
  it('has the runtime defaults of an empty environment', () => {
    const { runtime, settings } = loadConfig({});
    expect(runtime).toEqual({
      s3Credentials: null,
      port: 8080,
      host: '127.0.0.1',
      dataDir: resolve('./data'),
      databaseUrl: null,
      anonymousUserId: null,
      logLevel: 'info',
      configPath: null,
      otlpTracesUrl: null,
      webhookKey: null,
    });
    expect(settings).toEqual(validateSettings({}));
  });

  it('reads TRELLIS_WEBHOOK_KEY as 32 bytes in base64, and checks webhooks.allowedHosts', () => {
    const key = Buffer.alloc(32, 7);
    expect(loadConfig({ TRELLIS_WEBHOOK_KEY: key.toString('base64') }).runtime.webhookKey).toEqual(key);
    for (const bad of [Buffer.alloc(16).toString('base64'), 'not base64 at all!'])
      expect(() => loadConfig({ TRELLIS_WEBHOOK_KEY: bad })).toThrow(
        /^invalid configuration: TRELLIS_WEBHOOK_KEY: must be 32 bytes in base64/,
      );
    expect(
      validateSettings({ webhooks: { allowedHosts: ['hooks.internal', '10.0.0.0/8'] } }).webhooks.allowedHosts,
    ).toEqual(['hooks.internal', '10.0.0.0/8']);
    expect(() => validateSettings({ webhooks: { allowedHosts: ['10.0.0.0/40'] } })).toThrow(
      /webhooks\.allowedHosts: '10\.0\.0\.0\/40' is not a host name, an IP address or a CIDR range/,
    );
  });

  it('reads the database URL, log level, session token and port bounds from the environment', () => {
    const { runtime } = loadConfig({
      DATABASE_URL: 'postgresql://trellis@db/trellis',
      LOG_LEVEL: 'debug',
      PORT: '0',
      AWS_ACCESS_KEY_ID: 'AKID',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_SESSION_TOKEN: 'session',
    });
    expect(runtime).toMatchObject({
      databaseUrl: 'postgresql://trellis@db/trellis',
      logLevel: 'debug',
      port: 0,
      s3Credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'session' },
    });
    // Empty variables count as unset.
    expect(loadConfig({ PORT: '', LOG_LEVEL: '', DATABASE_URL: '' }).runtime).toMatchObject({
      port: 8080,
      logLevel: 'info',
      databaseUrl: null,
    });
    const refused = (env: NodeJS.ProcessEnv) => {
      try {
        loadConfig(env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      return null;
    };
    expect(refused({ PORT: '65536' })).toBe('invalid configuration: PORT: must be an integer between 0 and 65535');
    expect(refused({ PORT: '-1' })).toBe('invalid configuration: PORT: must be an integer between 0 and 65535');
    expect(refused({ LOG_LEVEL: 'verbose' })).toBe(
      'invalid configuration: LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent',
    );
    expect(refused({ AWS_SECRET_ACCESS_KEY: 'secret' })).toBe(
      'invalid configuration: AWS_ACCESS_KEY_ID: must be set together with the other',
    );
    expect(refused({ DATABASE_URL: 'mysql://x' })).toBe(
      'invalid configuration: DATABASE_URL: must be a postgres:// or postgresql:// URL',
    );
    expect(refused({ ANONYMOUS_USER_UUID: 'nope' })).toBe('invalid configuration: ANONYMOUS_USER_UUID: must be a UUID');
  });

  it('names the settings file it cannot read or parse', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-config-'));
    try {
      const missing = join(dir, 'missing.yaml');
      expect(() => loadConfig({ TRELLIS_CONFIG: missing })).toThrow(
        new RegExp(`^invalid configuration: TRELLIS_CONFIG: cannot read ${missing}: ENOENT`),
      );
      const broken = join(dir, 'broken.yaml');
      await writeFile(broken, 'file: [unclosed');
      expect(() => loadConfig({ TRELLIS_CONFIG: broken })).toThrow(
        new RegExp(`^invalid configuration: TRELLIS_CONFIG: ${broken} is not valid YAML: `),
      );
      const empty = join(dir, 'empty.yaml');
      await writeFile(empty, '');
      expect(loadConfig({ TRELLIS_CONFIG: empty }).runtime.configPath).toBe(empty);
      expect(loadConfig({ TRELLIS_CONFIG: empty }).settings).toEqual(validateSettings({}));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

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
});
