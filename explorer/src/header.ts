// The header's right side: who is signed in and Sign out, or a Sign in link. Updated whenever the session changes
// (here, in another tab, or when the service ends it).
import { type GraphElement, instanceConfiguration, request } from './api.js';
import { h, replace } from './dom.js';
import { tell } from './notice.js';
import { navigate } from './router.js';
import { session } from './session.js';

let me: Promise<GraphElement | null> | null = null;

/** The signed-in user (GET /me), read once per token. */
export function currentUser(): Promise<GraphElement | null> {
  if (session.token === null) return Promise.resolve(null);
  me ??= request<GraphElement>('GET', '/me').then(
    (answer) => answer.body,
    () => null,
  );
  return me;
}

/** Forgets who was signed in (the next currentUser asks again). */
export function forgetUser(): void {
  me = null;
}

/** Deletes the token on the service (it ends everywhere, not just in this tab) and forgets it here. */
export async function signOut(): Promise<void> {
  await request('DELETE', '/token').catch(() => {});
  session.signOut();
  forgetUser();
  tell('Signed out.');
  navigate('#/account');
}

/**
 * The Webhooks link: webhooks belong to a signed-in user, so the navigation has it only while someone is signed in.
 * It is added after the router marked the current page, so it marks itself when it is that page.
 */
function showWebhooksLink(signedIn: boolean): void {
  const existing = document.getElementById('nav-webhooks');
  if (!signedIn) return void existing?.remove();
  if (existing) return;
  const link = h('a', { href: '#/webhooks' }, 'Webhooks');
  if (/^#\/webhooks($|[/?])/.test(location.hash)) link.setAttribute('aria-current', 'page');
  document.querySelector('nav a[href="#/account"]')?.parentElement?.before(h('li', { id: 'nav-webhooks' }, link));
}

export async function showWho(): Promise<void> {
  const who = document.getElementById('who')!;
  const user = await currentUser();
  showWebhooksLink(user !== null);
  if (!user) {
    replace(who, h('a', { href: '#/account', class: 'sign-in' }, 'Sign in'));
    return;
  }
  const { uniqueIdentifier } = (await instanceConfiguration()).register;
  const name = String(user.data[uniqueIdentifier] ?? user.data.name ?? user.id);
  replace(
    who,
    h('span', { class: 'who-name' }, 'Signed in as ', h('strong', null, name)),
    ' ',
    h('button', { type: 'button', class: 'small sign-out', onclick: () => void signOut() }, 'Sign out'),
  );
}
