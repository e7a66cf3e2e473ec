// Schema change 6: the index of GET /principals?identifier= (storage/queries/principals.ts).

/**
 * Nodes by their `name` as the principal lookup compares it (trimmed, without case), so that finding a person or a
 * group by name is an index probe rather than a scan of every node. Partial (nodes only) and an expression over
 * `data`, so it costs a write only an entry for a node's name.
 */
export const PRINCIPAL_NAMES = /* sql */ `
CREATE INDEX elements_name_folded ON elements (lower(btrim(data->>'name'))) WHERE start_id IS NULL;
`;
