// parseElement's checks of what an element file holds beyond its shape: the API's rules for property names, and the
// bound on an element file's size that maxElementFileBytes derives from the element.* limits.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { elementFileSizeRefusal, maxElementFileBytes, parseElement } from '../../../src/backup/element-file.js';

const LIMITS = { maxDataSizeInBytes: 65_536, maxNestingDepth: 32, maxArrayLength: 1000, maxValues: 1000 };
const parse = (text: string, isRelation = false) => parseElement('node/x.json', text, isRelation, 'email', LIMITS);

describe('parseElement', () => {
  it('takes what the backup format carries in data, and refuses the names the API refuses', () => {
    const id = randomUUID();
    const token = parse(
      JSON.stringify({
        type: 'Token',
        id,
        data: { hash: 'a'.repeat(64), state: 'ACTIVE', created: '2021-02-03T04:05:06Z' },
      }),
    );
    expect(token).toMatchObject({ data: { state: 'ACTIVE' }, token: { hash: 'a'.repeat(64), state: 'ACTIVE' } });
    const user = parse(JSON.stringify({ type: 'User', id, data: { email: 'a@example.dev', _passwordHash: null } }));
    expect(user).toMatchObject({ identifier: 'a@example.dev', data: { email: 'a@example.dev' }, internal: {} });

    const rules = "(the API's rules for property names)";
    expect(() => parse(JSON.stringify({ type: 'Data', id, data: { id } }))).toThrow(
      `node/x.json: element ${id}: the property 'id' is reserved and cannot be set ${rules}`,
    );
    // On a node of another type, a token's and a user's properties are a client's.
    expect(parse(JSON.stringify({ type: 'Data', id, data: { hash: 1, email: 2 } })).data).toEqual({
      hash: 1,
      email: 2,
    });
    expect(() => parse(JSON.stringify({ type: 'Data', id, data: { 'a\tb': 1 } }))).toThrow(
      `node/x.json: element ${id}: the property name 'a\\u0009b' is not valid (1 to 256 printable characters) ${rules}`,
    );
    expect(() => parse(`{"type": "Data", "id": "${id}", "data": {"\\u005f\\u005fproto__": {"created": "x"}}}`)).toThrow(
      `node/x.json: element ${id}: holds a '__proto__' key`,
    );
  });
});

describe('maxElementFileBytes', () => {
  it('grows with every limit, and refuses only what is over it', () => {
    const max = maxElementFileBytes(LIMITS);
    for (const key of Object.keys(LIMITS) as Array<keyof typeof LIMITS>)
      if (key !== 'maxArrayLength')
        expect(maxElementFileBytes({ ...LIMITS, [key]: 2 * LIMITS[key] })).toBeGreaterThan(max);
    const refusal = elementFileSizeRefusal(max);
    expect(refusal(max)).toBeNull();
    expect(refusal(max + 1)).toBe(
      `is ${max + 1} bytes; an element file within the element.* settings is at most ${max} bytes`,
    );
  });
});
