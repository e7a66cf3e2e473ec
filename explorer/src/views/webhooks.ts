// The signed-in user's webhooks (docs/webhooks.md): each one's address, what it sends, whether it is enabled (and
// why not) and its last delivery, its recent deliveries on demand, each of which can be sent again; a form to
// create one, and Ping, Disable or Enable, Rotate secret and Delete on each. The service shows a secret in one answer only, so the page shows it
// once, where it was made, and never keeps it.
import { request } from '../api.js';
import { announce, field, h, replace, uid } from '../dom.js';
import { count, formatDate } from '../format.js';
import { attempt } from '../problem.js';
import { session } from '../session.js';
import { confirmDialog } from './dialog.js';

interface Delivery {
  id: string;
  eventId: string;
  eventType: string;
  attempted: string;
  attempt: number;
  status: number | null;
  error: string | null;
  durationMs: number;
  response: string | null;
  nextRetry: string | null;
}

interface Webhook {
  id: string;
  url: string;
  events: string[];
  watch: { id?: string[]; parent?: string };
  description: string;
  enabled: boolean;
  disabledReason: string | null;
  created: string;
  updated: string;
  lastDelivery: Delivery | null;
}

interface Page<T> {
  totalItems: number;
  links: { first: string; previous: string | null; next: string | null; last: string };
  items: T[];
}

interface Secret {
  id: string;
  secret: string;
}

/** The changes a webhook may send, in the words of the rest of the explorer. */
const CHANGES: { event: string; label: string }[] = [
  { event: 'created', label: 'Created' },
  { event: 'changed', label: 'Changed' },
  { event: 'deleted', label: 'Deleted' },
  { event: 'file-created', label: 'File added' },
  { event: 'file-replaced', label: 'File replaced' },
  { event: 'file-removed', label: 'File removed' },
];

/** Why an attempt got no HTTP answer, as a person reads it. */
const ERRORS: Record<string, string> = {
  timeout: 'no answer in time',
  'connection-refused': 'the connection was refused',
  'connection-reset': 'the connection was reset',
  tls: 'the TLS handshake failed',
  redirect: 'the receiver redirected (redirects are not followed)',
  'blocked-address': 'the address is not one the service may call',
  dns: 'the host name was not found',
  network: 'a network error',
};

const PAGE_SIZE = 20;
/** How many deliveries "Show recent deliveries" lists: enough to see a pattern of failures. */
const RECENT = 5;

const labelOf = (webhook: Webhook) => webhook.description || webhook.url;
const succeeded = (delivery: Delivery) => delivery.status !== null && delivery.status >= 200 && delivery.status < 300;

/** What came of an attempt: "answered 200 in 12 ms", "failed: the connection was refused (after 3 ms)". */
function outcomeText(delivery: Delivery): string {
  if (delivery.status !== null) return `answered ${delivery.status} in ${delivery.durationMs} ms`;
  return `failed: ${ERRORS[delivery.error ?? ''] ?? delivery.error ?? 'no answer'} (after ${delivery.durationMs} ms)`;
}

function deliveryText(delivery: Delivery): string {
  const retry = delivery.nextRetry ? `; next try ${formatDate(delivery.nextRetry)}` : '';
  return `${delivery.eventType}, ${formatDate(delivery.attempted)}, attempt ${delivery.attempt}: ${outcomeText(delivery)}${retry}`;
}

function watchText(watch: Webhook['watch']) {
  if (watch.parent) return ['What is under ', h('a', { href: `#/${watch.parent}` }, watch.parent.slice(0, 8))];
  const ids = watch.id ?? [];
  if (ids.length === 0) return 'Everything you may read';
  return [
    `${count(ids.length, 'element')}: `,
    ids.map((id, index) => [index > 0 ? ', ' : '', h('a', { href: `#/${id}` }, id.slice(0, 8))]),
  ];
}

