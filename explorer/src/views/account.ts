// Sign in: register, log in with identifier and password (creates a token), or paste a token; who you are; log out
// (deletes the token on the service).
import {
  ApiError,
  DEFAULT_CONFIGURATION,
  type GraphElement,
  type InstanceConfiguration,
  instanceConfiguration,
  request,
} from '../api.js';
import { field, h, replace } from '../dom.js';
import { currentUser, forgetUser, signOut } from '../header.js';
import { tell } from '../notice.js';
import { attempt } from '../problem.js';
import { navigate } from '../router.js';
import { session } from '../session.js';

let knownConfiguration: InstanceConfiguration | null = null;

/** "This is a shared computer": the sign-in then lasts only as long as the tab. */
function sharedComputerBox(): HTMLElement {
  const box = h('input', { type: 'checkbox', id: 'shared-computer', name: 'shared' });
  return h(
    'div',
    { class: 'field checkbox' },
    box,
    ' ',
    h('label', { for: 'shared-computer' }, 'This is a shared computer (sign out when this tab closes)'),
  );
}

function signedIn(token: string): void {
  const shared = (document.getElementById('shared-computer') as HTMLInputElement | null)?.checked ?? false;
  session.signIn(token, shared);
  forgetUser();
  tell('Signed in.');
  navigate(session.takeReturn());
}

/** Loads the account view: who is signed in, or the sign-in forms. */
export async function renderAccount(main: HTMLElement): Promise<void> {
  const user = await currentUser();
  const heading = h('h1', { tabindex: '-1' }, 'Account');
  if (user) {
    const config = await instanceConfiguration();
    replace(main, heading, ...signedInView(user, config.register.uniqueIdentifier));
    return;
  }
  // The forms are shown at once with the usual configuration, so that a slow link does not wait for it; an
  // instance configured otherwise gets them again, before anything is typed.
  const shown = knownConfiguration ?? DEFAULT_CONFIGURATION;
  signInForms(main, heading, shown);
  const config = await instanceConfiguration();
  knownConfiguration = config;
  const differs =
    config.register.uniqueIdentifier !== shown.register.uniqueIdentifier ||
    config.register.enabled !== shown.register.enabled;
  const untouched = [...main.querySelectorAll('input')].every(
    (input) => input.value === '' || input.type === 'checkbox',
  );
  if (differs && untouched && location.hash.replace(/^#\/?/, '') === 'account') signInForms(main, heading, config);
}

function signInForms(main: HTMLElement, heading: HTMLElement, config: InstanceConfiguration): void {
  const identifierName = config.register.uniqueIdentifier;
  const identifierLabel = identifierName === 'email' ? 'Email' : identifierName;
  replace(
    main,
    heading,
    session.hasReturn
      ? h(
          'p',
          { class: 'notice', role: 'status' },
          'Your sign-in has ended (it expired or was signed out). Sign in again to return to the page you were on; ',
          'your unsaved edits are kept.',
        )
      : h('p', null, 'Sign in to browse, edit and search the graph.'),
    sharedComputerBox(),
    h(
      'div',
      { class: 'columns' },
      loginForm(identifierLabel),
      config.register.enabled ? registerForm(identifierLabel) : null,
      tokenForm(),
    ),
  );
}

/** Who is signed in, and the button that logs out. */
function signedInView(user: GraphElement, identifierName: string): HTMLElement[] {
  const status = h('div');
  return [
    h('p', null, 'You are signed in as ', h('strong', null, String(user.data[identifierName] ?? user.id)), '.'),
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'User id'),
      h('dd', null, h('code', { id: 'my-id' }, user.id), ' ', h('a', { href: `#/${user.id}` }, 'open your user node')),
      h('dt', null, 'Type'),
      h('dd', null, user.type),
    ),
    h('p', { class: 'hint' }, 'Others share elements with you by your user id.'),
    h('button', { type: 'button', onclick: () => void attempt(status, signOut) }, 'Log out'),
    status,
  ];
}

function loginForm(identifierLabel: string): HTMLFormElement {
  const loginIdentifier = h('input', { name: 'identifier', autocomplete: 'username', required: true });
  const loginPassword = h('input', {
    name: 'password',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
  });
  const loginStatus = h('div');
  const login = h(
    'form',
    { 'aria-labelledby': 'login-heading' },
    h('h2', { id: 'login-heading' }, 'Log in'),
    field(identifierLabel, loginIdentifier),
    field('Password', loginPassword),
    h('button', { type: 'submit' }, 'Log in'),
    loginStatus,
  );
  login.addEventListener('submit', (event) => {
    event.preventDefault();
    void attempt(loginStatus, async () => {
      const answer = await request<{ token: string }>('POST', '/token', {
        type: 'Token',
        uniqueUserIdentifier: loginIdentifier.value,
        password: loginPassword.value,
      }).catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 401)
          throw new Error(`The ${identifierLabel.toLowerCase()} or the password is not right.`);
        throw error;
      });
      signedIn(answer.body.token);
    });
  });
  return login;
}

function registerForm(identifierLabel: string): HTMLFormElement {
  const registerIdentifier = h('input', { name: 'identifier', autocomplete: 'username', required: true });
  const registerName = h('input', { name: 'name', autocomplete: 'name' });
  const registerPassword = h('input', {
    name: 'password',
    type: 'password',
    autocomplete: 'new-password',
    required: true,
  });
  const registerStatus = h('div');
  const register = h(
    'form',
    { 'aria-labelledby': 'register-heading' },
    h('h2', { id: 'register-heading' }, 'Register'),
    field(identifierLabel, registerIdentifier),
    field('Name (optional)', registerName),
    field('Password', registerPassword),
    h('button', { type: 'submit' }, 'Register and log in'),
    registerStatus,
  );
  register.addEventListener('submit', (event) => {
    event.preventDefault();
    void attempt(registerStatus, async () => {
      const credentials = { uniqueUserIdentifier: registerIdentifier.value, password: registerPassword.value };
      const data = registerName.value ? { name: registerName.value } : {};
      await request('POST', '/register', { type: 'User', ...credentials, data });
      const answer = await request<{ token: string }>('POST', '/token', { type: 'Token', ...credentials });
      signedIn(answer.body.token);
    });
  });
  return register;
}

function tokenForm(): HTMLFormElement {
  const tokenInput = h('input', { name: 'token', autocomplete: 'off', placeholder: 'secret-token:…', required: true });
  const tokenStatus = h('div');
  const paste = h(
    'form',
    { 'aria-labelledby': 'token-heading' },
    h('h2', { id: 'token-heading' }, 'Use a token'),
    field('Token', tokenInput, 'A token created with POST /token; it is checked before it is kept.'),
    h('button', { type: 'submit' }, 'Use token'),
    tokenStatus,
  );
  paste.addEventListener('submit', (event) => {
    event.preventDefault();
    void attempt(tokenStatus, async () => {
      const token = tokenInput.value.trim().replace(/^Bearer\s+/i, '');
      await request('GET', '/me', undefined, { Authorization: `Bearer ${token}` });
      signedIn(token);
    });
  });
  return paste;
}
