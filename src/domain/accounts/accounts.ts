// Registration, tokens and passwords (spec "User endpoints", "Authentication"; the design notes' section 3).
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import { Problem } from '../../errors.js';
import { type ElementId, isoTime, isPlainObject, newId, parseElementId } from '../../values.js';
import { type Conditions, checkReadPreconditions } from '../elements/conditions.js';
import { checkDataLimits } from '../elements/data-limits.js';
import type { ElementStore } from '../elements/ports.js';
import { checkProperties, reservedProperties } from '../elements/properties.js';
import { renderElement } from '../elements/representation.js';
import type { Transactions } from '../transactions.js';
import type { Authentication } from './authentication.js';
import { defaultHashWorkers, PasswordHashing } from './passwords.js';
import type { AccountStore, CredentialFailureStore, RegistrationCountStore } from './ports.js';
import { RegistrationThrottle } from './registration-throttle.js';
import { CredentialThrottle } from './throttle.js';
import { generateToken, hashToken, TOKEN_PATTERN } from './tokens.js';
import type { Caller, Credentials } from './types.js';

export type { Caller, Credentials };

function requireString(body: Record<string, unknown>, key: string): string {
  const value = body[key];
  if (value === undefined || value === null)
    throw new Problem('missing-property', `The property '${key}' is required.`);
  if (typeof value !== 'string' || value.length === 0)
    throw new Problem('bad-content', `The property '${key}' must be a non-empty string.`);
  return value;
}

function requireType(body: unknown, expected: string): Record<string, unknown> {
  if (!isPlainObject(body)) throw new Problem('bad-content', 'The request body must be a JSON object.');
  if (body.type === undefined) throw new Problem('missing-property', "The property 'type' is required.");
  if (body.type !== expected) throw new Problem('bad-content', `The property 'type' must be '${expected}'.`);
  return body;
}

/**
 * The longest identifier, in characters. Identifiers are unique through a PostgreSQL index, which refuses an entry of
 * more than about 2,700 bytes (after compression) with a database error; 256 characters of at most 4 bytes each
 * stay far below that, and above an e-mail address's 254.
 */
export const MAX_IDENTIFIER_CHARACTERS = 256;

export class Accounts {
  constructor(
    private readonly transactions: Transactions,
    private readonly store: AccountStore,
    private readonly elements: Pick<ElementStore, 'insert' | 'bodyById'>,
    private readonly authentication: Authentication,
    counters: { failures: CredentialFailureStore; registrations: RegistrationCountStore },
    private readonly settings: Settings,
    private readonly clock: Clock,
    private readonly anonymousUserId: string | null,
  ) {
    this.throttle = new CredentialThrottle(counters.failures, settings.login.throttle, clock);
    this.registrations = new RegistrationThrottle(counters.registrations, settings.register.throttle, clock);
    const { workers, maxQueued } = settings.passwordHashing;
    this.hashing = new PasswordHashing(workers === 'auto' ? defaultHashWorkers() : workers, maxQueued);
  }

  private readonly throttle: CredentialThrottle;
  private readonly registrations: RegistrationThrottle;
  private readonly hashing: PasswordHashing;

  /** Whether a password is shorter than register.minPasswordLength (counted in characters, not UTF-16 units). */
  passwordTooShort(password: string): boolean {
    return Array.from(password).length < this.settings.register.minPasswordLength;
  }

  private requirePasswordLength(property: string, password: string): void {
    if (this.passwordTooShort(password))
      throw new Problem(
        'bad-content',
        `The property '${property}' must have at least ${this.settings.register.minPasswordLength} characters.`,
      );
  }

  /**
   * The credentials of an Authorization header, checked for form only (spec "Authentication" rule 3): no header
   * means the anonymous user when one is configured; anything malformed is 401, never anonymous.
   */
  credentials(authorization: string | undefined): Credentials {
    if (authorization === undefined) {
      if (this.anonymousUserId) return { anonymousUserId: this.anonymousUserId };
      throw new Problem('unauthorized', 'No Authorization header was sent and no anonymous user is configured.');
    }
    return { tokenHash: this.tokenHashOf(authorization) };
  }

  /** Resolves the Authorization header to the calling user (one indexed query). Throws 401. */
  async authenticate(authorization: string | undefined): Promise<Caller> {
    return this.authentication.caller(this.credentials(authorization), this.clock.now());
  }

