// Rules for element types and properties (spec "Properties inside data", "Node"; the design notes' section 3).
import { Problem } from '../../errors.js';
import { BASE_RESERVED, isPlainObject } from '../../values.js';

const RESERVED_TYPES = new Set(['User', 'Token', 'Upload']);
const TYPE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,127}$/;
const MAX_PROPERTY_NAME = 256;

/** Properties a client may never set on an element of this type. */
export function reservedProperties(type: string, identifierKey: string): Set<string> {
  const reserved = new Set(BASE_RESERVED);
  if (type === 'User') reserved.add(identifierKey);
  // state and expirationDate mirror the token's server-side record; hash is what the reference keeps in backups.
  if (type === 'Token') for (const key of ['token', 'hash', 'state', 'expirationDate']) reserved.add(key);
  return reserved;
}

/** Validates a type name a client wants to create. */
export function checkNewType(type: unknown): string {
  if (type === undefined || type === null) throw new Problem('missing-property', "The property 'type' is required.");
  if (typeof type !== 'string') throw new Problem('bad-content', "The property 'type' must be a string.");
  if (type.startsWith('_') || RESERVED_TYPES.has(type))
    throw new Problem('reserved-type', `The type '${type}' is reserved and cannot be created through this endpoint.`);
  if (!TYPE_NAME.test(type))
    throw new Problem(
      'bad-content',
      `The type '${type}' is not a valid type name (a letter, then up to 127 letters, digits, '_' or '-').`,
    );
  return type;
}

/** Refuses (400 bad-content) a property name that is empty, too long or holds a control character. */
export function checkPropertyName(key: string): void {
  if (key.length === 0 || key.length > MAX_PROPERTY_NAME || /[\u0000-\u001f]/.test(key))
    throw new Problem(
      'bad-content',
      `The property name '${key.slice(0, 64)}' is not valid (1 to ${MAX_PROPERTY_NAME} printable characters).`,
    );
}

/**
 * Validates the properties a client sends. `nullRemoves` (PATCH) allows null as "remove". Values are any JSON.
 * Returns the properties as given.
 */
export function checkProperties(properties: unknown, reserved: Set<string>, what = 'data'): Record<string, unknown> {
  if (properties === undefined || properties === null) return {};
  if (!isPlainObject(properties)) throw new Problem('bad-content', `'${what}' must be a JSON object.`);
  for (const key of Object.keys(properties)) {
    if (key.startsWith('_'))
      throw new Problem('forbidden-property', `The property '${key}' is internal and cannot be set.`);
    if (reserved.has(key))
      throw new Problem('forbidden-property', `The property '${key}' is reserved and cannot be set.`);
    checkPropertyName(key);
  }
  // The one property with a type of its own (spec "Properties inside data": a string, used for the download's file
  // name). null is no name (PATCH: remove it).
  const name = (properties as Record<string, unknown>).name;
  if (name !== undefined && name !== null && typeof name !== 'string')
    throw new Problem('bad-content', "The property 'name' must be a string.");
  return properties;
}

/** checkProperties with nothing reserved beyond the rules for every property: the properties, or null if invalid. */
export function checkPropertiesOrNull(properties: Record<string, unknown>): Record<string, unknown> | null {
  try {
    return checkProperties(properties, new Set(), 'body');
  } catch {
    return null;
  }
}
