// elements_type (001) is a prefix of elements_type_kind (004): a lookup by type alone is an index-only scan of
// elements_type_kind just as well (measured on the bench data set, 100k nodes: `type = 'Folder'` 5.5 -> 2.5 ms,
// `type = ANY(two relation types)` 19.2 -> 15.3 ms, the same plans otherwise), while every element written paid for
// both: a batch INSERT of relations as backup:load sends it 69-72 -> 66-67 us per row (scratch/bulk-cost.ts), and
// POST / writes three rows.
export default /* sql */ `
DROP INDEX IF EXISTS elements_type;
`;
