// elements_type (001) is a prefix of elements_type_kind (004): a lookup by type alone is an index-only scan of
// elements_type_kind just as well (no slower on the benchmark's data, with the same plans), while every element
// written paid for both indexes, and POST / writes three rows.
export default /* sql */ `
DROP INDEX IF EXISTS elements_type;
`;
