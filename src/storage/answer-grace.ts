// Shared by the pool's statements (db.ts) and the pipelined read lanes (read-lanes.ts).

/**
 * How much longer than its statement timeout this side waits for a statement's answer. The server cancels the
 * statement at the timeout and says so at once; a server that says nothing by then is not answering at all (frozen,
 * or out of reach), and never will apply its own timeout.
 */
export const ANSWER_GRACE_MS = 1000;
