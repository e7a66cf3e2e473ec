// The sign-in: where the token is kept, and what happens when the service stops accepting it. By default the token
// is kept in local storage, so that every tab of the explorer is signed in; on a shared computer the person chooses
// session storage, which forgets it when the tab closes. Other sites cannot read either.

const TOKEN_KEY = 'trellis-explorer-token';
/** The page a person was on when their sign-in ended, so that signing in again returns there. */
const RETURN_KEY = 'trellis-explorer-return';

/** Fired on window when the service refuses the session's token (expired, revoked, signed out elsewhere). */
export const SESSION_ENDED = 'trellis-session-ended';
/** Fired on window when the token changes (sign-in, sign-out, here or in another tab). */
export const SESSION_CHANGED = 'trellis-session-changed';

export const session = {
  get token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY) ?? localStorage.getItem(TOKEN_KEY);
  },
  /** Keeps the token: in this tab only when the person said the computer is shared. */
  signIn(token: string, sharedComputer: boolean): void {
    sessionStorage.removeItem(TOKEN_KEY);
    localStorage.removeItem(TOKEN_KEY);
    (sharedComputer ? sessionStorage : localStorage).setItem(TOKEN_KEY, token);
    window.dispatchEvent(new Event(SESSION_CHANGED));
  },
  signOut(): void {
    sessionStorage.removeItem(TOKEN_KEY);
    localStorage.removeItem(TOKEN_KEY);
    window.dispatchEvent(new Event(SESSION_CHANGED));
  },
  /** The service refused the token: it is forgotten, and the page the person was on is remembered. */
  ended(): void {
    if (this.token === null) return;
    sessionStorage.setItem(RETURN_KEY, location.hash);
    this.signOut();
    window.dispatchEvent(new Event(SESSION_ENDED));
  },
  /** Where to go after signing in: the remembered page (once), else Browse. */
  takeReturn(): string {
    const hash = sessionStorage.getItem(RETURN_KEY);
    sessionStorage.removeItem(RETURN_KEY);
    return hash && !hash.startsWith('#/account') ? hash : '#/';
  },
  get hasReturn(): boolean {
    return sessionStorage.getItem(RETURN_KEY) !== null;
  },
};

// A sign-in or sign-out in another tab reaches this one through the storage event.
window.addEventListener('storage', (event) => {
  if (event.key === TOKEN_KEY || event.key === null) window.dispatchEvent(new Event(SESSION_CHANGED));
});
