// multi_match (src/search/language/multi-match.ts): one match per field, combined by its type.
import { describe, expect, it } from 'vitest';
import { parseQueryDsl } from '../../../../src/search/language/query-dsl.js';

describe('multi_match', () => {
  it('is one match per field: best_fields as the best, most_fields as the sum, phrase as best phrases', () => {
    const fields = ['name', 'note^3'];
    expect(parseQueryDsl({ multi_match: { query: 'a', fields } })).toMatchObject({
      k: 'max',
      queries: [
        { k: 'text', field: 'name', boost: 1 },
        { k: 'text', field: 'note', boost: 3 },
      ],
      boost: 1,
    });
    expect(parseQueryDsl({ multi_match: { query: 'a', fields, type: 'most_fields', boost: 2 } })).toMatchObject({
      k: 'bool',
      should: [{ field: 'name' }, { field: 'note' }],
      required: 1,
      boost: 2,
    });
    expect(parseQueryDsl({ multi_match: { query: 'a b', fields, type: 'phrase', slop: 1 } })).toMatchObject({
      k: 'max',
      queries: [{ mode: { k: 'phrase', slop: 1 } }, { mode: { k: 'phrase', slop: 1 } }],
    });
    expect(parseQueryDsl({ multi_match: { query: 'a' } })).toMatchObject({ k: 'text', field: null });
  });
});
