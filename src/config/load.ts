// Reads and validates the configuration once, at start-up. The result is passed in to everything that needs it;
// this is the only module that looks at the environment.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import proxyAddr from '@fastify/proxy-addr';
import Value from 'typebox/value';
import { parse as parseYaml } from 'yaml';
import { validAllowedHost } from '../outbound/address-policy.js';
import { BASE_RESERVED, isUuid } from '../values.js';
import { type Config, type Runtime, type Settings, SettingsSchema, STORAGE_CEILING_BYTES } from './schema.js';

export class ConfigError extends Error {
  constructor(
    readonly key: string,
    reason: string,
  ) {
    super(`invalid configuration: ${key}: ${reason}`);
    this.name = 'ConfigError';
  }
}

/** The security.txt shipped with Trellis (assets/ at the package root, two levels above src/config or dist/config). */
const DEFAULT_SECURITY_TXT = fileURLToPath(new URL('../../assets/security.txt', import.meta.url));

function keyOf(instancePath: string): string {
  return instancePath.replace(/^\//, '').replaceAll('/', '.') || '(root)';
}

/** Validates a settings object (as parsed from YAML), fills defaults and checks the cross-key rules. */
export function validateSettings(input: unknown): Settings {
  const raw = input === null || input === undefined ? {} : input;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError('(root)', 'must be a mapping of keys');
  const value = Value.Default(SettingsSchema, Value.Clone(raw)) as Record<string, unknown>;
  // Absent means the shipped default file; an explicit null means "serve none" (404).
  if (!('securityTxt' in (raw as object))) value.securityTxt = DEFAULT_SECURITY_TXT;
  throwFirstSchemaError(value);
  const settings = value as Settings;
  followGivenSettings(raw as Record<string, unknown>, settings);
  const given = (path: string) => isGiven(raw as Record<string, unknown>, path);
  checkRanges(settings, given);
  checkAccountRules(settings);
  checkTrustedProxies(settings.server.trustedProxies);
  for (const entry of settings.webhooks.allowedHosts)
    if (!validAllowedHost(entry))
      throw new ConfigError('webhooks.allowedHosts', `'${entry}' is not a host name, an IP address or a CIDR range`);
  if (settings.file.storage === 's3' && settings.file.s3.bucket === null)
    throw new ConfigError('file.s3.bucket', "must be set when file.storage is 's3'");
  if (settings.baseUrl !== null) settings.baseUrl = settings.baseUrl.replace(/\/+$/, '');
  return settings;
}

/** The first error of the schema's, as the operator reads it: the dotted key and what is wrong with it. */
function throwFirstSchemaError(value: unknown): void {
  const errors = Value.Errors(SettingsSchema, value);
  if (errors.length > 0) {
    const first = errors[0]!;
    // This TypeBox reports an unknown key twice: as the key failing `additionalProperties: false` ("schema is
    // false", at the key's path), then as the object's additionalProperties error.
    if (first.keyword === 'boolean' && first.schemaPath.endsWith('/additionalProperties'))
      throw new ConfigError(keyOf(first.instancePath), 'unknown key');
    if (first.keyword === 'additionalProperties') {
      const extra = (first.params as { additionalProperties: string[] }).additionalProperties[0];
      const prefix = keyOf(first.instancePath);
      throw new ConfigError(prefix === '(root)' ? String(extra) : `${prefix}.${extra}`, 'unknown key');
    }
    throw new ConfigError(keyOf(first.instancePath), first.message);
  }
}

/** Settings that bound each other (a minimum below its maximum, a default between them). */
function checkRanges(settings: Settings, given: (path: string) => boolean): void {
  const f = settings.file;
  if (f.maxFileSizeInBytes > STORAGE_CEILING_BYTES)
    throw new ConfigError(
      'file.maxFileSizeInBytes',
      `exceeds the storage ceiling of ${STORAGE_CEILING_BYTES} bytes (5 TiB)`,
    );
  // A maximum chunk derived from a file limit of 0 stays at its own minimum of one byte: no contradiction.
  if (given('file.uploadMaxChunkSizeInBytes') && f.uploadMaxChunkSizeInBytes > f.maxFileSizeInBytes)
    throw new ConfigError(
      'file.uploadMaxChunkSizeInBytes',
      `${f.uploadMaxChunkSizeInBytes} exceeds file.maxFileSizeInBytes (${f.maxFileSizeInBytes})`,
    );
  if (f.uploadMinChunkSizeInBytes > f.uploadMaxChunkSizeInBytes)
    throw new ConfigError(
      'file.uploadMinChunkSizeInBytes',
      `${f.uploadMinChunkSizeInBytes} exceeds file.uploadMaxChunkSizeInBytes (${f.uploadMaxChunkSizeInBytes}${
        given('file.uploadMaxChunkSizeInBytes') ? '' : ', which follows file.maxFileSizeInBytes when not set'
      })`,
    );
  const p = settings.pageSize;
  if (p.min > p.max) throw new ConfigError('pageSize.min', `${p.min} exceeds pageSize.max (${p.max})`);
  if (p.default < p.min || p.default > p.max)
    throw new ConfigError(
      'pageSize.default',
      `${p.default} must lie between pageSize.min (${p.min}) and pageSize.max (${p.max})`,
    );
  const t = settings.token;
  if (t.minLifetimeInSeconds > t.maxLifetimeInSeconds)
    throw new ConfigError(
      'token.minLifetimeInSeconds',
      `${t.minLifetimeInSeconds} exceeds token.maxLifetimeInSeconds (${t.maxLifetimeInSeconds})`,
    );
  if (t.defaultLifetimeInSeconds < t.minLifetimeInSeconds || t.defaultLifetimeInSeconds > t.maxLifetimeInSeconds)
    throw new ConfigError(
      'token.defaultLifetimeInSeconds',
      `${t.defaultLifetimeInSeconds} must lie between token.minLifetimeInSeconds (${t.minLifetimeInSeconds}) and token.maxLifetimeInSeconds (${t.maxLifetimeInSeconds})`,
    );
}

/** The log-in back-off, the identifier key and pattern, and the security.txt file. */
function checkAccountRules(settings: Settings): void {
  // A counter forgotten before its longest delay has passed would never let the delay grow to its maximum.
  const lt = settings.login.throttle;
  const [delayKey, delay] =
    lt.maxDelayPerAddressInSeconds >= lt.maxDelayPerIdentifierInSeconds
      ? ['maxDelayPerAddressInSeconds', lt.maxDelayPerAddressInSeconds]
      : ['maxDelayPerIdentifierInSeconds', lt.maxDelayPerIdentifierInSeconds];
  if (lt.forgetFailuresAfterSeconds < delay)
    throw new ConfigError(
      'login.throttle.forgetFailuresAfterSeconds',
      `${lt.forgetFailuresAfterSeconds} is shorter than login.throttle.${delayKey} (${delay})`,
    );
  // The identifier is stored under this key in the User's data; a key the service sets itself would overwrite it (and
  // backups would lose it).
  if (BASE_RESERVED.includes(settings.register.uniqueIdentifier))
    throw new ConfigError(
      'register.uniqueIdentifier',
      `'${settings.register.uniqueIdentifier}' is a property the service sets on every element`,
    );
  if (settings.register.uniqueIdentifierRegex !== false) {
    try {
      new RegExp(settings.register.uniqueIdentifierRegex, 'u');
    } catch (error) {
      throw new ConfigError(
        'register.uniqueIdentifierRegex',
        `not a valid regular expression: ${(error as Error).message}`,
      );
    }
  }
  if (settings.securityTxt !== null) {
    try {
      readFileSync(settings.securityTxt, 'utf8');
    } catch (error) {
      throw new ConfigError('securityTxt', `cannot read ${settings.securityTxt}: ${(error as Error).message}`);
    }
  }
}

/** Each entry is an address, a CIDR or one of proxy-addr's names, as it will be compiled (http/forwarded.ts). */
function checkTrustedProxies(entries: string[]): void {
  for (const entry of entries) {
    try {
      proxyAddr.compile(entry);
    } catch (error) {
      throw new ConfigError(
        'server.trustedProxies',
        `'${entry}' is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal (${(error as Error).message})`,
      );
    }
  }
}

/** Whether the operator's own settings hold the key at `path` (dotted), rather than its default. */
function isGiven(raw: Record<string, unknown>, path: string): boolean {
  let node: unknown = raw;
  for (const key of path.split('.')) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return false;
    node = (node as Record<string, unknown>)[key];
  }
  return node !== undefined;
}

