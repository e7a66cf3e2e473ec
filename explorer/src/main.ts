// The explorer's entry: a hash router (`#/`, `#/<id>`, `#/search`, `#/webhooks`, `#/account`) over views that each
// render into <main>. Deep links work because the hash never reaches the server. Unknown routes, and paths under
// /explorer/ other than the app itself, get the app's own "not found" view.
import './styles.css';
import { h, replace } from './dom.js';
import { dirtyElement, drafts, markDirty } from './drafts.js';
import { forgetUser, showWho } from './header.js';
import { stopLive } from './live.js';
import { takeNotice } from './notice.js';
import { setRenderer } from './router.js';
import { SESSION_CHANGED, SESSION_ENDED, session } from './session.js';
import { renderAccount } from './views/account.js';
import { forgetDiagram, renderElement } from './views/element.js';
import { renderIndex } from './views/index-view.js';
import { renderSearch } from './views/search.js';
import { renderWebhooks } from './views/webhooks.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const VIEWS = new Set(['', 'search', 'webhooks', 'account']);

function notFound(main: HTMLElement): void {
  replace(
    main,
    h('h1', { tabindex: '-1' }, 'Page not found'),
    h('p', null, 'There is no page at this address in the explorer. It may have been mistyped or moved.'),
    h('p', null, h('a', { href: '/explorer/#/' }, 'Go to Browse')),
  );
}

async function route(): Promise<void> {
  const main = document.getElementById('main')!;
  const view = location.hash.replace(/^#\/?/, '').split(/[/?]/)[0] ?? '';
  const isElement = UUID.test(view);
  const known = isElement || VIEWS.has(view);
  const appPath = /^\/explorer\/?(index\.html)?$/.test(location.pathname);
  // Without a token the start page is the sign-in; a deep link is still tried (an instance may serve anonymous users).
  const signIn = view === 'account' || (session.token === null && view === '');
  const navigation = signIn ? 'account' : isElement ? '' : view;
  for (const link of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    if (link.getAttribute('href') === `#/${navigation}` && known) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  void showWho();
  markDirty(null);
  stopLive();
  if (!isElement) forgetDiagram();
  if (!appPath || !known) notFound(main);
  else if (signIn) await renderAccount(main);
  else if (view === 'search') await renderSearch(main);
  else if (view === 'webhooks') await renderWebhooks(main);
  else if (isElement) await renderElement(main, view.toLowerCase());
  else await renderIndex(main);
  const notice = takeNotice();
  if (notice) main.querySelector('h1')?.after(notice);
}

setRenderer(route);

/** The hash shown now: where to come back to when the person stays to keep an unsaved edit. */
let shown = location.hash;
/** Set while the explorer itself moves away (the sign-in ended): the edit is kept, so no question is asked. */
let keepingDrafts = false;

window.addEventListener('hashchange', () => {
  const dirty = dirtyElement();
  if (dirty !== null && !keepingDrafts) {
    if (!window.confirm('You have unsaved changes to the properties. Leave this page and lose them?')) {
      history.replaceState(null, '', shown);
      return;
    }
    drafts.drop(dirty);
  }
  keepingDrafts = false;
  shown = location.hash;
  // Keyboard and screen-reader users continue from the top of the new view.
  void route().then(() => document.querySelector<HTMLElement>('main h1')?.focus());
});

window.addEventListener('beforeunload', (event) => {
  if (dirtyElement() !== null) event.preventDefault();
});

// The service refused the token: the header says so at once, and the sign-in comes up with the edit kept.
window.addEventListener(SESSION_ENDED, () => {
  if (location.hash === '#/account') return void route();
  keepingDrafts = true;
  location.hash = '#/account';
});
window.addEventListener(SESSION_CHANGED, () => {
  forgetUser();
  void showWho();
});

void route();