function factRows(webhook: Webhook) {
  const events = webhook.events.length === 0 || webhook.events.length === CHANGES.length;
  const words = webhook.events.map((event) => CHANGES.find((c) => c.event === event)?.label ?? event);
  return [
    h('dt', null, 'Address'),
    h('dd', null, h('code', null, webhook.url)),
    h('dt', null, 'State'),
    h(
      'dd',
      { class: webhook.enabled ? 'state enabled' : 'state disabled' },
      h('strong', null, webhook.enabled ? 'Enabled' : 'Disabled'),
      webhook.disabledReason ? [' ', h('span', { class: 'hint' }, webhook.disabledReason)] : null,
    ),
    h('dt', null, 'Sends'),
    h('dd', null, events ? 'Every change' : words.join(', ')),
    h('dt', null, 'Watches'),
    h('dd', null, watchText(webhook.watch)),
    h('dt', null, 'Created'),
    h('dd', null, formatDate(webhook.created)),
    h('dt', null, 'Last delivery'),
    h('dd', { class: 'last-delivery' }, webhook.lastDelivery ? deliveryText(webhook.lastDelivery) : 'None yet'),
  ];
}

/**
 * A new secret, shown this once with a way to copy it. It takes the focus, so that keyboard and screen-reader users
 * are where the secret is.
 */
function showSecret(slot: HTMLElement, secret: string, what: string): void {
  const code = h('code', { class: 'secret-value' }, secret);
  const copied = h('span', { role: 'status' });
  const say = (text: string) => {
    copied.textContent = text;
  };
  const copy = () =>
    navigator.clipboard.writeText(secret).then(
      () => say('Copied.'),
      () => say('Copying is not allowed here: select the secret and copy it.'),
    );
  const panel = h(
    'div',
    { class: 'notice secret', tabindex: '-1' },
    h('p', null, h('strong', null, `The signing secret of ${what}:`)),
    h(
      'p',
      null,
      code,
      ' ',
      h('button', { type: 'button', class: 'small', onclick: () => void copy() }, 'Copy'),
      ' ',
      copied,
    ),
    h('p', null, 'Copy it now, it will not be shown again. The receiver checks each delivery with it.'),
    h('button', { type: 'button', class: 'small', onclick: () => slot.replaceChildren() }, 'Hide the secret'),
  );
  replace(slot, panel);
  panel.focus();
}

/**
 * The recent deliveries as a table, newest first; "Send again" on a row hands its delivery to `again`, which sends
 * the same message (same id, so a receiver that keeps ids sees a repeat, not a new change).
 */
async function showRecent(slot: HTMLElement, webhook: Webhook, again: (d: Delivery) => void): Promise<void> {
  const page = (await request<Page<Delivery>>('GET', `/webhooks/${webhook.id}/deliveries?pageSize=${RECENT}`)).body;
  const items = page.items.slice(0, RECENT);
  if (items.length === 0) return replace(slot, h('p', { class: 'empty' }, 'No deliveries yet.'));
  const cell = (text: string) => h('td', null, text);
  replace(
    slot,
    h(
      'table',
      { class: 'deliveries' },
      h('caption', null, `Recent deliveries (${items.length} of ${page.totalItems})`),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['When', 'Event', 'Attempt', 'Outcome', 'Next try', 'Action'].map((name) => h('th', { scope: 'col' }, name)),
        ),
      ),
      h(
        'tbody',
        null,
        items.map((d) =>
          h(
            'tr',
            { class: succeeded(d) ? 'ok' : 'failed' },
            cell(formatDate(d.attempted)),
            cell(d.eventType),
            cell(String(d.attempt)),
            cell(outcomeText(d)),
            cell(d.nextRetry ? formatDate(d.nextRetry) : '—'),
            h(
              'td',
              null,
              h(
                'button',
                {
                  type: 'button',
                  class: 'small',
                  'aria-label': `Send again: ${d.eventType} of ${formatDate(d.attempted)}`,
                  onclick: () => again(d),
                },
                'Send again',
              ),
            ),
          ),
        ),
      ),
    ),
  );
}

