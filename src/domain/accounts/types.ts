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

/** A User or group as GET /principals names it: never an identifier, never a `_` property. */
export interface Principal {
  id: ElementId;
  type: string;
  /** Its `name` property when that is a string, else null. */
  name: string | null;
}

/** What GET /principals looks up: an exact text (identifier or name), or ids. */
export type PrincipalQuery = { identifier: string } | { ids: ElementId[] };
