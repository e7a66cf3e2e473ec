// Who a request acts for: the credentials it presents and the caller they authenticate.
import type { ElementId } from '../../values.js';

/** What a request presents: a token (by hash) or, without Authorization, the configured anonymous user. */
export type Credentials =
  | { tokenHash: string; anonymousUserId?: undefined }
  | { tokenHash?: undefined; anonymousUserId: string };

/** The user a request authenticated as. */
export interface Caller {
  userId: ElementId;
  /** The token the request authenticated with; null for the anonymous user. */
  tokenId: ElementId | null;
}
