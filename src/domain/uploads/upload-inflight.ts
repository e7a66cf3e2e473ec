// The requests of this instance that are appending to an upload right now (a creating POST/PUT or a PATCH), one
// per upload at most.
//
// The draft's recommended handling of concurrent requests to one upload: a new append, offset retrieval or
// cancellation ends the request that is still appending (the client has given up on it, or a network failure
// left it hanging on the server's side) before it is processed. Ending it closes its connection: its body stops,
// the bytes that arrived are kept and the offset is committed, and only then does the new request go on, so it
// sees the final offset. Requests on other instances are kept apart by the lease in the database instead.

interface Running {
  /** Ends the request: closes its connection. */
  abort(): void;
  /** Resolves once the request has finished with the upload (its bytes committed, its lease returned). */
  settled: Promise<void>;
}

export class UploadsInFlight {
  private readonly running = new Map<string, Running>();

  /** Ends the request at work on upload `id` here, if any, and waits until it has settled. True if there was one. */
  async preempt(id: string): Promise<boolean> {
    let found = false;
    for (let r = this.running.get(id); r; r = this.running.get(id)) {
      found = true;
      r.abort();
      await r.settled;
    }
    return found;
  }

  /** Ends the request at work on upload `id` here, if any, without waiting (its upload is gone anyway). */
  abort(id: string): void {
    this.running.get(id)?.abort();
  }

  /**
   * Ends whatever is at work on upload `id` here, then registers the calling request (ended with `abort`).
   * `leave` deregisters it: call it once the request has finished with the upload. `preempted` says whether an
   * earlier request had to be ended (the upload may have changed meanwhile).
   */
  async enter(id: string, abort: () => void): Promise<{ leave: () => void; preempted: boolean }> {
    let preempted = false;
    for (let r = this.running.get(id); r; r = this.running.get(id)) {
      preempted = true;
      r.abort();
      await r.settled;
    }
    // No await between the last look at the map and this line: two newcomers cannot both get in.
    let settle!: () => void;
    const entry: Running = { abort, settled: new Promise<void>((resolve) => (settle = resolve)) };
    this.running.set(id, entry);
    return {
      preempted,
      leave: () => {
        if (this.running.get(id) === entry) this.running.delete(id);
        settle();
      },
    };
  }

  has(id: string): boolean {
    return this.running.has(id);
  }
}
