// What the answers about an upload in progress say (its offset, length and limits), and the refusals that leave it
// in progress: HTTP answers those with the upload's fields (Upload-Offset, Upload-Complete, Upload-Limit), which
// real clients read after each append, also after a failed one.
import { Problem } from '../../errors.js';

export interface UploadLimits {
  /** Seconds until the upload expires, counted from the response. */
  maxAge: number;
  maxSize: number;
  minAppendSize: number;
  maxAppendSize: number;
}

/** What the responses of an upload in progress say about it. */
export interface UploadState {
  id: string;
  elementId: string;
  offset: number;
  /** The declared total, when one was declared. */
  length: number | null;
  expires: Date;
  limits: UploadLimits;
}

/** A refusal after which the upload is still in progress, in `state`. */
export class UploadInProgress extends Problem {
  constructor(
    problem: Problem,
    readonly state: UploadState,
  ) {
    super(problem.slug, problem.detail, problem.extensions, problem.headers);
  }
}

/** `problem`, answered with the fields of the upload in progress. */
export const inProgress = (problem: Problem, state: UploadState): Problem => new UploadInProgress(problem, state);

export const tooLarge = (max: number) =>
  new Problem('bad-content', `The file would be larger than the maximum of ${max} bytes (max-size).`);
export const chunkTooLarge = (max: number) =>
  new Problem('bad-content', `A chunk may have at most ${max} bytes (max-append-size).`);
export const interrupted = (kept: number) =>
  new Problem(
    'bad-content',
    `The request body ended before it was complete; the ${kept} bytes that arrived were kept. Ask for the offset (HEAD) and go on from there.`,
  );
export const leaseLostProblem = () =>
  new Problem(
    'conflict',
    'Another request took over this upload while this one was appending; ask for the offset (HEAD) and go on from there.',
  );

export function offsetMismatch(at: number, provided: number, state: UploadState): Problem {
  return inProgress(
    new Problem('conflict', `The upload is at offset ${at}, not ${provided}.`, {
      'expected-offset': at,
      'provided-offset': provided,
    }),
    state,
  );
}
