// Shows a refusal where it happened: the problem details the API sent (status, title, detail, extra members).
import { ApiError } from './api.js';
import { h } from './dom.js';

/** An alert with the error's problem details; for errors that are not the API's, its message. */
export function problemView(error: unknown): HTMLElement {
  if (!(error instanceof ApiError)) {
    return h(
      'div',
      { class: 'problem', role: 'alert' },
      h('strong', null, 'Error: '),
      String((error as Error)?.message ?? error),
    );
  }
  const { problem, status } = error;
  const extra = Object.entries(problem ?? {}).filter(([key]) => !['type', 'title', 'status', 'detail'].includes(key));
  return h(
    'div',
    { class: 'problem', role: 'alert' },
    h('strong', null, `${status} ${problem?.title ?? ''}`.trim()),
    problem?.detail ? h('p', null, problem.detail) : null,
    extra.length > 0
      ? h(
          'dl',
          null,
          extra.map(([key, value]) => [h('dt', null, key), h('dd', null, JSON.stringify(value))]),
        )
      : null,
    problem?.type ? h('p', { class: 'problem-type' }, h('code', null, problem.type)) : null,
    // A refused token: the way back to the sign-in, unless the sign-in forms are what refused.
    status === 401 && !document.getElementById('login-heading')
      ? h('p', null, h('a', { href: '#/account' }, 'Sign in'))
      : null,
  );
}

/** Runs `action`, showing its problem details in `slot` when it fails; true when it succeeded. */
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