const clamp = (value: number, min: number, max: number) => Math.min(Math.max(value, min), max);

/**
 * Defaults bounded by other settings follow the settings the operator gave: each default not given is moved into
 * the range the given ones allow, so that a setting given alone is never refused because of a default (a lone
 * `file.maxFileSizeInBytes: 1048576` would otherwise contradict the default maximum chunk of 101 MiB). Only given
 * settings can contradict each other; validateSettings refuses that afterwards.
 */
function followGivenSettings(raw: Record<string, unknown>, settings: Settings): void {
  const given = (path: string) => isGiven(raw, path);
  const f = settings.file;
  // The chunk limits follow the file limit down (a chunk larger than any file is no limit), and each other.
  if (!given('file.uploadMaxChunkSizeInBytes')) {
    const floor = given('file.uploadMinChunkSizeInBytes') ? f.uploadMinChunkSizeInBytes : 0;
    // At least one byte, the key's own minimum.
    f.uploadMaxChunkSizeInBytes = Math.max(1, clamp(f.uploadMaxChunkSizeInBytes, floor, f.maxFileSizeInBytes));
  }
  if (!given('file.uploadMinChunkSizeInBytes'))
    f.uploadMinChunkSizeInBytes = Math.min(f.uploadMinChunkSizeInBytes, f.uploadMaxChunkSizeInBytes);
  followRange(settings.pageSize, (key) => given(`pageSize.${key}`), ['min', 'default', 'max']);
  followRange(settings.token, (key) => given(`token.${key}`), [
    'minLifetimeInSeconds',
    'defaultLifetimeInSeconds',
    'maxLifetimeInSeconds',
  ]);
  // Failures are remembered at least as long as the longest delay they can cause, and the delays fit that memory.
  const lt = settings.login.throttle;
  const throttleGiven = (key: string) => given(`login.throttle.${key}`);
  if (throttleGiven('forgetFailuresAfterSeconds')) {
    if (!throttleGiven('maxDelayPerIdentifierInSeconds'))
      lt.maxDelayPerIdentifierInSeconds = Math.min(lt.maxDelayPerIdentifierInSeconds, lt.forgetFailuresAfterSeconds);
    if (!throttleGiven('maxDelayPerAddressInSeconds'))
      lt.maxDelayPerAddressInSeconds = Math.min(lt.maxDelayPerAddressInSeconds, lt.forgetFailuresAfterSeconds);
  } else
    lt.forgetFailuresAfterSeconds = Math.max(
      lt.forgetFailuresAfterSeconds,
      lt.maxDelayPerIdentifierInSeconds,
      lt.maxDelayPerAddressInSeconds,
    );
}

