// The explorer's entry: a hash router (`#/`, `#/<id>`, `#/search`, `#/account`) over views that each render into
// <main>. Deep links work because the hash never reaches the server.
import './styles.css';
import { session } from './api.js';
import { setRenderer } from './router.js';
import { renderAccount, showWho } from './views/account.js';
import { forgetDiagram, renderElement } from './views/element.js';
import { renderIndex } from './views/index-view.js';
import { renderSearch } from './views/search.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function route(): Promise<void> {
  const main = document.getElementById('main')!;
  const view = location.hash.replace(/^#\/?/, '').split(/[/?]/)[0] ?? '';
  const isElement = UUID.test(view);
  // Without a token the start page is the sign-in; a deep link is still tried (an instance may serve anonymous users).
  const signIn = view === 'account' || (session.token === null && view === '');
  const navigation = signIn ? 'account' : isElement ? '' : view;
  for (const link of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    if (link.getAttribute('href') === `#/${navigation}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  void showWho();
  if (!isElement) forgetDiagram();
  if (signIn) await renderAccount(main);
  else if (view === 'search') await renderSearch(main);
  else if (isElement) await renderElement(main, view.toLowerCase());
  else await renderIndex(main);
}

setRenderer(route);
window.addEventListener('hashchange', () => {
  // Keyboard and screen-reader users continue from the top of the new view.
  void route().then(() => document.querySelector<HTMLElement>('main h1')?.focus());
});
void route();