  /** The SHA3-256 hash of a well-formed `Bearer secret-token:...` header; 401 for anything else. */
  tokenHashOf(authorization: string): string {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match || !TOKEN_PATTERN.test(match[1]!))
      throw new Problem('unauthorized', "The Authorization header must be 'Bearer secret-token:<token>'.");
    return hashToken(match[1]!);
  }

  /** POST /register; `address` is the client's, for the registrations allowed per address (registration-throttle.ts). */
  async register(body: unknown, address?: string): Promise<ElementId> {
    if (!this.settings.register.enabled) throw new Problem('forbidden', 'Registration is disabled on this instance.');
    const input = requireType(body, 'User');
    const identifier = requireString(input, 'uniqueUserIdentifier');
    const password = requireString(input, 'password');
    const key = this.settings.register.uniqueIdentifier;
    const data = checkProperties(input.data, reservedProperties('User', key));
    checkDataLimits(data, this.settings.element);
    const pattern = this.settings.register.uniqueIdentifierRegex;
    if (pattern !== false && !new RegExp(pattern, 'u').test(identifier))
      throw new Problem('bad-content', `The identifier does not match the pattern this instance requires.`);
    this.requirePasswordLength('password', password);
    await this.registrations.count(address);
    return this.createUser(identifier, password, data);
  }

  /** Creates a User node (also used by `user:create`). 400 reserved-identifier when the identifier is taken. */
  async createUser(
    identifier: string,
    password: string,
    data: Record<string, unknown> = {},
    id: ElementId = newId(),
  ): Promise<ElementId> {
    // POST /register refuses empty strings before this; user:create passes its arguments as they are. An account
    // with an empty identifier or password could never log in (POST /token refuses both).
    if (identifier.length === 0) throw new Problem('bad-content', 'The identifier must be a non-empty string.');
    if (Array.from(identifier).length > MAX_IDENTIFIER_CHARACTERS)
      throw new Problem('bad-content', `The identifier is longer than ${MAX_IDENTIFIER_CHARACTERS} characters.`);
    if (password.length === 0) throw new Problem('bad-content', 'The password must be a non-empty string.');
    const passwordHash = await this.hashing.hash(password);
    const key = this.settings.register.uniqueIdentifier;
    try {
      await this.transactions.transaction(async (tx) => {
        const user = { id, type: 'User', data: { ...data, [key]: identifier }, at: this.clock.now() };
        if (!(await this.elements.insert(tx, user)))
          throw new Problem('reserved-identifier', `The id ${id} is already in use.`);
        await this.store.insertUser(tx, id, identifier, passwordHash);
      });
    } catch (error) {
      if (this.transactions.failureOf(error) === 'duplicate')
        throw new Problem('reserved-identifier', 'The identifier is already in use.');
      throw error;
    }
    return id;
  }

  /** POST /token; `address` is the client's, for the back-off of failed attempts (throttle.ts). */
  async createToken(body: unknown, address?: string): Promise<{ token: string; id: string }> {
    const input = requireType(body, 'Token');
    const identifier = requireString(input, 'uniqueUserIdentifier');
    const password = requireString(input, 'password');
    const data = checkProperties(input.data, reservedProperties('Token', this.settings.register.uniqueIdentifier));
    checkDataLimits(data, this.settings.element);
    const t = this.settings.token;
    let lifetime = t.defaultLifetimeInSeconds;
    if (input.lifetimeInSeconds !== undefined && input.lifetimeInSeconds !== null) {
      if (!Number.isInteger(input.lifetimeInSeconds))
        throw new Problem('bad-content', "'lifetimeInSeconds' must be an integer.");
      lifetime = Math.min(t.maxLifetimeInSeconds, Math.max(t.minLifetimeInSeconds, input.lifetimeInSeconds as number));
    }
    const attempt = await this.throttle.check(identifier, address);
    const user = await this.store.userByIdentifier(this.transactions.direct, identifier);
    if (!(await this.hashing.verify(user?.passwordHash, password)) || !user) {
      await this.throttle.failed(attempt);
      throw new Problem('unauthorized', 'The identifier or the password is wrong.');
    }
    await this.throttle.succeeded(attempt);
    const token = generateToken();
    const id = newId();
    const now = this.clock.now();
    const expires = new Date(now.getTime() + lifetime * 1000);
    await this.transactions.transaction(async (tx) => {
      await this.elements.insert(tx, {
        id,
        type: 'Token',
        data: { ...data, state: 'ACTIVE', expirationDate: isoTime(expires) },
        at: now,
      });
      await this.store.insertToken(tx, {
        id,
        hash: hashToken(token),
        userId: user.id,
        state: 'ACTIVE',
        issued: now,
        expires,
      });
      await this.elements.insert(tx, { id: newId(), type: 'OWNS', start: user.id, end: id, data: {}, at: now });
    });
    return { token, id };
  }

  private requireTokenCaller(caller: Caller): ElementId {
    if (caller.tokenId === null) throw new Problem('forbidden', 'The anonymous user has no token.');
    return caller.tokenId;
  }

  /** GET /token: the caller's Token element, with If-Match / If-None-Match as for any element (304, 412). */
  async currentToken(
    caller: Caller,
    conditions: Conditions = {},
  ): Promise<{ body: string; etag: string; notModified: boolean }> {
    const body = await this.elements.bodyById(this.transactions.direct, this.requireTokenCaller(caller));
    if (body === null) throw new Problem('unauthorized', 'The token no longer exists.');
    const rendered = renderElement(body);
    return { ...rendered, notModified: checkReadPreconditions(conditions, rendered.etag) };
  }

  async deleteCurrentToken(caller: Caller): Promise<void> {
    const id = this.requireTokenCaller(caller);
    await this.store.deleteToken(this.transactions.direct, id);
  }

  /**
   * POST /change-password: like POST /token, the credentials are the body's, whatever Authorization says. The body
   * is checked first (each property named), then the user: unknown 401, the anonymous user 403, a wrong current
   * password 401. On success every token of the user is revoked in the same transaction: a password is changed
   * mostly because it may be known to someone else, who may have used it to get a token. Failed checks of the
   * current password back off as failed log-ins do (throttle.ts).
   */
  async changePassword(body: unknown, address?: string): Promise<void> {
    const input = requireType(body, 'ActionChangePassword');
    const identifier = requireString(input, 'uniqueUserIdentifier');
    const current = requireString(input, 'currentPassword');
    const next = requireString(input, 'newPassword');
    if (next === current)
      throw new Problem('bad-content', "The property 'newPassword' must differ from 'currentPassword'.");
    this.requirePasswordLength('newPassword', next);
    const attempt = await this.throttle.check(identifier, address);
    const user = await this.store.userByIdentifier(this.transactions.direct, identifier);
    const wrong = () => new Problem('unauthorized', 'The identifier or the current password is wrong.');
    if (!user) {
      await this.hashing.verify(null, current); // the same time as a wrong password: the answer does not tell which
      await this.throttle.failed(attempt);
      throw wrong();
    }
    if (this.anonymousUserId !== null && user.id === this.anonymousUserId.toLowerCase())
      throw new Problem('forbidden', 'The anonymous user cannot change a password.');
    if (!(await this.hashing.verify(user.passwordHash, current))) {
      await this.throttle.failed(attempt);
      throw wrong();
    }
    await this.throttle.succeeded(attempt);
    const hash = await this.hashing.hash(next);
    await this.transactions.transaction(async (tx) => {
      // Only over the hash that was verified: of two concurrent changes from one password, the second finds it gone.
      if (!(await this.store.replacePasswordHash(tx, user.id, user.passwordHash!, hash))) throw wrong();
      await this.store.revokeTokensOfUser(tx, user.id, this.clock.now());
    });
  }

  /** GET /me: the caller's User element, with If-Match / If-None-Match as for any element (304, 412). */
  async me(caller: Caller, conditions: Conditions = {}): Promise<{ body: string; etag: string; notModified: boolean }> {
    const body = await this.elements.bodyById(this.transactions.direct, caller.userId);
    if (body === null) throw new Problem('unauthorized', 'The user no longer exists.');
    const rendered = renderElement(body);
    return { ...rendered, notModified: checkReadPreconditions(conditions, rendered.etag) };
  }

  /** Background job: deletes the failed-credential counters that are forgotten anyway. */
  async forgetOldCredentialFailures(): Promise<number> {
    return this.throttle.forgetOld();
  }

  /** Background job: deletes the registration counts of windows that are over. */
  async forgetOldRegistrationCounts(): Promise<number> {
    return this.registrations.forgetOld();
  }

  /** Background job: deletes tokens that expired longer ago than the configured grace. */
  async deleteExpiredTokens(): Promise<number> {
    const cutoff = new Date(
      this.clock.now().getTime() - this.settings.token.deleteExpiredTokensAutomaticallyInSeconds * 1000,
    );
    return this.store.deleteExpiredTokens(this.transactions.direct, cutoff);
  }

  /** Resolves a user given by id or by identifier (token:revoke --user). */
  async findUser(idOrIdentifier: string): Promise<ElementId | null> {
    const id = parseElementId(idOrIdentifier);
    if (id !== null && (await this.store.userExists(this.transactions.direct, id))) return id;
    return (await this.store.userByIdentifier(this.transactions.direct, idOrIdentifier))?.id ?? null;
  }
}