/** A minimum, a default and a maximum: the ones not given move into the range of the given ones. */
function followRange<K extends string>(
  range: Record<K, number>,
  given: (key: K) => boolean,
  [min, value, max]: [K, K, K],
): void {
  const givenOnes = ([min, value, max] as K[]).filter(given).map((key) => range[key]);
  if (!given(max)) range[max] = Math.max(range[max], ...givenOnes);
  if (!given(min)) range[min] = Math.min(range[min], ...givenOnes);
  if (!given(value)) range[value] = clamp(range[value], range[min], range[max]);
}

function readSettingsFile(path: string): Settings {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError('TRELLIS_CONFIG', `cannot read ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new ConfigError('TRELLIS_CONFIG', `${path} is not valid YAML: ${(error as Error).message}`);
  }
  return validateSettings(parsed);
}

function integerEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max)
    throw new ConfigError(name, `must be an integer between ${min} and ${max}`);
  return Number(raw);
}

function readRuntime(env: NodeJS.ProcessEnv): Runtime {
  const anonymous = env.ANONYMOUS_USER_UUID || null;
  if (anonymous !== null && !isUuid(anonymous)) throw new ConfigError('ANONYMOUS_USER_UUID', 'must be a UUID');
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL');
  const logLevel = env.LOG_LEVEL || 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel))
    throw new ConfigError('LOG_LEVEL', 'must be one of fatal, error, warn, info, debug, trace, silent');
  const accessKeyId = env.AWS_ACCESS_KEY_ID || null;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY || null;
  if ((accessKeyId === null) !== (secretAccessKey === null))
    throw new ConfigError(
      accessKeyId === null ? 'AWS_ACCESS_KEY_ID' : 'AWS_SECRET_ACCESS_KEY',
      'must be set together with the other',
    );
  return {
    s3Credentials:
      accessKeyId && secretAccessKey
        ? { accessKeyId, secretAccessKey, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) }
        : null,
    port: integerEnv(env, 'PORT', 8080, 0, 65535),
    host: env.HOST || '127.0.0.1',
    dataDir: resolve(env.DATA_DIR || './data'),
    databaseUrl,
    anonymousUserId: anonymous?.toLowerCase() ?? null,
    logLevel,
    configPath: env.TRELLIS_CONFIG || null,
    otlpTracesUrl: otlpTracesUrl(env),
    webhookKey: webhookKey(env),
  };
}

function webhookKey(env: NodeJS.ProcessEnv): Buffer | null {
  const text = env.TRELLIS_WEBHOOK_KEY;
  if (!text) return null;
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text))
    throw new ConfigError('TRELLIS_WEBHOOK_KEY', 'must be 32 bytes in base64 (openssl rand -base64 32)');
  return key;
}

/** The OTLP/HTTP traces URL the standard variables name (the signal's own, or the base endpoint's /v1/traces). */
function otlpTracesUrl(env: NodeJS.ProcessEnv): string | null {
  const [name, url] = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    ? ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT]
    : env.OTEL_EXPORTER_OTLP_ENDPOINT
      ? ['OTEL_EXPORTER_OTLP_ENDPOINT', `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`]
      : [null, null];
  if (name === null) return null;
  if (!/^https?:\/\/[^\s/]+/.test(url)) throw new ConfigError(name, 'must be an http:// or https:// URL');
  return url;
}

/** The whole configuration from the environment; throws ConfigError naming the offending key. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const runtime = readRuntime(env);
  const settings = runtime.configPath ? readSettingsFile(runtime.configPath) : validateSettings({});
  if (settings.file.storage === 's3' && runtime.s3Credentials === null)
    throw new ConfigError('AWS_ACCESS_KEY_ID', "must be set (with AWS_SECRET_ACCESS_KEY) when file.storage is 's3'");
  // The metrics tell about routes, load and the pool: never on the port the service's clients reach.
  if (settings.metrics.enabled && settings.metrics.port !== 0 && settings.metrics.port === runtime.port)
    throw new ConfigError('metrics.port', `must differ from PORT (${runtime.port})`);
  return { settings, runtime };
}
