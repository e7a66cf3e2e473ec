// Elements (src/domain/elements/elements.ts) on its real SQL adapter: what it decides, in which order, and what it
// leaves stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Credentials } from '../../../../src/domain/accounts/types.js';
import { Problem } from '../../../../src/errors.js';
import { type ElementId, parseElementId } from '../../../../src/values.js';
import { type DomainUnderTest, domainOnPglite } from '../../helpers/domain.js';

/** The slug and detail of the problem `work` fails with. */
async function refusal(work: Promise<unknown>): Promise<{ slug: string; detail: string }> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof Problem)) throw new Error(`expected a Problem, got ${String(error)}`);
  return { slug: error.slug, detail: error.detail };
}

const BAD_TOKEN: Credentials = { tokenHash: 'no such token' };

describe('Elements', () => {
  let d: DomainUnderTest;
  let alice: { id: string; credentials: Credentials };
  let bob: { id: string; credentials: Credentials };

  beforeAll(async () => {
    d = await domainOnPglite();
    alice = await d.user('alice@unit.dev');
    bob = await d.user('bob@unit.dev');
  });
  afterAll(() => d.close());

  const read = async (credentials: Credentials, id: ElementId) =>
    JSON.parse((await d.elements.read(credentials, id)).rendered.body) as Record<string, unknown>;

  it('creates a node with a new lower-case id that its creator reads back, and nobody else', async () => {
    const id = await d.elements.create(alice.credentials, { type: 'Note', data: { title: 'first' } });
    expect(parseElementId(id)).toBe(id);
    expect(await read(alice.credentials, id)).toMatchObject({ id, type: 'Note', data: { title: 'first' } });
    expect(await refusal(d.elements.read(bob.credentials, id))).toMatchObject({ slug: 'not-found' });
  });

  it('answers bad credentials before a bad body, and a bad body before anything is stored', async () => {
    expect(await refusal(d.elements.create(BAD_TOKEN, { type: 'Note', id: 'x' }))).toMatchObject({
      slug: 'unauthorized',
    });
    expect(await refusal(d.elements.create(alice.credentials, { type: 'Note', id: 'x' }))).toMatchObject({
      slug: 'forbidden-property',
    });
    expect(await refusal(d.elements.create(alice.credentials, [1, 2]))).toMatchObject({ slug: 'bad-content' });
    const { rows } = await d.db.query(`SELECT count(*)::int AS n FROM elements WHERE type = 'Note' AND data ? 'id'`);
    expect(rows[0]).toEqual({ n: 0 });
  });

  it('checks a relation body: both ends, UUIDs, not as a child, not CREATED', async () => {
    const a = await d.elements.create(alice.credentials, { type: 'Node' });
    const b = await d.elements.create(alice.credentials, { type: 'Node' });
    expect(await refusal(d.elements.create(alice.credentials, { type: 'LINKS', start: a }))).toMatchObject({
      slug: 'incomplete-mutual-dependency',
    });
    expect(
      await refusal(d.elements.create(alice.credentials, { type: 'LINKS', start: a, end: 'not-a-uuid' })),
    ).toMatchObject({ slug: 'bad-content', detail: "'start' and 'end' must be UUIDs." });
    expect(await refusal(d.elements.create(alice.credentials, { type: 'LINKS', start: a, end: b }, a))).toMatchObject({
      slug: 'bad-content',
    });
    expect(await refusal(d.elements.create(alice.credentials, { type: 'CREATED', start: a, end: b }))).toMatchObject({
      slug: 'reserved-type',
    });
    // Upper-case ends are the same elements.
    const rel = await d.elements.create(alice.credentials, { type: 'LINKS', start: a.toUpperCase(), end: b });
    expect(await read(alice.credentials, rel)).toMatchObject({ start: a, end: b });
  });

  it('connects nodes only, and never through an element the caller cannot see', async () => {
    const a = await d.elements.create(alice.credentials, { type: 'Node' });
    const b = await d.elements.create(alice.credentials, { type: 'Node' });
    const rel = await d.elements.create(alice.credentials, { type: 'LINKS', start: a, end: b });
    expect(await refusal(d.elements.create(alice.credentials, { type: 'LINKS', start: a, end: rel }))).toMatchObject({
      slug: 'bad-content',
      detail: 'A relation connects two nodes; its start and its end cannot be relations.',
    });
    const hidden = await d.elements.create(bob.credentials, { type: 'Node' });
    expect(await refusal(d.elements.create(alice.credentials, { type: 'LINKS', start: a, end: hidden }))).toMatchObject(
      { slug: 'not-found' },
    );
  });

  it('merges with PATCH (null removes), replaces with PUT, and compares If-Match under the row lock', async () => {
    const id = await d.elements.create(alice.credentials, { type: 'Doc', data: { a: 1, b: 2 } });
    // The rendered data also holds what the service sets (created, updated): compared are the client's properties.
    const clientData = async () => {
      const { created, updated, ...rest } = (await read(alice.credentials, id)).data as Record<string, unknown>;
      return rest;
    };
    await d.elements.update(alice.credentials, id, { b: null, c: 3 }, 'merge');
    expect(await clientData()).toEqual({ a: 1, c: 3 });
    await d.elements.update(alice.credentials, id, { z: true }, 'replace');
    expect(await clientData()).toEqual({ z: true });
    expect(
      await refusal(d.elements.update(alice.credentials, id, { z: false }, 'merge', { ifMatch: '"stale"' })),
    ).toMatchObject({ slug: 'precondition-failed' });
    const { rendered } = await d.elements.read(alice.credentials, id);
    await d.elements.update(alice.credentials, id, { z: false }, 'merge', { ifMatch: rendered.etag });
    expect(await clientData()).toEqual({ z: false });
    expect(await refusal(d.elements.update(bob.credentials, id, { z: 1 }, 'merge'))).toMatchObject({
      slug: 'not-found',
    });
  });

  it('deletes an element with its relations, but never a user or the OWNS of a token', async () => {
    const a = await d.elements.create(alice.credentials, { type: 'Node' });
    const b = await d.elements.create(alice.credentials, { type: 'Node' });
    const rel = await d.elements.create(alice.credentials, { type: 'LINKS', start: a, end: b });
    const caller = { userId: alice.id as ElementId, tokenId: null };
    await d.elements.delete(caller, a);
    expect(await refusal(d.elements.read(alice.credentials, a))).toMatchObject({ slug: 'not-found' });
    expect(await refusal(d.elements.read(alice.credentials, rel))).toMatchObject({ slug: 'not-found' });
    expect(await refusal(d.elements.delete(caller, alice.id as ElementId))).toMatchObject({ slug: 'not-found' });
    expect(await read(alice.credentials, alice.id as ElementId)).toMatchObject({ type: 'User' });
    const { rows } = await d.db.query<{ id: ElementId }>(
      `SELECT o.id FROM elements o JOIN elements t ON t.id = o.end_id WHERE o.type = 'OWNS' AND t.type = 'Token'
       AND o.start_id = $1 LIMIT 1`,
      [alice.id],
    );
    expect(await refusal(d.elements.delete(caller, rows[0]!.id))).toMatchObject({ slug: 'bad-content' });
  });

  it('lists the node and relation types in use, without the internal ones', async () => {
    const types = await d.elements.graphStructure();
    expect(types.nodeTypes).toEqual(expect.arrayContaining(['Doc', 'Node', 'Note', 'Token', 'User']));
    expect(types.relationTypes).toEqual(expect.arrayContaining(['CREATED', 'LINKS', 'OWNS']));
    expect([...types.nodeTypes, ...types.relationTypes].some((t) => t.startsWith('_'))).toBe(false);
  });
});
