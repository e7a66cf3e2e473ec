// Schema change 2: the generation of an upload's bytes (domain/uploads, docs/decisions/026-upload-generations.md).
// A writer that takes an upload over from one whose lease ran out copies the committed bytes into a new generation
// and writes there; the row names the generation that counts, so a late writer's bytes never do.
export const UPLOAD_GENERATIONS = /* sql */ `
-- null: the first generation, under the upload's own id
ALTER TABLE uploads ADD COLUMN generation uuid;
`;
