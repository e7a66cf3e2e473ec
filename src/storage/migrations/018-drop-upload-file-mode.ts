// Uploads no longer record whether POST or PUT started them (migration 012 added it). A completion replaces the
// target's file whichever started it, as the spec's resumable upload table says ("The previous file, if any, is
// replaced"; "The last one to complete wins"); POST's 409 for an existing file is decided at the start, and the
// start's If-Match / If-None-Match (still stored) are what a completion checks again.
export default /* sql */ `
ALTER TABLE uploads DROP COLUMN file_mode;
`;