/** The actions on one webhook, each reporting in the webhook's own status line. */
function actions(webhook: () => Webhook, show: (w: Webhook) => void, slots: ItemSlots, removed: () => Promise<void>) {
  const path = () => `/webhooks/${webhook().id}`;
  const recentOpen = () => slots.recentButton.getAttribute('aria-expanded') === 'true';
  const recentShown = () => showRecent(slots.recent, webhook(), (d) => void attempt(slots.outcome, () => resend(d)));
  const refresh = async () => {
    show((await request<Webhook>('GET', path())).body);
    if (recentOpen()) await recentShown();
  };
  /** Says what came of a ping or a resend: "Ping delivered: the receiver answered 200 in 3 ms." */
  const report = async (delivery: Delivery, delivered: string, failed: string) => {
    const said = `${succeeded(delivery) ? delivered : failed}: the receiver ${outcomeText(delivery)}.`;
    await refresh();
    slots.outcome.replaceChildren(h('p', { class: succeeded(delivery) ? 'notice' : 'warning' }, said));
    announce(said);
  };
  const resend = async (d: Delivery) =>
    report(
      (await request<Delivery>('POST', `${path()}/deliveries/${d.id}/redeliver`)).body,
      `${d.eventType} delivered again`,
      `${d.eventType} not delivered again`,
    );
  return {
    ping: async () =>
      report((await request<Delivery>('POST', `${path()}/ping`)).body, 'Ping delivered', 'Ping not delivered'),
    toggle: async () => {
      const enabled = !webhook().enabled;
      show((await request<Webhook>('PATCH', path(), { enabled })).body);
      const said = enabled ? 'Enabled: delivery goes on from where it stopped.' : 'Disabled: nothing more is sent.';
      slots.outcome.replaceChildren(h('p', { class: 'notice' }, said));
      announce(said);
    },
    rotate: async () => {
      const question = `Make a new secret for ${labelOf(webhook())}?`;
      const meaning =
        'The old secret goes on signing beside the new one for a while, then stops: give the receiver the new one.';
      if (!(await confirmDialog(question, 'Rotate secret', h('p', null, meaning)))) return;
      const answer = (await request<Secret>('POST', `${path()}/secret`)).body;
      showSecret(slots.secret, answer.secret, labelOf(webhook()));
      announce('A new secret was made. Copy it now, it will not be shown again.');
    },
    recent: async () => {
      const open = !recentOpen();
      slots.recentButton.setAttribute('aria-expanded', String(open));
      slots.recentButton.textContent = open ? 'Hide recent deliveries' : 'Show recent deliveries';
      if (open) await recentShown();
      else slots.recent.replaceChildren();
    },
    remove: async () => {
      const question = `Delete the webhook ${labelOf(webhook())}?`;
      const meaning = 'Nothing more is sent to it, and its delivery log is deleted with it.';
      if (!(await confirmDialog(question, 'Delete', h('p', null, meaning)))) return;
      await request('DELETE', path());
      announce('Webhook deleted.');
      await removed();
    },
  };
}

interface ItemSlots {
  outcome: HTMLElement;
  secret: HTMLElement;
  recent: HTMLElement;
  recentButton: HTMLButtonElement;
}

/** One webhook: its facts, redrawn in place after an action, so that the focus stays on the button used. */
function webhookItem(first: Webhook, removed: () => Promise<void>): HTMLElement {
  let current = first;
  const headingId = uid('webhook');
  const heading = h('h3', { id: headingId });
  const facts = h('dl', { class: 'facts' });
  const toggle = h('button', { type: 'button' });
  const slots: ItemSlots = {
    outcome: h('div'),
    secret: h('div'),
    recent: h('div'),
    recentButton: h('button', { type: 'button', class: 'link', 'aria-expanded': 'false' }, 'Show recent deliveries'),
  };
  const show = (webhook: Webhook) => {
    current = webhook;
    heading.textContent = labelOf(webhook);
    replace(facts, factRows(webhook));
    toggle.textContent = webhook.enabled ? 'Disable' : 'Enable';
  };
  show(first);
  const act = actions(() => current, show, slots, removed);
  const run =
    (action: () => Promise<void>, slot = slots.outcome) =>
    () =>
      void attempt(slot, action);
  toggle.addEventListener('click', run(act.toggle));
  // Its own slot for a refusal: opening the list leaves the outcome of the last ping in view.
  slots.recentButton.addEventListener('click', run(act.recent, slots.recent));
  return h(
    'li',
    null,
    h(
      'article',
      { class: 'webhook', 'aria-labelledby': headingId },
      heading,
      facts,
      h(
        'div',
        { class: 'buttons' },
        h('button', { type: 'button', onclick: run(act.ping) }, 'Ping'),
        toggle,
        h('button', { type: 'button', onclick: run(act.rotate) }, 'Rotate secret'),
        h('button', { type: 'button', class: 'danger', onclick: run(act.remove) }, 'Delete'),
      ),
      slots.outcome,
      slots.secret,
      slots.recentButton,
      slots.recent,
    ),
  );
}

