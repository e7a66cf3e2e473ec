// The search-engine step (searchengine-query-dsl-mixin) on both backends: the index of migration 006, every query
// kind of src/search/language/query-dsl.ts with its ES semantics, scoring order, paging, type filters and access.
// Elements are made through the HTTP API; the step is called directly (runSearchEngine), as the pipeline does.
import { beforeAll, describe, expect, it } from 'vitest';
import { runSearchEngine } from '../../src/domain/search/steps.js';
import { analyze, canonicalNumber } from '../../src/search/index/analysis.js';
import type { SearchEngineOptions } from '../../src/search/results.js';
import { ACCESS_SET_CAPS, permittedIds } from '../../src/storage/queries/access.js';
import { insertElement } from '../../src/storage/queries/elements.js';
import { readableElements } from '../../src/storage/search/hydration.js';
import { sqlSearchEngine } from '../../src/storage/search/search-engine.js';
import { sqlTransactions } from '../../src/storage/transactions.js';
import { tinyPng } from '../files/fixtures.js';
import { attachFile, createElement, describeBackends, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const OPTIONS: SearchEngineOptions = { page: 1, pageSize: 100, minScore: null, nodeTypes: null, relationTypes: null };

describeBackends(
  'search engine',
  (h) => {
    let alice: User;
    let bob: User;
    const el: Record<string, string> = {};
    let beforeLater: Date;

    const search = (query: unknown, options: Partial<SearchEngineOptions> = {}, user = alice) =>
      runSearchEngine(sqlSearchEngine(), sqlTransactions(h().db).direct, user.id, query, { ...OPTIONS, ...options });
    /** Hit ids in result order, as names of the fixture elements. */
    const names = async (query: unknown, options: Partial<SearchEngineOptions> = {}, user = alice) => {
      const { output } = await search(query, options, user);
      const byId = new Map(Object.entries(el).map(([k, v]) => [v, k]));
      return output.elements.map((e) => byId.get(e.id) ?? e.id);
    };
    const sorted = (...keys: string[]) => [...keys].sort((a, b) => (el[a]! < el[b]! ? -1 : 1));
    const badRequest = async (query: unknown, detail?: RegExp) => {
      const error = await search(query).then(
        () => null,
        (e: unknown) => e as { status?: number; slug?: string; detail?: string },
      );
      expect(error, JSON.stringify(query)).not.toBeNull();
      expect(error!.status).toBe(400);
      expect(error!.slug).toBe('bad-content');
      if (detail) expect(error!.detail).toMatch(detail);
    };

    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@engine.dev');
      bob = await userWithToken(h(), 'bob@engine.dev');
      const A = alice.token;
      el.lily = await createElement(h(), A, {
        type: 'Plant',
        data: {
          name: 'Lily',
          description: 'the white lily, a true lily',
          petals: 6,
          height: 80,
          edible: false,
          tags: ['flower', 'white'],
          images: [{ description: 'lily in the garden', size: 3 }, { description: 'close up' }],
          code: 'A_%\\B',
          since: '2021-03-01',
        },
      });
      el.flame = await createElement(h(), A, {
        type: 'Plant',
        data: {
          name: 'Flame Lily',
          description: 'a climbing lily',
          petals: 6,
          height: 200,
          edible: false,
          code: 'AB%C',
          since: '2019-07-15',
        },
      });
      el.tulip = await createElement(h(), A, {
        type: 'Plant',
        data: { name: 'Tulip', description: 'spring flower', petals: 6, height: 40, edible: true, code: 'AxxB' },
      });
      el.rose = await createElement(h(), A, {
        type: 'Plant',
        data: {
          name: 'Rose',
          description: `a flower with thorns, a lily it is not; ${'it grows in gardens and parks, '.repeat(10)}`,
          petals: 5,
          height: 100.5,
          code: 'A%B',
        },
      });
      el.liliales = await createElement(h(), A, {
        type: 'Taxon',
        data: { name: 'Liliales', description: 'an order of lilies', rank: 'order' },
      });
      el.note = await createElement(h(), A, {
        type: 'Note',
        data: { title: 'Lily notes', text: 'ÄRGER über Ωmega, İstanbul: 日本語 ok' },
      });
      const rel = await h().request('POST', '/', {
        token: A,
        body: { type: 'IS_MEMBER_OF', start: el.lily, end: el.liliales, data: { label: 'lily membership' } },
      });
      expect(rel.status, rel.text).toBe(201);
      el.member = rel.headers.get('location')!.slice(1);
      el.secret = await createElement(h(), bob.token, {
        type: 'Plant',
        data: { name: 'Secret lily', description: 'bob keeps this lily' },
      });
      beforeLater = h().clock.now();
      h().clock.advance(3600); // an hour: the tokens (3 h by default) stay valid
      el.later = await createElement(h(), A, { type: 'Note', data: { title: 'written an hour later' } });
    });

    describe('the index', () => {
      it('analyses like the query side: lower case, split on anything not a letter or digit, Unicode letters kept', async () => {
        const samples = [
          'Hello, World! foo-bar_baz 3.14 x2',
          'ÄRGER über Ωmega İstanbul Σίσυφος ПРИВЕТ мир',
          '日本語のテキスト, 한국어',
          'emoji 🎉party🎉 — dash “quotes” «guillemets» ½ µm ªº',
          "l'été DÉJÀ-VU naïve ÆSIR Ǆ ﬁ ＦＵＬＬ",
          '  leading and trailing  ',
          '\u0001control\u007fchars\u00a0nbsp',
          '',
        ];
        for (const text of samples) {
          const { rows } = await h().db.query<{ tokens: string[] }>(
            `SELECT coalesce(array_agg(substr(l, 2, char_length(l) - 3) ORDER BY l), '{}') AS tokens
           FROM unnest(tsvector_to_array(trellis_search_document(jsonb_build_object('f', $1::text)))) l
           WHERE l LIKE 't%' AND right(l, 2) = chr(31) || 'f'`,
            [text],
          );
          expect(new Set(rows[0]!.tokens), text).toEqual(new Set(analyze(text)));
        }
        expect(analyze('ÄRGER über İstanbul')).toEqual(['ärger', 'über', 'istanbul']);
      });

      it('writes numbers as the query side does', async () => {
        for (const n of [0, -0, 5, 5.5, -12.25, 1e21, 1.5e-7, 123456789.123, 0.1 + 0.2]) {
          const { rows } = await h().db.query<{ v: string }>(`SELECT trim_scale(($1::jsonb)::numeric)::text AS v`, [
            JSON.stringify(n),
          ]);
          expect(canonicalNumber(n), String(n)).toBe(rows[0]!.v);
        }
      });

      it('maintains the index in the same transaction as the write: a PATCH is found by the very next search', async () => {
        expect(await names({ match: { description: 'epiphyte' } })).toEqual([]);
        const res = await h().request('PATCH', `/${el.tulip}`, {
          token: alice.token,
          body: { description: 'an epiphyte, sometimes' },
        });
        expect(res.status).toBe(204);
        expect(await names({ match: { description: 'epiphyte' } })).toEqual(['tulip']);
        expect(await names({ match: { description: 'spring' } })).toEqual([]);
        expect(
          (await h().request('PATCH', `/${el.tulip}`, { token: alice.token, body: { description: 'spring flower' } }))
            .status,
        ).toBe(204);
        // PUT replaces all properties, and what is gone is no longer found
        const temp = await createElement(h(), alice.token, { type: 'Temp', data: { word: 'ephemeral' } });
        expect((await h().request('PUT', `/${temp}`, { token: alice.token, body: { other: 'lasting' } })).status).toBe(
          204,
        );
        expect((await search({ match: { word: 'ephemeral' } })).output.totalHits).toBe(0);
        expect((await search({ match: { other: 'lasting' } })).output.elements.map((e) => e.id)).toEqual([temp]);
        expect((await h().request('DELETE', `/${temp}`, { token: alice.token })).status).toBe(204);
        expect((await search({ match: { other: 'lasting' } })).output.totalHits).toBe(0);
      });

      it('never matches internal "_" properties, neither in `internal` nor in data', async () => {
        const res = await h().request('POST', '/', {
          token: alice.token,
          body: { type: 'Thing', data: { _hidden: 'zebra' } },
        });
        expect(res.status).toBe(400);
        const id = await createElement(h(), alice.token, { type: 'Thing', data: { visible: 'giraffe' } });
        await h().db.query(
          `UPDATE elements SET internal = '{"_secret": "zebra"}', data = data || '{"_hidden": "zebra", "_n": 7}' WHERE id = $1`,
          [id],
        );
        expect((await search({ match: { visible: 'giraffe' } })).output.totalHits).toBe(1);
        for (const query of [
          { match: { _hidden: 'zebra' } },
          { match: { _secret: 'zebra' } },
          { query_string: { query: 'zebra' } },
          { term: { '_hidden.keyword': 'zebra' } },
          { exists: { field: '_hidden' } },
          { range: { _n: { gte: 0 } } },
          { wildcard: { _hidden: 'z*' } },
          { prefix: { '_hidden.keyword': 'z' } },
        ])
          expect((await search(query)).output.totalHits, JSON.stringify(query)).toBe(0);
        await h().db.query('DELETE FROM elements WHERE id = $1', [id]);
      });

      it('saves a huge element (over 1 MB of text, and a 5,000-character value) and keeps its other fields searchable', async () => {
        const words = (prefix: string, n: number) =>
          Array.from({ length: n }, (_, i) => `${prefix}${i.toString(36)}`).join(' ');
        const data: Record<string, unknown> = {
          name: 'Giant sequoia',
          long: 'x'.repeat(5000),
          longText: `${'word '.repeat(1000)}tail`,
        };
        for (let p = 0; p < 12; p++) data[`part${p}`] = words(`p${p}w`, 15_000); // ~100 kB each, all distinct tokens
        expect(JSON.stringify(data).length).toBeGreaterThan(1_000_000);
        const res = await h().request('POST', '/', { token: alice.token, body: { type: 'Giant', data } });
        expect(res.status, res.text.slice(0, 200)).toBe(201);
        const id = res.headers.get('location')!.slice(1);
        const { rows } = await h().db.query<{ n: number }>('SELECT length(search) AS n FROM elements WHERE id = $1', [
          id,
        ]);
        expect(rows[0]!.n).toBeGreaterThan(10_000);
        const find = async (query: unknown) => (await search(query)).output.elements.map((e) => e.id);
        expect(await find({ match: { name: 'sequoia' } })).toEqual([id]);
        expect(await find({ term: { 'name.keyword': 'Giant sequoia' } })).toEqual([id]);
        expect(await find({ exists: { field: 'long' } })).toEqual([id]);
        expect(await find({ match: { longText: 'tail' } })).toEqual([id]);
        // over ignore_above: no keyword
        expect(await find({ term: { 'long.keyword': 'x'.repeat(5000) } })).toEqual([]);
        expect((await h().request('DELETE', `/${id}`, { token: alice.token })).status).toBe(204);
      });

      it('compares created and updated as the element shows them (whole seconds), so a value read back finds it', async () => {
        // Mid-second, so that the stored time has a fraction the representation does not show.
        h().clock.advance((1500 - (h().clock.now().getTime() % 1000)) / 1000);
        const fern = await createElement(h(), alice.token, { type: 'Fern', data: { name: 'Fern' } });
        const shown = (await h().request('GET', `/${fern}`, { token: alice.token })).json.data as {
          created: string;
          updated: string;
        };
        const ferns = async (query: unknown) =>
          (await search({ bool: { must: [query, { term: { 'name.keyword': 'Fern' } }] } })).output.elements.map(
            (e) => e.id,
          );
        expect(await ferns({ term: { created: shown.created } })).toEqual([fern]);
        expect(await ferns({ range: { created: { lte: shown.created } } })).toEqual([fern]);
        expect(await ferns({ range: { created: { gte: shown.created, lt: shown.created } } })).toEqual([]);
        expect(await ferns({ range: { created: { gt: shown.created } } })).toEqual([]);
        expect(await ferns({ range: { updated: { gte: shown.updated, lte: shown.updated } } })).toEqual([fern]);
        expect((await h().request('DELETE', `/${fern}`, { token: alice.token })).status).toBe(204);
      });

      it('searches hasFile and file as the element shows them in data, though they are kept apart from it', async () => {
        const moss = await createElement(h(), alice.token, { type: 'Moss', data: { name: 'Moss' } });
        const bare = await createElement(h(), alice.token, { type: 'Moss', data: { name: 'Moss' } });
        const png = tinyPng();
        await attachFile(h(), alice.token, moss, png, 'm.png');
        const shown = (await h().request('GET', `/${moss}`, { token: alice.token })).json.data as {
          hasFile: boolean;
          file: { mimeType: string; contentLength: number };
        };
        expect(shown).toMatchObject({
          hasFile: true,
          file: { mimeType: 'image/png', extension: 'png', contentLength: png.length },
        });
        const mosses = async (query: unknown) =>
          (await search({ bool: { must: [query, { term: { 'name.keyword': 'Moss' } }] } })).output.elements.map(
            (e) => e.id,
          );
        for (const query of [
          { term: { hasFile: true } },
          { term: { hasFile: 'true' } },
          { exists: { field: 'hasFile' } },
          { exists: { field: 'file.mimeType' } },
          { term: { 'file.mimeType': 'image/png' } },
          { term: { 'file.mimeType.keyword': 'image/png' } },
          { term: { 'file.mimeType': { value: 'IMAGE/PNG', case_insensitive: true } } },
          { match: { 'file.extension': 'png' } },
          { prefix: { 'file.mimeType': 'image/' } },
          { wildcard: { 'file.mimeType': 'im?ge/*' } },
          { range: { 'file.contentLength': { gte: png.length, lt: png.length + 1 } } },
          { query_string: { query: 'hasFile:true AND file.mimeType:image*' } },
        ])
          expect(await mosses(query), JSON.stringify(query)).toEqual([moss]);
        expect(await mosses({ bool: { must_not: [{ exists: { field: 'hasFile' } }] } })).toEqual([bare]);
        expect(await mosses({ range: { 'file.contentLength': { gt: png.length } } })).toEqual([]);
        expect(await mosses({ term: { 'file.mimeType': 'image/jpeg' } })).toEqual([]);
        for (const id of [moss, bare])
          expect((await h().request('DELETE', `/${id}`, { token: alice.token })).status).toBe(204);
      });

      it('answers terms longer than PostgreSQL can search for with no hits or a 400, never a database error', async () => {
        const long = (c: string, n: number) => c.repeat(n);
        // PostgreSQL refuses a tsquery operand of 2,047 bytes or more, and operands that add up to about 1 MiB.
        const outcome = async (query: unknown) =>
          search(query).then(
            ({ output }) => output.elements.map((e) => e.id),
            (e: { status?: number; slug?: string; message?: string }) =>
              e.status === 400 && e.slug === 'bad-content' ? 'bad-content' : `error ${e.message}`,
          );
        const field = long('f', 2100);
        // A field name too long to search for names a property no element can be found by: nothing matches.
        for (const query of [
          { range: { [field]: { gte: 1 } } },
          { exists: { field } },
          { exists: { field: `${field}.keyword` } },
          { prefix: { [field]: 'ab' } },
          { wildcard: { [field]: 'a*b' } },
          { term: { [field]: 'x' } },
          { term: { [`${field}.keyword`]: { value: 'x', case_insensitive: true } } },
          { match: { [field]: 'lily' } },
          { match_phrase: { [field]: 'a b' } },
          { match: { [field]: { query: 'lily', fuzziness: 1 } } },
        ])
          expect(await outcome(query), JSON.stringify(query).slice(0, 30)).toEqual([]);
        // A value no stored lexeme can equal matches nothing.
        expect(await outcome({ term: { 'name.keyword': long('a', 2040) } })).toEqual([]);
        expect(await outcome({ query_string: { query: long('a', 2045) } })).toEqual([]);
        expect(await outcome({ term: { code: long('a', 2046) } })).toEqual([]);
        // Terms that add up to more than PostgreSQL takes in one tsquery (5,000 keywords of 244 characters).
        const values = Array.from({ length: 5000 }, (_, i) => `${long('v', 240)}${i}`);
        expect(await outcome({ terms: { 'name.keyword': values } })).toBe('bad-content');
        expect(await outcome({ match: { description: 'lily' } })).toContain(el.lily);
      });
    });

    describe('match', () => {
      it('ORs the analysed terms; more matched terms, then shorter fields, rank first; ties by id', async () => {
        // lily: 2 terms in a 27-byte description; flame: 1 term, 15 bytes; rose: 1 term, > 250 bytes
        expect(await names({ match: { description: 'white LILY' } })).toEqual(['lily', 'flame', 'rose']);
        const { output } = await search({ match: { description: 'white LILY' } });
        expect(output.elements.map((e) => e.metadata.score)).toEqual([2.6, 1.8, 1]);
        expect(output.maxScore).toBe(2.6);
        expect(output.totalHits).toBe(3);
        expect(output.elements[0]).toEqual({ id: el.lily, type: 'Plant', metadata: { score: 2.6 } });
        expect(await names({ match: { name: 'lily' } })).toEqual(sorted('lily', 'flame'));
        expect(await names({ match: { description: { query: 'white lily', operator: 'and' } } })).toEqual(['lily']);
        expect(await names({ match: { description: { query: 'white lily rose', minimum_should_match: 2 } } })).toEqual([
          'lily',
        ]);
        expect(
          await names({ match: { description: { query: 'white lily gardens', minimum_should_match: '-1' } } }),
        ).toEqual(['lily', 'rose']);
        expect(await names({ match: { description: '!!!' } })).toEqual([]);
        expect(
          await names({ match: { description: { query: '!!!', zero_terms_query: 'all' } } }, { nodeTypes: ['Taxon'] }),
        ).toEqual(['liliales']);
      });

      it('on .keyword matches the whole exact value; numbers and booleans match exactly', async () => {
        expect(await names({ match: { 'name.keyword': 'Flame Lily' } })).toEqual(['flame']);
        expect(await names({ match: { 'name.keyword': 'flame lily' } })).toEqual([]);
        expect(await names({ match: { petals: 6 } })).toEqual(sorted('flame', 'lily', 'tulip'));
        expect(await names({ match: { petals: '6' } })).toEqual(sorted('flame', 'lily', 'tulip'));
        expect(await names({ match: { height: 100.5 } })).toEqual(['rose']);
        expect(await names({ match: { edible: true } })).toEqual(['tulip']);
        expect(await names({ match: { edible: false } })).toEqual(sorted('flame', 'lily'));
      });

      it('flattens nested objects to dotted names and looks into arrays', async () => {
        expect(await names({ match: { 'images.description': 'garden' } })).toEqual(['lily']);
        expect(await names({ match: { tags: 'white' } })).toEqual(['lily']);
        expect(await names({ term: { 'tags.keyword': 'flower' } })).toEqual(['lily']);
        expect(await names({ range: { 'images.size': { gte: 3 } } })).toEqual(['lily']);
        expect(await names({ exists: { field: 'images' } })).toEqual(['lily']);
        expect(await names({ exists: { field: 'images.size' } })).toEqual(['lily']);
      });

      it('matches within an edit distance with fuzziness, exact matches scoring higher', async () => {
        expect(await names({ match: { name: { query: 'lilly', fuzziness: 'AUTO' } } })).toEqual(
          sorted('lily', 'flame'),
        );
        expect((await search({ match: { name: { query: 'lilly', fuzziness: 'AUTO' } } })).output.maxScore).toBe(1.3);
        expect(await names({ match: { name: { query: 'lilly' } } })).toEqual([]);
        expect(await names({ match: { name: { query: 'txlxp', fuzziness: 1 } } })).toEqual([]);
        expect(await names({ match: { name: { query: 'txlxp', fuzziness: 2 } } })).toEqual(['tulip']);
        // AUTO: no edits for 1-2 characters
        expect(await names({ match: { name: { query: 'ly', fuzziness: 'AUTO' } } })).toEqual([]);
        const { output } = await search({ match: { name: { query: 'lily lilly', fuzziness: 'AUTO' } } });
        expect(output.elements.map((e) => e.id)).toEqual(sorted('lily', 'flame').map((k) => el[k]));
        expect(output.maxScore).toBe(2.3);
        expect(await names({ match: { name: { query: 'rxse', fuzziness: 1, prefix_length: 2 } } })).toEqual([]);
        expect(await names({ match: { name: { query: 'rxse', fuzziness: 1, prefix_length: 0 } } })).toEqual(['rose']);
      });

      it('counts an adjacent transposition as one edit, unless fuzzy_transpositions is false (as Elasticsearch)', async () => {
        // "tuilp" is tulip with "li" swapped: one edit with transpositions, two without.
        expect(await names({ match: { name: { query: 'tuilp', fuzziness: 1 } } })).toEqual(['tulip']);
        expect(await names({ match: { name: { query: 'tuilp', fuzziness: 'AUTO' } } })).toEqual(['tulip']);
        expect(await names({ match: { name: { query: 'tuilp', fuzziness: 1, fuzzy_transpositions: false } } })).toEqual(
          [],
        );
        expect(await names({ match: { name: { query: 'tuilp', fuzziness: 2, fuzzy_transpositions: false } } })).toEqual(
          ['tulip'],
        );
        expect(await names({ query_string: { query: 'name:tuilp~1' } })).toEqual(['tulip']);
        expect(await names({ match: { '*': { query: 'tuilp', fuzziness: 1 } } })).toEqual(['tulip']);
        // A transposition is one edit of a distance of 1: scored as such (0.5), below an exact match (1).
        const { output } = await search({ match: { name: { query: 'tuilp', fuzziness: 2 } } });
        expect(output.maxScore).toBeCloseTo(0.5 + (await search({ match: { name: 'tulip' } })).output.maxScore! - 1, 5);
        // Two transpositions are two edits; a transposition and a substitution too.
        expect(await names({ match: { name: { query: 'utilp', fuzziness: 1 } } })).toEqual([]);
        expect(await names({ match: { name: { query: 'utilp', fuzziness: 2 } } })).toEqual(['tulip']);
        expect(await names({ match: { name: { query: 'tuilx', fuzziness: 1 } } })).toEqual([]);
        expect(await names({ match: { name: { query: 'tuilx', fuzziness: 2 } } })).toEqual(['tulip']);
      });

      it('with fuzziness on every field ("*", or a query_string without a field) too', async () => {
        const everywhere = new Set(await names({ match: { '*': 'lily' } }));
        expect(everywhere.size).toBeGreaterThan(3);
        expect(new Set(await names({ match: { '*': { query: 'lilly', fuzziness: 1 } } }))).toEqual(everywhere);
        expect(new Set(await names({ query_string: { query: 'lilly~1' } }))).toEqual(everywhere);
        expect(new Set(await names({ query_string: { query: 'lilly~1', default_field: '*' } }))).toEqual(everywhere);
        expect(await names({ match: { '*': { query: 'txlxp', fuzziness: 2 } } })).toEqual(['tulip']);
        expect(await names({ match: { '*': { query: 'txlxp', fuzziness: 1 } } })).toEqual([]);
      });

      it('on words longer than 255 characters (the limit of fuzzystrmatch on PostgreSQL)', async () => {
        const long = await createElement(h(), alice.token, { type: 'LongWord', data: { word: 'q'.repeat(300) } });
        const { output } = await search(
          { match: { word: { query: `${'q'.repeat(299)}x`, fuzziness: 1 } } },
          { nodeTypes: ['LongWord'] },
        );
        expect(output.elements.map((e) => e.id)).toEqual([long]);
        expect(
          (
            await search(
              { match: { word: { query: `${'q'.repeat(298)}xx`, fuzziness: 1 } } },
              { nodeTypes: ['LongWord'] },
            )
          ).output.elements,
        ).toEqual([]);
        expect(
          (
            await search(
              { match: { '*': { query: `x${'q'.repeat(300)}`, fuzziness: 1 } } },
              { nodeTypes: ['LongWord'] },
            )
          ).output.elements.map((e) => e.id),
        ).toEqual([long]);
      });

      it('multiplies by boost', async () => {
        const query = (boost: number) => ({
          bool: { should: [{ match: { name: { query: 'tulip', boost } } }, { match: { description: 'lily' } }] },
        });
        expect(await names(query(0.5))).toEqual(['flame', 'lily', 'rose', 'tulip']);
        expect(await names(query(3))).toEqual(['tulip', 'flame', 'lily', 'rose']);
        expect((await search({ match: { name: { query: 'tulip', boost: 3 } } })).output.maxScore).toBe(5.4);
      });
    });

    describe('term-level queries', () => {
      it('term: exact keyword on .keyword, one token on a text field, values on numbers; constant score', async () => {
        expect(await names({ term: { 'name.keyword': 'Lily' } })).toEqual(['lily']);
        expect(await names({ term: { 'name.keyword': 'lily' } })).toEqual([]);
        expect(await names({ term: { name: 'Lily' } })).toEqual([]);
        expect(await names({ term: { name: 'lily' } })).toEqual(sorted('lily', 'flame'));
        expect(await names({ term: { name: { value: 'flame lily' } } })).toEqual([]);
        expect(await names({ term: { petals: 5 } })).toEqual(['rose']);
        expect(await names({ term: { edible: { value: true, boost: 2 } } })).toEqual(['tulip']);
        expect((await search({ term: { edible: { value: true, boost: 2 } } })).output.maxScore).toBe(2);
        expect((await search({ term: { 'name.keyword': 'Lily' } })).output.maxScore).toBe(1);
        expect(await names({ term: { 'name.keyword': { value: 'FLAME lily', case_insensitive: true } } })).toEqual([
          'flame',
        ]);
        expect(await names({ term: { _id: el.rose } })).toEqual(['rose']);
        expect(await names({ term: { _id: 'not-a-uuid' } })).toEqual([]);
      });

      it('terms and ids, also on _id', async () => {
        expect(await names({ terms: { 'name.keyword': ['Lily', 'Rose', 'Nope'] } })).toEqual(sorted('lily', 'rose'));
        expect(await names({ terms: { _id: [el.tulip, el.secret, el.rose.toUpperCase()] } })).toEqual(
          sorted('tulip', 'rose'),
        );
        expect(await names({ ids: { values: [el.flame, el.liliales] } })).toEqual(sorted('flame', 'liliales'));
        expect(await names({ terms: { petals: [5, 7] } })).toEqual(['rose']);
        expect(await names({ terms: { _id: [] } })).toEqual([]);
      });

      it('prefix and wildcard treat %, _ and \\ in values as ordinary characters', async () => {
        expect(await names({ prefix: { 'code.keyword': 'A_' } })).toEqual(['lily']);
        expect(await names({ prefix: { 'code.keyword': { value: 'A%' } } })).toEqual(['rose']);
        expect(await names({ prefix: { 'code.keyword': 'A' } })).toEqual(sorted('lily', 'flame', 'tulip', 'rose'));
        expect(await names({ wildcard: { 'code.keyword': 'A*B' } })).toEqual(sorted('lily', 'tulip', 'rose'));
        expect(await names({ wildcard: { 'code.keyword': 'A?B' } })).toEqual(['rose']);
        expect(await names({ wildcard: { 'code.keyword': { value: '*\\\\B' } } })).toEqual(['lily']);
        expect(await names({ wildcard: { 'code.keyword': { wildcard: 'A\\*B' } } })).toEqual([]);
        expect(await names({ wildcard: { 'code.keyword': 'A_%\\\\B' } })).toEqual(['lily']);
        expect(await names({ wildcard: { 'code.keyword': { value: 'a*c', case_insensitive: true } } })).toEqual([
          'flame',
        ]);
        // on a text field: the tokens, not analysed
        expect(await names({ prefix: { name: 'li' } })).toEqual(sorted('lily', 'flame', 'liliales'));
        expect(await names({ prefix: { name: 'Li' } })).toEqual([]);
        expect(await names({ wildcard: { description: 'cl*ing' } })).toEqual(['flame']);
        expect(await names({ wildcard: { description: '*ower' } })).toEqual(sorted('tulip', 'rose'));
        expect((await search({ wildcard: { description: { value: '*ower', boost: 4 } } })).output.maxScore).toBe(4);
      });

      it('range on numbers, strings and created/updated', async () => {
        expect(await names({ range: { height: { gte: 80, lt: 200 } } })).toEqual(sorted('lily', 'rose'));
        expect(await names({ range: { height: { gt: 80 } } })).toEqual(sorted('flame', 'rose'));
        expect(await names({ range: { height: { lte: '80' } } })).toEqual(sorted('lily', 'tulip'));
        expect(await names({ range: { since: { gte: '2020-01-01' } } })).toEqual(['lily']);
        expect(
          await names({ range: { created: { gte: beforeLater.toISOString() } } }, { nodeTypes: ['Note'] }),
        ).toEqual(['later']);
        expect(
          await names(
            { range: { updated: { lt: new Date(beforeLater.getTime() + 1000).toISOString() } } },
            { nodeTypes: ['Note'] },
          ),
        ).toEqual(['note']);
        expect(
          await names({ range: { created: { lt: beforeLater.getTime() + 1000 } } }, { nodeTypes: ['Note'] }),
        ).toEqual(['note']);
        // Instants before year 1 or after year 9999 compare as -infinity and infinity (PostgreSQL reads no other
        // form of them back from an ISO string).
        const notes = { nodeTypes: ['Note'] };
        expect(await names({ range: { created: { gte: '0000-01-01' } } }, notes)).toEqual(sorted('note', 'later'));
        expect(await names({ range: { created: { lt: '0000-01-01' } } }, notes)).toEqual([]);
        expect(await names({ range: { created: { gte: -8.64e15 } } }, notes)).toEqual(sorted('note', 'later'));
        expect(await names({ range: { created: { lte: 8.64e15 } } }, notes)).toEqual(sorted('note', 'later'));
        expect(await names({ range: { created: { gt: 253402300800000 } } }, notes)).toEqual([]);
        expect(await names({ term: { created: '0000-01-01' } }, notes)).toEqual([]);
        expect(await names({ query_string: { query: 'created:[0000-01-01 TO 2020-01-01]' } }, notes)).toEqual([]);
        await badRequest({ range: { created: { gte: 8.64e15 + 1 } } });
        await badRequest({ range: { created: { gte: 'yesterday' } } }, /created\.gte/);
        await badRequest({ range: { created: { gte: '2024-02-30' } } });
        await badRequest({ range: { height: { gte: 1, lt: 'x' } } });
      });

      it('exists and match_all', async () => {
        expect(await names({ exists: { field: 'edible' } })).toEqual(sorted('lily', 'flame', 'tulip'));
        expect(await names({ exists: { field: 'rank.keyword' } })).toEqual(['liliales']);
        expect(await names({ match_all: {} }, { nodeTypes: ['Taxon', 'Note'] })).toEqual(
          sorted('liliales', 'note', 'later'),
        );
        expect((await search({ match_all: { boost: 2 } }, { nodeTypes: ['Taxon'] })).output.maxScore).toBe(2);
        expect(await names({ match_none: {} })).toEqual([]);
      });
    });

    describe('match_phrase', () => {
      it('matches the analysed words in order, with slop, boost and zero_terms_query', async () => {
        expect(await names({ match_phrase: { description: 'White Lily' } })).toEqual(['lily']);
        expect(await names({ match_phrase: { description: 'lily white' } })).toEqual([]);
        expect(await names({ match_phrase: { description: { query: 'lily white', slop: 2 } } })).toEqual(['lily']);
        expect((await names({ match_phrase: { description: { query: 'a lily', slop: 1 } } })).sort()).toEqual([
          'flame',
          'lily',
          'rose',
        ]);
        expect(await names({ match_phrase: { name: 'tulip' } })).toEqual(['tulip']);
        expect(await names({ match_phrase: { 'name.keyword': 'Flame Lily' } })).toEqual(['flame']);
        expect(await names({ match_phrase: { '*': 'true lily' } })).toEqual(['lily']);
        expect(
          (await search({ match_phrase: { description: { query: 'white lily', boost: 3 } } })).output.maxScore,
        ).toBeGreaterThan((await search({ match_phrase: { description: 'white lily' } })).output.maxScore! * 2);
        expect(
          await names(
            { match_phrase: { description: { query: '!!', zero_terms_query: 'all' } } },
            { nodeTypes: ['Taxon'] },
          ),
        ).toEqual(['liliales']);
        await badRequest({ match_phrase: { description: { query: 'a lily', slop: -1 } } }, /slop/);
        await badRequest(
          { match_phrase: { description: { query: 'a lily', fuzziness: 1 } } },
          /unknown parameter 'fuzziness'/,
        );
        await badRequest({ match_phrase: { description: { slop: 1 } } }, /needs 'query'/);
      });

      it("agrees with Lucene's sloppy phrase on random token sequences", async () => {
        // Lucene: each word of the phrase at a distinct position p_i, and max(p_i - i) - min(p_i - i) <= slop.
        const lucene = (tokens: string[], phrase: string[], slop: number): boolean => {
          const choose = (i: number, used: Set<number>, lo: number, hi: number): boolean => {
            if (i === phrase.length) return hi - lo <= slop;
            return tokens.some((t, p) => {
              if (t !== phrase[i] || used.has(p)) return false;
              const d = p - i;
              return choose(i + 1, new Set([...used, p]), Math.min(lo, d), Math.max(hi, d));
            });
          };
          return choose(0, new Set(), Infinity, -Infinity);
        };
        let seed = 7;
        const random = (n: number) => {
          seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
          return (seed >>> 16) % n;
        };
        const cases: Array<[string[], string[], number]> = [];
        for (let k = 0; k < 300; k++) {
          const tokens = Array.from({ length: 1 + random(8) }, () => 'abcd'[random(4)]!);
          // Repeated words only at slop 0: at a larger slop one occurrence may serve twice (migration 015).
          const slop = random(4);
          const words =
            slop === 0
              ? Array.from({ length: 2 + random(3) }, () => 'abcde'[random(5)]!)
              : [...new Set(Array.from({ length: 2 + random(3) }, () => 'abcde'[random(5)]!))];
          cases.push([tokens, words, slop]);
        }
        const { rows } = await h().db.query<{ m: boolean[] }>(
          `SELECT array_agg(trellis_search_phrase_in(string_to_array(c->>0, ' '), string_to_array(c->>1, ' '), (c->>2)::int) ORDER BY n) AS m
         FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(c, n)`,
          [JSON.stringify(cases.map(([t, w, s]) => [t.join(' '), w.join(' '), s]))],
        );
        const expected = cases.map(([t, w, s]) => lucene(t, w, s));
        expect(rows[0]!.m.map((m, i) => [cases[i]!.join(' / '), m])).toEqual(
          expected.map((m, i) => [cases[i]!.join(' / '), m]),
        );
        expect(expected.filter(Boolean).length).toBeGreaterThan(30);
        expect(expected.filter((m) => !m).length).toBeGreaterThan(30);
      });
    });

    describe('bool', () => {
      it('must, should, must_not, filter and minimum_should_match; filter and must_not do not score', async () => {
        expect(
          await names({
            bool: { must: { match: { description: 'lily' } }, must_not: [{ term: { 'name.keyword': 'Rose' } }] },
          }),
        ).toEqual(['flame', 'lily']);
        expect(
          await names({ bool: { filter: [{ term: { petals: 6 } }], should: [{ match: { name: 'tulip' } }] } }),
        ).toEqual(['tulip', ...sorted('lily', 'flame')]);
        const filtered = await search({ bool: { filter: { term: { petals: 6 } } } });
        expect(filtered.output.maxScore).toBe(0);
        expect(filtered.output.totalHits).toBe(3);
        expect(
          await names({
            bool: {
              should: [{ match: { name: 'rose' } }, { match: { name: 'tulip' } }, { match: { description: 'flower' } }],
              minimum_should_match: 2,
            },
          }),
        ).toEqual(['tulip', 'rose']);
        expect(
          await names({ bool: { should: [{ match: { name: 'rose' } }, { match: { name: 'nothing' } }] } }),
        ).toEqual(['rose']);
        expect(
          await names({ bool: { must_not: { exists: { field: 'petals' } } } }, { nodeTypes: ['Plant', 'Taxon'] }),
        ).toEqual(['liliales']);
        expect(
          await names({
            bool: {
              must: [
                { match: { name: 'lily' } },
                { bool: { should: [{ term: { height: 80 } }, { term: { height: 1 } }] } },
              ],
            },
          }),
        ).toEqual(['lily']);
      });
    });

    describe('query_string', () => {
      it('parses the Lucene syntax', async () => {
        expect(await names({ query_string: { query: 'name:lily AND petals:6' } })).toEqual(sorted('lily', 'flame'));
        expect(await names({ query_string: { query: 'lily -flame', default_field: 'name' } })).toEqual(['lily']);
        expect(await names({ query_string: { query: 'lily NOT name:flame', default_field: 'name' } })).toEqual([
          'lily',
        ]);
        expect(await names({ query_string: { query: 'description:"white lily"' } })).toEqual(['lily']);
        expect(await names({ query_string: { query: 'tulip OR rose', default_field: 'name' } })).toEqual(
          sorted('tulip', 'rose'),
        );
        expect(
          await names({ query_string: { query: 'tulip rose', default_field: 'name', default_operator: 'AND' } }),
        ).toEqual([]);
        expect(await names({ query_string: { query: 'height:[50 TO 150]' } })).toEqual(sorted('lily', 'rose'));
        expect(await names({ query_string: { query: 'height:>=100' } })).toEqual(sorted('flame', 'rose'));
        expect(await names({ query_string: { query: 'name:li*' } })).toEqual(sorted('lily', 'flame', 'liliales'));
        expect(await names({ query_string: { query: 'thorns' } })).toEqual(['rose']);
        expect(await names({ query_string: { query: 'istanbul OR ärger' } })).toEqual(['note']);
        expect(await names({ query_string: { query: '(name:tulip OR name:rose) AND petals:5' } })).toEqual(['rose']);
        expect(await names({ query_string: { query: '_exists_:rank' } })).toEqual(['liliales']);
        expect(await names({ query_string: { query: 'name.keyword:Lily' } })).toEqual(['lily']);
        expect(await names({ query_string: { query: 'edible:true' } })).toEqual(['tulip']);
      });

      it("reads the rest of Lucene's syntax: field groups, +/-, && and ||, boosts, fuzziness, phrase slop, open ranges", async () => {
        expect(await names({ query_string: { query: 'name:(tulip OR rose)' } })).toEqual(sorted('tulip', 'rose'));
        expect(await names({ query_string: { query: 'name:(lily -flame)' } })).toEqual(['lily']);
        expect(await names({ query_string: { query: '+name:lily -name:flame' } })).toEqual(['lily']);
        expect(await names({ query_string: { query: 'name:lily && petals:6' } })).toEqual(sorted('lily', 'flame'));
        expect(await names({ query_string: { query: 'name:tulip || name:rose' } })).toEqual(sorted('tulip', 'rose'));
        expect(await names({ query_string: { query: '!name:lily', default_field: 'name' } })).not.toContain('lily');
        // A boost decides the order of otherwise equal matches, whichever way it is put.
        expect((await names({ query_string: { query: 'name:tulip OR name:rose^3' } }))[0]).toBe('rose');
        expect((await names({ query_string: { query: 'name:tulip^3 OR name:rose' } }))[0]).toBe('tulip');
        expect(await names({ query_string: { query: 'name:tulp~1' } })).toEqual(['tulip']);
        expect(await names({ query_string: { query: 'name:tulp' } })).toEqual([]);
        expect(await names({ query_string: { query: 'name:tlp~' } })).toEqual(['tulip']);
        expect(await names({ query_string: { query: 'description:"lily white"~2' } })).toEqual(['lily']);
        expect(await names({ query_string: { query: 'height:{40 TO 200]' } })).toEqual(sorted('lily', 'flame', 'rose'));
        expect(await names({ query_string: { query: 'height:[* TO 80}' } })).toEqual(['tulip']);
        expect(await names({ query_string: { query: 'height:<=40' } })).toEqual(['tulip']);
      });

      it("finds a phrase's words next to each other and in order, in one value; ~N and phrase_slop let them move", async () => {
        // lily: "the white lily, a true lily"; flame: "a climbing lily"; rose: "… thorns, a lily it is not; …"
        expect(await names({ query_string: { query: 'description:"lily white"' } })).toEqual([]);
        expect(await names({ query_string: { query: 'description:"lily white"~1' } })).toEqual([]);
        expect(await names({ query_string: { query: 'description:"lily white"', phrase_slop: 2 } })).toEqual(['lily']);
        expect(await names({ query_string: { query: 'description:"a lily"' } })).toEqual(['rose']);
        expect(await names({ query_string: { query: 'description:"A, LILY!"' } })).toEqual(['rose']);
        expect((await names({ query_string: { query: 'description:"a lily"~1' } })).sort()).toEqual([
          'flame',
          'lily',
          'rose',
        ]);
        // Without a field: a phrase in any one field. "lily in the garden" is a member of images.
        expect(await names({ query_string: { query: '"white lily"' } })).toEqual(['lily']);
        expect(await names({ query_string: { query: '"lily garden"' } })).toEqual([]);
        expect(await names({ query_string: { query: '"lily garden"~2' } })).toEqual(['lily']);
        expect(await names({ query_string: { query: 'images.description:"in the garden"' } })).toEqual(['lily']);
        // The words of two members of an array are not one phrase ("lily in the garden", "close up").
        expect(await names({ query_string: { query: 'images.description:"garden close"' } })).toEqual([]);
        expect(await names({ query_string: { query: 'images.description:(garden AND close)' } })).toEqual(['lily']);
        // Another user's element stays out, phrase or not.
        expect(await names({ query_string: { query: '"this lily"' } })).toEqual([]);
        expect(await names({ query_string: { query: '"this lily"' } }, {}, bob)).toEqual(['secret']);
        await badRequest({ query_string: { query: '"a lily"', phrase_slop: -1 } }, /phrase_slop/);
      });

      it('answers a malformed query string with 400', async () => {
        await badRequest({ query_string: { query: 'name:(lily' } }, /query_string\.query/);
        await badRequest({ query_string: { query: 'lily AND' } });
        await badRequest({ query_string: { query: 'name:/li.y/' } }, /regular expressions/);
        await badRequest({ query_string: { default_field: 'name' } });
        await badRequest({ query_string: { query: 'name:lily~3' } }, /edit distance is 0, 1 or 2 at position/);
        await badRequest({ query_string: { query: 'AND lily' } }, /needs a clause before it/);
      });
    });

    describe('options', () => {
      it('minScore drops hits below it and reduces totalHits; pages are 1-based windows in score order', async () => {
        const all = await names({ match: { description: 'lily' } });
        expect(all).toEqual(['flame', 'lily', 'rose']);
        const min = await search({ match: { description: 'lily' } }, { minScore: 1.7 });
        expect(min.output.elements.map((e) => e.id)).toEqual([el.flame]);
        expect(min.output.totalHits).toBe(1);
        expect((await search({ match: { description: 'lily' } }, { minScore: 5 })).output).toEqual({
          elements: [],
          totalHits: 0,
          totalHitsRelation: 'eq',
          maxScore: null,
        });
        const page = (n: number) => search({ match: { description: 'lily' } }, { page: n, pageSize: 2 });
        const [p1, p2, p3] = await Promise.all([page(1), page(2), page(3)]);
        expect(p1.output.elements.map((e) => e.id)).toEqual([el.flame, el.lily]);
        expect(p2.output.elements.map((e) => e.id)).toEqual([el.rose]);
        expect(p3.output.elements).toEqual([]);
        for (const p of [p1, p2, p3]) expect(p.output).toMatchObject({ totalHits: 3, maxScore: 1.8 });
      });

      it('restricts to node types and relation types', async () => {
        expect(await names({ match: { name: 'lily' } }, { nodeTypes: ['Taxon'] })).toEqual([]);
        expect(await names({ match: { title: 'lily' } }, { nodeTypes: ['Note'] })).toEqual(['note']);
        expect(await names({ match: { label: 'lily' } })).toEqual(['member']);
        expect(await names({ match: { label: 'lily' } }, { nodeTypes: ['Plant', 'Note'] })).toEqual([]);
        expect(await names({ match: { label: 'lily' } }, { relationTypes: ['IS_MEMBER_OF'] })).toEqual(['member']);
        expect(await names({ match_all: {} }, { relationTypes: ['IS_MEMBER_OF'] })).toEqual(['member']);
        expect(await names({ match_all: {} }, { nodeTypes: [], relationTypes: [] })).toEqual([]);
      });

      it('shows the combined query like the reference implementation', async () => {
        const { combinedQuery } = await search({ match: { name: 'lily' } }, { page: 3, pageSize: 10, minScore: 0.5 });
        expect(combinedQuery).toEqual({
          from: 20,
          size: 10,
          min_score: 0.5,
          query: { bool: { must: [{ match: { name: 'lily' } }, { term: { _searchableBy: alice.id } }] } },
        });
      });
    });

    describe('access', () => {
      it('returns only what the user may search; a HAS_SEARCH_ACCESS grant makes it appear', async () => {
        expect(await names({ match: { name: 'lily' } })).toEqual(sorted('lily', 'flame'));
        expect(await names({ match: { name: 'lily' } }, {}, bob)).toEqual(['secret']);
        const grant = await h().request('POST', '/', {
          token: bob.token,
          body: { type: 'HAS_SEARCH_ACCESS', start: alice.id, end: el.secret },
        });
        expect(grant.status, grant.text).toBe(201);
        expect(new Set(await names({ match: { name: 'lily' } }))).toEqual(new Set(['lily', 'flame', 'secret']));
        expect(
          (await h().request('DELETE', `/${grant.headers.get('location')!.slice(1)}`, { token: bob.token })).status,
        ).toBe(204);
        expect(await names({ match: { name: 'lily' } })).toEqual(sorted('lily', 'flame'));
      });

      it('expands a fuzzy term only into words of what the user may search', async () => {
        // Bob's exact word would take the one expansion slot, and tell Alice that it exists somewhere.
        const mine = await createElement(h(), alice.token, { type: 'Probe', data: { word: 'hunter0' } });
        const his = await createElement(h(), bob.token, { type: 'Probe', data: { word: 'hunter2' } });
        const probe = (query: string, user: User) =>
          search({ match: { word: { query, fuzziness: 1, max_expansions: 1 } } }, { nodeTypes: ['Probe'] }, user).then(
            (r) => r.output.elements.map((e) => e.id),
          );
        for (const guess of ['hunter2', 'hunter5', 'hunter0']) expect(await probe(guess, alice), guess).toEqual([mine]);
        expect(await probe('hunter2', bob)).toEqual([his]);
        expect(await probe('hunter0', bob)).toEqual([his]);
        const anyField = await search(
          { match: { '*': { query: 'hunter2', fuzziness: 1, max_expansions: 1 } } },
          { nodeTypes: ['Probe'] },
        );
        expect(anyField.output.elements.map((e) => e.id)).toEqual([mine]);
        expect(
          (await search({ query_string: { query: 'word:hunter2~1' } }, { nodeTypes: ['Probe'] })).output.elements.map(
            (e) => e.id,
          ),
        ).toEqual([mine]);
      });

      it('agrees with the access module on every element, for every kind of grant (SEARCH, and READ as hydration decides it)', async () => {
        const users: Record<string, User> = {};
        for (const name of ['owner', 'member', 'reader', 'searcher', 'creator', 'outsider', 'crewman', 'friend'])
          users[name] = await userWithToken(h(), `${name}@engine-access.dev`);
        const O = users.owner!.token;
        const relate = async (token: string, type: string, start: string, end: string) => {
          const res = await h().request('POST', '/', {
            token,
            body: { type, start, end, data: { note: 'access relation' } },
          });
          expect(res.status, res.text).toBe(201);
          return res.headers.get('location')!.slice(1);
        };
        const group = await createElement(h(), O, { type: 'Group', data: { note: 'group' } });
        const outer = await createElement(h(), O, { type: 'Group', data: { note: 'outer group' } });
        await relate(O, 'IS_IN_GROUP', users.member!.id, group);
        await relate(O, 'IS_IN_GROUP', group, outer);
        const f1 = await createElement(h(), O, { type: 'Folder', data: { note: 'f1' } }, outer);
        const f2 = await createElement(h(), O, { type: 'Folder', data: { note: 'f2' } }, f1);
        const doc = await createElement(h(), O, { type: 'Doc', data: { note: 'doc' } }, f2);
        const other = await createElement(h(), O, { type: 'Doc', data: { note: 'other' } });
        await relate(O, 'HAS_READ_ACCESS', users.reader!.id, f2);
        await relate(O, 'HAS_SEARCH_ACCESS', users.searcher!.id, doc);
        await relate(O, 'HAS_CREATE_ACCESS', users.creator!.id, f2);
        const created = await createElement(
          h(),
          users.creator!.token,
          { type: 'Doc', data: { note: 'by creator' } },
          f2,
        );
        await createElement(h(), O, { type: 'Doc', data: { note: 'below created' } }, created);
        await relate(O, 'LINKS', doc, other);
        await relate(O, 'LINKS', f2, doc);
        // Keys that are creators and not owners (searchableIndexed decides those rows by the rule, not by the row): a
        // group that CREATED a node (only the service writes CREATED, from the user who creates; a backup may hold
        // any), and a user who created one and is the end of another user's grant (written as a backup would be).
        const crew = await createElement(h(), O, { type: 'Group', data: { note: 'crew' } });
        await relate(O, 'IS_IN_GROUP', users.crewman!.id, crew);
        await insertElement(h().db, {
          id: crypto.randomUUID(),
          type: 'CREATED',
          start: crew,
          end: other,
          data: {},
          at: new Date(),
        });
        await insertElement(h().db, {
          id: crypto.randomUUID(),
          type: 'HAS_READ_ACCESS',
          start: users.friend!.id,
          end: users.creator!.id,
          data: {},
          at: new Date(),
        });
        const { rows } = await h().db.query<{ id: string }>('SELECT id FROM elements');
        const ids = rows.map((r) => r.id);
        // Both ways of deciding: hashing the caller's grants (the default caps), and per candidate (no grant is
        // hashed when the cap is 0), as for a user who owns more than ACCESS_SET_CAPS.grants elements directly.
        for (const caps of [ACCESS_SET_CAPS, { grants: 0 }])
          for (const [name, user] of Object.entries(users)) {
            const label = `${name}, grants cap ${caps.grants}`;
            const expected = await permittedIds(h().db, user.id, 'SEARCH', ids);
            const { output } = await runSearchEngine(
              sqlSearchEngine(caps),
              sqlTransactions(h().db).direct,
              user.id,
              { match_all: {} },
              { ...OPTIONS, pageSize: 1000 },
            );
            const found = output.elements.map((e) => e.id);
            expect(new Set(found), label).toEqual(expected);
            expect(found.length, label).toBe(expected.size);
            expect(output.totalHits, label).toBe(expected.size);
            // READ, as hydration decides it set-wise, agrees with the per-element rule too.
            const readable = await permittedIds(h().db, user.id, 'READ', ids);
            const hydrated = await readableElements(h().db, user.id, ids, caps);
            expect(new Set(hydrated.map((e) => e.id)), `${label} READ`).toEqual(readable);
            expect(hydrated.length, `${label} READ`).toBe(readable.size);
          }
        expect(
          (await search({ match: { note: 'doc' } }, {}, users.searcher!)).output.elements.map((e) => e.id),
        ).toEqual([doc]);
      });
    });

    describe('validation', () => {
      it('answers an unknown kind, a malformed clause or a wrong type with 400 naming the path', async () => {
        await badRequest({ no_such_kind: {} }, /^query: unknown or unsupported query kind 'no_such_kind'/);
        await badRequest({}, /exactly one query kind/);
        await badRequest({ match: { a: 'x' }, term: { b: 'y' } }, /exactly one query kind/);
        await badRequest(
          { bool: { must: [{ match: { name: 'x' } }, { matchh: {} }] } },
          /query\.bool\.must\[1\]: unknown/,
        );
        await badRequest({ bool: { should: 'x' } }, /query\.bool\.should: must be a query object/);
        await badRequest({ bool: { musst: [] } }, /unknown parameter 'musst'/);
        await badRequest({ match: { name: { query: 'x', operator: 'xor' } } }, /query\.match\.name\.operator/);
        await badRequest({ match: { name: { query: 'x', fuzziness: 3 } } }, /fuzziness/);
        await badRequest({ match: { name: { query: 'x', boost: 'high' } } }, /boost/);
        // U+0000 (which an expression can produce after the body was checked) is no stored text: 400, not a 500.
        for (const q of [
          { match: { name: 'a\u0000b' } },
          { term: { 'name.keyword': 'a\u0000b' } },
          { wildcard: { name: 'a\u0000*' } },
          { exists: { field: 'a\u0000' } },
          { query_string: { query: 'x\u0000y' } },
          { range: { name: { gte: '\u0000' } } },
        ])
          await badRequest(q, /U\+0000/);
        // Boosts are bounded so that no score overflows float8 in the database (1e308 was a 500).
        await badRequest(
          { match: { name: { query: 'lily', boost: 1e308 } } },
          /boost: must be a number from 0 to 1000/,
        );
        await badRequest({ bool: { should: [{ match_all: {} }], boost: 1001 } }, /query\.bool\.boost/);
        await badRequest({ query_string: { query: 'name:lily^1000000000' } }, /\^ boost/);
        expect(
          await names({ bool: { must: [{ match: { name: { query: 'lily', boost: 1000 } } }], boost: 1000 } }),
        ).toEqual(sorted('lily', 'flame'));
        await badRequest({ match: { name: { text: 'x' } } }, /unknown parameter 'text'/);
        await badRequest({ match: { name: null } }, /query\.match\.name/);
        await badRequest({ match: { a: 'x', b: 'y' } }, /exactly one field/);
        await badRequest({ term: { name: ['x'] } }, /query\.term\.name/);
        await badRequest({ terms: { name: 'x' } }, /list of values/);
        await badRequest({ range: { height: 5 } }, /query\.range\.height/);
        await badRequest({ range: { height: { from: 5 } } }, /unknown parameter 'from'/);
        await badRequest({ exists: { field: 5 } }, /query\.exists\.field/);
        await badRequest({ ids: { values: 'x' } }, /query\.ids\.values/);
        await badRequest({ prefix: { _id: 'x' } }, /prefix and wildcard/);
        await badRequest({ match: { name: { query: 'x', minimum_should_match: 'most' } } }, /minimum_should_match/);
        await badRequest('just a string', /query: must be a query object/);
        await badRequest(
          { bool: { must: Array.from({ length: 2000 }, () => ({ match_all: {} })) } },
          /at most 1024 clauses/,
        );
        let deep: unknown = { match_all: {} };
        for (let i = 0; i < 40; i++) deep = { bool: { must: deep } };
        await badRequest(deep, /nest at most/);
      });

      it('quotes every value: quotes, backslashes and tsquery syntax are plain text', async () => {
        const id = await createElement(h(), alice.token, {
          type: 'Odd',
          data: { odd: "it's a \\ back'slash & | ! ( ) :* <-> value", tok: 'plain' },
        });
        expect(
          (
            await search({ term: { 'odd.keyword': "it's a \\ back'slash & | ! ( ) :* <-> value" } })
          ).output.elements.map((e) => e.id),
        ).toEqual([id]);
        expect(
          (await search({ prefix: { 'odd.keyword': "it's a \\ back'" } })).output.elements.map((e) => e.id),
        ).toEqual([id]);
        expect(
          (await search({ match: { odd: "slash & | ! ( ) :* <-> it's" } })).output.elements.map((e) => e.id),
        ).toEqual([id]);
        expect((await search({ match: { "odd' | 'x": 'plain' } })).output.totalHits).toBe(0);
        expect((await search({ term: { 'tok.keyword': "plain' | 'x" } })).output.totalHits).toBe(0);
        // field names reach jsonpath and LIKE patterns quoted too
        for (const field of ['we"ird$.x', "it's", 'a\\b', '%', '_'])
          for (const query of [
            { range: { [field]: { gte: 1 } } },
            { wildcard: { [field]: 'x*' } },
            { match: { [field]: { query: 'plian', fuzziness: 1 } } },
          ])
            expect((await search(query)).output.totalHits, JSON.stringify(query)).toBe(0);
        expect((await h().request('DELETE', `/${id}`, { token: alice.token })).status).toBe(204);
      });

      it('answers large and deeply nested queries (the statement stays shallow), and counts match terms and query_string clauses as clauses', async () => {
        // 1,000 terms: a chain of 1,000 additions in the score broke PGlite's stack (a 500, a corrupted session).
        const many = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(' ');
        expect((await search({ query_string: { query: `lily ${many}` } })).output.totalHits).toBeGreaterThan(0);
        expect((await search({ match: { name: `lily ${many}` } })).output.totalHits).toBeGreaterThan(0);
        await badRequest({ query_string: { query: `${many} ${many}x` } }, /at most 1024 clauses/);
        // Nested 16 deep, 60 wide, with a fuzzy term, a wildcard and boosts at the bottom.
        let q: unknown = { query_string: { query: '(((((lily OR b) AND c)^2 OR lilx~1) AND li*)^3)' } };
        for (let i = 0; i < 16; i++)
          q = {
            bool: {
              should: [
                q,
                ...Array.from({ length: 60 }, (_, k) => ({ match: { [`f${k}`]: { query: `w${k}`, boost: 2 } } })),
              ],
              boost: 3,
            },
          };
        await search(q);
        expect((await search({ match: { name: 'lily' } })).output.totalHits).toBe(2); // and the session is sound
      });

      it('finds every word of a string under a field name holding backslashes (migration 009)', async () => {
        // The tokenizer's replacement text treats `\\`, `\&` and `\1`-`\9` as escapes; before 009 all words but the
        // last were indexed under a mangled field name.
        const data = {
          'a\\1b': 'first middle last',
          'c\\\\d': 'first middle last',
          'x\\&y': 'first middle last',
          'n\\': { 'k\\2': 'first middle last' },
          plain: 'first middle last',
        };
        const id = await createElement(h(), alice.token, { type: 'Backslash', data });
        for (const field of ['a\\1b', 'c\\\\d', 'x\\&y', 'n\\.k\\2', 'plain']) {
          for (const word of ['first', 'middle', 'last']) {
            const query = { match: { [field]: word } };
            expect(
              (await search(query)).output.elements.map((e) => e.id),
              JSON.stringify(query),
            ).toEqual([id]);
          }
          for (const query of [
            { prefix: { [field]: 'mid' } },
            { wildcard: { [field]: 'f?rs*' } },
            { term: { [`${field}.keyword`]: 'first middle last' } },
          ])
            expect(
              (await search(query)).output.elements.map((e) => e.id),
              JSON.stringify(query),
            ).toEqual([id]);
        }
        expect((await h().request('DELETE', `/${id}`, { token: alice.token })).status).toBe(204);
      });
    });
  },
  // Huge elements (more than the default element limits allow, as a backup or raised limits may bring) are part of
  // what the search must handle.
  { settings: { element: { maxDataSizeInBytes: 8 * 1024 * 1024, maxValues: 100_000 } } },
);
