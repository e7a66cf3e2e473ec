// The operator configuration (TRELLIS_CONFIG YAML file): one TypeBox schema that validates it, fills its
// defaults and gives its type. Key names follow the spec and the reference implementation.
import Type, { type Static } from 'typebox';

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
/**
 * Bounds of the embedded database's page cache in MiB. PGlite's WebAssembly memory holds it, and PGlite does not start
 * with 2 GiB of it (docs/decisions/017-embedded-cache-size.md); PostgreSQL's own default, 128 MiB, is the floor 'auto'
 * never goes below.
 */
export const EMBEDDED_CACHE_MIB = { min: 16, max: 1024, default: 128 } as const;
/** The storage ceiling of the spec: no configured file size may exceed it. */
export const STORAGE_CEILING_BYTES = 5 * 1024 * GiB;

const int = (defaultValue: number, minimum = 0) => Type.Integer({ minimum, default: defaultValue });
/**
 * The longest configurable duration: 100 years. Durations are added to the current time and stored as timestamps
 * (token and upload expiry), which a backup writes with a four-digit year; a longer one made `POST /token` fail
 * with an invalid date (a 500) or wrote a timestamp backup:load refuses.
 */
const MAX_DURATION_SECONDS = 100 * 366 * 24 * 3600;
const seconds = (defaultValue: number, minimum = 0) =>
  Type.Integer({ minimum, maximum: MAX_DURATION_SECONDS, default: defaultValue });
/** A timeout in seconds (fractions allowed), or 0 for none. */
const timeoutSeconds = (defaultValue: number) =>
  Type.Union([Type.Literal(0), Type.Number({ minimum: 0.1, maximum: 3600 })], { default: defaultValue });
const obj = <T extends Type.TProperties>(properties: T) =>
  Type.Object(properties, { additionalProperties: false, default: {} });

