// What a resumable upload was started against, checked again when it completes.
//
// A resumable POST or PUT of /<id>/file checked its mode (POST: no file yet, else 409) and its If-Match /
// If-None-Match against the element's file when the upload started, and the completion replaced whatever file the
// element had by then: a file written by someone else in between was lost without a sign (the lost update the
// preconditions exist to prevent). The upload now keeps its mode and preconditions; the completion evaluates them
// again against the file it would replace, under the element's row lock.
export default /* sql */ `
ALTER TABLE uploads
  ADD COLUMN file_mode text NOT NULL DEFAULT 'replace' CHECK (file_mode IN ('create', 'replace')),
  ADD COLUMN if_match text,
  ADD COLUMN if_none_match text;
`;