/** A page of the caller's webhooks, oldest first, with the way to the other pages. */
async function showList(section: HTMLElement, path = `/webhooks?pageSize=${PAGE_SIZE}`): Promise<void> {
  const page = (await request<Page<Webhook>>('GET', path)).body;
  const reload = async () => {
    await showList(section, path);
    // Deleting the last one on a page leaves it empty: the first page then.
    if (section.querySelector('ol.webhooks > li') === null && page.totalItems > 1) await showList(section);
    section.querySelector('h2')?.focus();
  };
  const go = (to: string | null, label: string) =>
    to ? h('button', { type: 'button', onclick: () => void showList(section, to) }, label) : null;
  replace(
    section,
    h('h2', { id: 'webhooks-heading', tabindex: '-1' }, 'Your webhooks'),
    page.totalItems === 0
      ? h('p', { class: 'empty' }, 'You have no webhooks yet.')
      : h('p', null, `${count(page.totalItems, 'webhook')}.`),
    h(
      'ol',
      { class: 'webhooks' },
      page.items.map((webhook) => webhookItem(webhook, reload)),
    ),
    page.links.previous || page.links.next
      ? h('div', { class: 'pager' }, go(page.links.previous, 'Previous page'), go(page.links.next, 'Next page'))
      : null,
  );
}

/** The form that creates a webhook; `created` is called with its secret and what it is called. */
function createForm(created: (answer: Secret, label: string) => Promise<void>): HTMLFormElement {
  const url = h('input', {
    name: 'url',
    type: 'url',
    required: true,
    placeholder: 'https://hooks.example.org/trellis',
  });
  const description = h('input', { name: 'description', maxlength: 1000 });
  const parent = h('input', { name: 'parent', autocomplete: 'off', pattern: '[0-9a-fA-F-]{36}' });
  const boxes = CHANGES.map(({ event, label }) => {
    const box = h('input', { type: 'checkbox', name: 'events', value: event, id: uid('event') });
    return { box, element: h('span', { class: 'checkbox' }, box, h('label', { for: box.id }, label)) };
  });
  const status = h('div');
  const form = h(
    'form',
    { class: 'compact', 'aria-labelledby': 'new-webhook-heading' },
    h('h2', { id: 'new-webhook-heading' }, 'New webhook'),
    field(
      'Address (URL)',
      url,
      'http or https; the service calls only public addresses unless its operator allows others.',
    ),
    field('Description (optional)', description),
    h(
      'fieldset',
      { class: 'events' },
      h('legend', null, 'Changes to send (none checked: every change)'),
      boxes.map((b) => b.element),
    ),
    field('Only what is under (element id, optional)', parent, 'Empty: every change of what you may read.'),
    h('button', { type: 'submit' }, 'Create webhook'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void attempt(status, async () => {
      const events = boxes.filter((b) => b.box.checked).map((b) => b.box.value);
      const body = {
        url: url.value.trim(),
        description: description.value.trim(),
        ...(events.length > 0 ? { events } : {}),
        ...(parent.value.trim() ? { parent: parent.value.trim().toLowerCase() } : {}),
      };
      const answer = (await request<Secret>('POST', '/webhooks', body)).body;
      const label = body.description || body.url;
      form.reset();
      await created(answer, label);
    });
  });
  return form;
}

/** Loads the webhooks view: the form, the secret of the one just made, and the list. */
export async function renderWebhooks(main: HTMLElement): Promise<void> {
  const heading = h('h1', { tabindex: '-1' }, 'Webhooks');
  if (session.token === null) {
    replace(
      main,
      heading,
      h('p', null, 'Webhooks belong to a signed-in user. ', h('a', { href: '#/account' }, 'Sign in'), ' to see yours.'),
    );
    return;
  }
  const secret = h('div');
  const list = h('section', { 'aria-labelledby': 'webhooks-heading' });
  const status = h('div');
  const form = createForm(async (answer, label) => {
    showSecret(secret, answer.secret, label);
    announce('Webhook created. Copy its secret now, it will not be shown again.');
    await attempt(status, () => showList(list));
  });
  replace(
    main,
    heading,
    h(
      'p',
      null,
      'The service sends each change of what you may read to a webhook’s address, signed with its secret ',
      '(Standard Webhooks), and retries until the receiver answers 2xx.',
    ),
    form,
    secret,
    status,
    list,
  );
  await attempt(status, () => showList(list));
}