export const SettingsSchema = Type.Object(
  {
    baseUrl: Type.Union([Type.String({ pattern: '^https?://[^\\s]+$' }), Type.Null()], { default: null }),
    file: obj({
      maxFileSizeInBytes: int(10 * GiB),
      uploadMinChunkSizeInBytes: int(5 * MiB),
      uploadMaxChunkSizeInBytes: int(101 * MiB, 1),
      uploadChunkDigitsLength: Type.Integer({ minimum: 1, maximum: 12, default: 4 }),
      uploadExpiresInSecondsAfterFirstRequest: seconds(10800, 1),
      expiredUploadCanBeDeletedAfterExpirationInSeconds: seconds(3600),
      // Direct uploads and resumable appends streaming at once in this instance; beyond it 503 with Retry-After.
      maxConcurrentUploads: int(64, 1),
      // Where file bytes live: 'disk' (DATA_DIR/files) or 's3', an S3-compatible bucket that several instances share
      // (credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY only).
      storage: Type.Union([Type.Literal('disk'), Type.Literal('s3')], { default: 'disk' }),
      s3: obj({
        // null: AWS itself; else the store's URL, e.g. http://127.0.0.1:7480. Requests are path-style.
        endpoint: Type.Union([Type.String({ pattern: '^https?://[^\\s/]+(/[^\\s]*)?$' }), Type.Null()], {
          default: null,
        }),
        region: Type.String({ minLength: 1, default: 'us-east-1' }),
        // Must exist (checked at start).
        bucket: Type.Union([Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' }), Type.Null()], {
          default: null,
        }),
        // Objects are named <prefix>/<key>/...; several services may share a bucket under different prefixes.
        prefix: Type.String({ pattern: '^([A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*)?$', default: '' }),
        // Longest wait for a connection and longest silence of a request; past it the request fails (503).
        timeoutInSeconds: Type.Number({ minimum: 0.1, maximum: 3600, default: 30 }),
      }),
    }),
    // Slow clients (http/connection-guard.ts): at maxConnections a new connection closes the oldest idle one (or
    // itself, when all are busy); a silent connection is closed after bodyIdleTimeoutInSeconds; a request body that
    // sends nothing for bodyIdleTimeoutInSeconds, or less than bodyMinBytesPerSecond over bodyRateWindowInSeconds
    // (0: no minimum), is cut off while the server waits for it, and so is a connection whose client reads what the
    // server sends that slowly.
    //
    // Reverse proxies (http/forwarded.ts): only from a peer in trustedProxies (addresses and CIDRs, IPv4 or IPv6, or
    // the names loopback, linklocal and uniquelocal) are forwarded headers believed, and only the family in
    // forwardedHeader: X-Forwarded-For with X-Forwarded-Proto and -Host, or RFC 7239 Forwarded.
    server: obj({
      maxConnections: int(1000, 1),
      bodyIdleTimeoutInSeconds: seconds(30, 1),
      bodyMinBytesPerSecond: int(4096),
      bodyRateWindowInSeconds: seconds(30, 1),
      trustedProxies: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
      forwardedHeader: Type.Union([Type.Literal('x-forwarded-for'), Type.Literal('forwarded')], {
        default: 'x-forwarded-for',
      }),
    }),
    pageSize: obj({ min: int(5, 1), default: int(25, 1), max: int(100, 1) }),
    register: obj({
      enabled: Type.Boolean({ default: true }),
      uniqueIdentifier: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9]{0,63}$', default: 'email' }),
      uniqueIdentifierRegex: Type.Union([Type.String({ minLength: 1 }), Type.Literal(false)], { default: false }),
      // In characters; POST /register and POST /change-password refuse shorter passwords, user:create warns.
      minPasswordLength: Type.Integer({ minimum: 1, maximum: 1024, default: 8 }),
      // POST /register per client address (domain/accounts/registration-throttle.ts): this many attempts in a
      // window, then 429 with Retry-After until the window ends.
      throttle: obj({
        enabled: Type.Boolean({ default: true }),
        registrationsPerAddress: int(20, 1),
        windowInSeconds: seconds(600, 1),
      }),
      // GET /principals per signed-in user (domain/accounts/principals.ts): this many look-ups in a fixed window,
      // then 429 with Retry-After until the window ends. Counted in each instance.
      principalLookup: obj({
        lookupsPerWindow: int(30, 1),
        windowInSeconds: seconds(60, 1),
      }),
    }),
    // Argon2 hashes and verifications run on threads of their own below normal priority, `workers` at once ('auto':
    // half of the cores), `maxQueued` waiting; beyond that 503 with Retry-After (domain/accounts/passwords.ts).
    passwordHashing: obj({
      workers: Type.Union([Type.Integer({ minimum: 1, maximum: 256 }), Type.Literal('auto')], {
        default: 'auto',
      }),
      maxQueued: int(100),
    }),
    // Failed POST /token and POST /change-password attempts back off per identifier and per client address
    // (domain/accounts/throttle.ts): free up to the given number of failures, then 1 s doubling up to the maximum.
    // The identifier's maximum stays short so that an attacker cannot keep its real user out for long; the address
    // carries the weight. A counter is forgotten after that long without a failure.
    login: obj({
      throttle: obj({
        enabled: Type.Boolean({ default: true }),
        freeFailuresPerIdentifier: int(5, 1),
        maxDelayPerIdentifierInSeconds: seconds(60, 1),
        freeFailuresPerAddress: int(10, 1),
        maxDelayPerAddressInSeconds: seconds(300, 1),
        forgetFailuresAfterSeconds: seconds(900, 1),
      }),
    }),
    token: obj({
      minLifetimeInSeconds: seconds(1800, 1),
      defaultLifetimeInSeconds: seconds(10800, 1),
      maxLifetimeInSeconds: seconds(34214400, 1),
      deleteExpiredTokensAutomaticallyInSeconds: seconds(1209600),
    }),
    expression: obj({ enabled: Type.Boolean({ default: true }), maxLength: int(10240, 1) }),
    // The time every statement of a search may take; the default depends on the backend (domain/search/pipeline.ts).
    // How many searches run at once (domain/search/admission.ts): per instance ('auto': half the database's
    // connections, one on the embedded database), the rest waiting their turn, at most maxQueued of them for at most
    // queueTimeoutInSeconds (then 503); per user, running and waiting together (then 429).
    search: obj({
      statementTimeoutInSeconds: Type.Optional(
        Type.Union([Type.Literal(0), Type.Number({ minimum: 0.1, maximum: 3600 })]),
      ),
      maxConcurrent: Type.Union([Type.Integer({ minimum: 1, maximum: 1000 }), Type.Literal('auto')], {
        default: 'auto',
      }),
      maxConcurrentPerUser: int(4, 1),
      maxQueued: int(100),
      queueTimeoutInSeconds: Type.Number({ minimum: 0.1, maximum: 3600, default: 5 }),
    }),
    instanceConfiguration: obj({
      enabled: Type.Boolean({ default: true }),
      showVersion: Type.Boolean({ default: true }),
    }),
    cache: obj({ etagUpperLimitInCollectionEndpoints: int(100) }),
    // What one element's data may hold (domain/elements/data-limits.ts): each key, array item and word costs the write's
    // search document, so these bound the work of one write (SECURITY.md).
    element: obj({
      maxDataSizeInBytes: Type.Integer({ minimum: 2, maximum: 64 * MiB, default: 64 * 1024 }),
      maxNestingDepth: Type.Integer({ minimum: 1, maximum: 256, default: 32 }),
      maxArrayLength: int(1000, 1),
      maxValues: int(1000, 1),
    }),
    // Connections of the PostgreSQL pool (DATABASE_URL; the embedded database has one). 'auto' sizes it to this
    // machine (storage/postgres.ts defaultPoolSize).
    database: obj({
      poolSize: Type.Union([Type.Integer({ minimum: 1, maximum: 1000 }), Type.Literal('auto')], { default: 'auto' }),
      // The embedded database's page cache (PGlite's shared_buffers). 'auto' sizes it to the database found at
      // start, within this machine's memory (storage/pglite.ts embeddedCacheMiB).
      embeddedCacheSizeInMiB: Type.Union(
        [Type.Integer({ minimum: EMBEDDED_CACHE_MIB.min, maximum: EMBEDDED_CACHE_MIB.max }), Type.Literal('auto')],
        { default: 'auto' },
      ),
      // Whether the embedded database's commits are durable: answered once their WAL is on stable storage, so that
      // a power cut or a kernel crash loses none (storage/pglite-durable.ts). false: for data that may be lost.
      embeddedDurable: Type.Boolean({ default: true }),
      // PostgreSQL server only (storage/open.ts): the longest wait for a connection, and the longest a statement of a
      // request may run (searches have their own, search.statementTimeoutInSeconds; migrations and the CLI's
      // commands none); past either the request gets 503 with Retry-After. 0: no bound. A request's statements read
      // or change a bounded number of rows by index and take milliseconds, and a server that stops answering is
      // noticed only at the bound, so it is a few seconds (docs/decisions/032-statement-bounds.md).
      connectTimeoutInSeconds: timeoutSeconds(5),
      statementTimeoutInSeconds: timeoutSeconds(5),
    }),
    // Free disk space kept (domain/capacity.ts): below it on the embedded database's folder or the disk file store's,
    // requests that change state answer 507 and reads go on. The default leaves the embedded database room for its
    // next WAL segments and a restart (docs/operations.md, "Disk space"); 0 turns the check off.
    storage: obj({ minFreeSpaceInBytes: int(64 * MiB) }),
    securityTxt: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { default: null }),
    // On SIGTERM /health/ready answers 503 this long before the listener closes, so that a load balancer stops
    // sending new requests first (docs/operations.md, "Probes, metrics and alerts").
    health: obj({ shutdownDelayInSeconds: seconds(0) }),
    // The change feed, GET /events (domain/events, docs/events.md): how long a client may be away and still resume
    // without loss, how many streams an instance and a user may hold, how often an idle stream gets a comment (so
    // that proxies keep it open), and how much an instance buffers for a client that reads slowly before it ends
    // that client's stream (the client resumes from its cursor).
    events: obj({
      retentionInSeconds: seconds(86_400, 1),
      maxSubscribers: int(500, 1),
      maxSubscribersPerUser: int(32, 1),
      heartbeatInSeconds: seconds(15, 1),
      maxBufferedBytes: int(1 * MiB, 1024),
    }),
    // Webhooks (domain/webhooks, docs/webhooks.md): how many a user may have, how long a receiver may take, the
    // delays before each retry of a failed delivery (Standard Webhooks' schedule; the first attempt is immediate),
    // how long a rotated secret still signs, the hosts (names, addresses or CIDRs) that may be called although they
    // are not public, how many webhooks an instance delivers to at once, and how long the delivery log is kept.
    webhooks: obj({
      maxPerUser: int(20, 1),
      timeoutInSeconds: Type.Number({ minimum: 0.1, maximum: 300, default: 15 }),
      retryScheduleInSeconds: Type.Array(Type.Number({ minimum: 0, maximum: 7 * 86_400 }), {
        maxItems: 50,
        default: [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400],
      }),
      secretOverlapInSeconds: seconds(86_400),
      allowedHosts: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
      maxConcurrentDeliveries: int(16, 1),
      deliveryLogRetentionInSeconds: seconds(7 * 86_400, 1),
    }),
    // Prometheus metrics on a listener of their own, never on the service's port (src/metrics; port 0: any free one).
    metrics: obj({
      enabled: Type.Boolean({ default: true }),
      host: Type.String({ minLength: 1, pattern: '^[^\\s/]+$', default: '127.0.0.1' }),
      port: Type.Integer({ minimum: 0, maximum: 65535, default: 9464 }),
    }),
  },
  { additionalProperties: false },
);

export type Settings = Static<typeof SettingsSchema>;

/** Process-level settings from the environment (config/load.ts). */
export interface Runtime {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | null;
  anonymousUserId: string | null;
  logLevel: string;
  configPath: string | null;
  /** AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), when set: the object store's credentials. */
  s3Credentials: S3Credentials | null;
  /**
   * Where spans are sent over OTLP/HTTP: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT with
   * /v1/traces; unset (or null): no tracing (src/tracing).
   */
  otlpTracesUrl?: string | null;
  /**
   * TRELLIS_WEBHOOK_KEY (32 bytes in base64): the key that seals webhook secrets, which every instance on one
   * database must share; unset, a key file in DATA_DIR is made at the first need (webhooks/key-file.ts).
   */
  webhookKey?: Buffer | null;
}

interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface Config {
  settings: Settings;
  runtime: Runtime;
}
