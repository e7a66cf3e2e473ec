// Shows a refusal where it happened, in plain words: what went wrong and what the person can do, then the
// service's own explanation. The problem's type address stays out of sight (it is for programs, not people).
import { ApiError } from './api.js';
import { h } from './dom.js';

/** What a status means to the person looking at the page. */
const PLAIN: Record<number, string> = {
  400: 'The service could not accept this.',
  401: 'You are not signed in, or your sign-in has ended.',
  403: 'You are not allowed to do this.',
  404: 'This element does not exist, or it is not shared with you.',
  409: 'This conflicts with the current state of the element.',
  412: 'This element was changed elsewhere (in another tab, or by someone else) since you opened it. Nothing was changed: reload the page to see the new version.',
  413: 'This is larger than the service accepts.',
  415: 'The service does not accept this kind of content.',
  422: 'The service could not accept this.',
  429: 'Too many requests in a short time. Wait a moment and try again.',
};

/** One sentence for an error: the plain meaning of its status, else its message. */
export function plainMessage(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status >= 500) return 'The service failed to answer. Try again in a moment.';
    return PLAIN[error.status] ?? error.problem?.title ?? `The service refused this (${error.status}).`;
  }
  return String((error as Error)?.message ?? error);
}

/** An alert with the plain meaning and the service's detail; for errors that are not the API's, their message. */
export function problemView(error: unknown): HTMLElement {
  if (!(error instanceof ApiError)) return h('div', { class: 'problem', role: 'alert' }, plainMessage(error));
  const { problem, status } = error;
  // A failed precondition's detail speaks of headers (If-Match, ETag): the plain sentence says all a person needs.
  const detail = status !== 412 && problem?.detail && problem.detail !== plainMessage(error) ? problem.detail : null;
  return h(
    'div',
    { class: 'problem', role: 'alert', 'data-status': status },
    h('strong', null, plainMessage(error)),
    detail ? h('p', null, detail) : null,
    // A refused token: the way back to the sign-in, unless the sign-in forms are what refused.
    status === 401 && !document.getElementById('login-heading')
      ? h('p', null, h('a', { href: '#/account' }, 'Sign in'))
      : null,
  );
}

/** Runs `action`, showing its problem in `slot` when it fails; true when it succeeded. */
export async function attempt(slot: HTMLElement, action: () => Promise<void>): Promise<boolean> {
  slot.replaceChildren();
  try {
    await action();
    return true;
  } catch (error) {
    slot.replaceChildren(problemView(error));
    return false;
  }
}
