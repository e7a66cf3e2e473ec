// Sharing: find people and groups by e-mail or name, give them an access level described in words (the least,
// "Can view", preselected), several at once; the "Shared with" list names them and revokes, and warns before the
// owner gives up their own ownership.
import {
  ApiError,
  type Collection,
  createElement,
  findPrincipals,
  type GraphElement,
  getCollection,
  labelOf,
  type Principal,
  principalName,
  principalsById,
  request,
} from '../api.js';
import { field, h, replace } from '../dom.js';
import { currentUser } from '../header.js';
import { tell } from '../notice.js';
import { attempt, plainMessage } from '../problem.js';
import { navigate } from '../router.js';
import { confirmDialog } from './dialog.js';

/** The relation types that grant access, least first, in words (the service's grant types). */
const LEVELS: { type: string; label: string }[] = [
  { type: 'HAS_READ_ACCESS', label: 'Can view' },
  { type: 'HAS_SEARCH_ACCESS', label: 'Can find it in search' },
  { type: 'HAS_CREATE_ACCESS', label: 'Can add children' },
  { type: 'HAS_UPDATE_ACCESS', label: 'Can edit' },
  { type: 'HAS_DELETE_ACCESS', label: 'Can delete' },
  { type: 'OWNS', label: 'Full access (owner: edit, share, delete, and everything under it)' },
];
const GRANT_TYPES = LEVELS.map((level) => level.type);
const PRINCIPAL_TYPES = new Set(['User', 'Group']);
const levelOf = (type: string) => LEVELS.find((level) => level.type === type)?.label ?? type;

/** The people chosen so far, each with a button that takes them off the list. */
function showPeople(list: HTMLElement, people: Principal[]): void {
  const remove = (index: number) => {
    people.splice(index, 1);
    showPeople(list, people);
  };
  replace(
    list,
    people.map((person, index) => {
      const name = principalName(person, person.id);
      const button = {
        type: 'button',
        class: 'small link',
        'aria-label': `Remove ${name}`,
        onclick: () => remove(index),
      };
      return h('li', null, name, ' ', h('button', button, 'remove'));
    }),
  );
}

export function shareSection(id: string): HTMLElement {
  const people: Principal[] = [];
  const chosen = h('ul', { class: 'chosen', 'aria-label': 'People to share with' });
  const who = h('input', { name: 'who', autocomplete: 'off', type: 'text' });
  const level = h(
    'select',
    { name: 'level' },
    LEVELS.map(({ type, label }) => h('option', { value: type, selected: type === 'HAS_READ_ACCESS' }, label)),
  );
  const status = h('div');
  const showChosen = () => showPeople(chosen, people);
  const add = () =>
    void attempt(status, async () => {
      const identifier = who.value.trim();
      if (identifier === '') return;
      const found = await findPrincipals(identifier).catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 429)
          throw new Error(`Too many look-ups in a short time. Try again in ${error.retryAfter ?? 'a few'} seconds.`);
        throw error;
      });
      if (found.length === 0) throw new Error(`No user or group has the e-mail or name “${identifier}”.`);
      for (const person of found) if (!people.some((p) => p.id === person.id)) people.push(person);
      who.value = '';
      showChosen();
    });
  who.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      add();
    }
  });
  const form = h(
    'form',
    { 'aria-labelledby': 'share-heading', class: 'compact' },
    h('h2', { id: 'share-heading' }, 'Share'),
    field('E-mail or name', who, 'The exact e-mail address or name of a user or group. Add several, then Share.'),
    h('button', { type: 'button', onclick: add }, 'Add person'),
    chosen,
    field('Access', level),
    h('button', { type: 'submit' }, 'Share'),
    status,
    sharedWith(id),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (people.length === 0 && who.value.trim() !== '') return add();
    void attempt(status, async () => {
      if (people.length === 0) throw new Error('Add at least one person or group first.');
      for (const person of [...people]) {
        await createElement({ type: level.value, start: person.id, end: id, data: {} });
        people.shift();
      }
      tell(`Shared: ${levelOf(level.value)}.`);
      navigate(`#/${id}`);
    });
  });
  return form;
}

/**
 * Everyone with a grant on the element, by name, with a Revoke button each. An OWNS from a folder (the element is
 * inside it) is no person: it is said as what it means, that the folder's access reaches the element too.
 */
function sharedWith(id: string): HTMLElement {
  const list = h('div', { class: 'shared-with' }, h('p', null, 'Loading…'));
  void attempt(list, async () => {
    const grants: GraphElement[] = [];
    const parents = new Map<string, GraphElement>();
    let path: string | null = `/${id}/parents`;
    for (let pages = 0; path !== null && pages < 20; pages += 1) {
      const page: Collection = await getCollection(path);
      grants.push(...page.relations.filter((r) => r.end === id && GRANT_TYPES.includes(r.type)));
      for (const node of page.nodes) parents.set(node.id, node);
      path = page.links.next;
    }
    const names = await principalsById(grants.map((grant) => grant.start!));
    const folderOf = (grant: GraphElement) => {
      const parent = parents.get(grant.start!);
      return grant.type === 'OWNS' && !names.get(grant.start!) && parent && !PRINCIPAL_TYPES.has(parent.type)
        ? parent
        : null;
    };
    const people = grants.filter((grant) => folderOf(grant) === null);
    const folders = grants.flatMap((grant) => folderOf(grant) ?? []);
    replace(
      list,
      h('h3', null, 'Shared with'),
      people.length === 0
        ? h('p', null, 'Nobody yet.')
        : h(
            'ul',
            { class: 'grants' },
            people.map((grant) =>
              h(
                'li',
                { 'data-grant': grant.id },
                h('span', null, principalName(names.get(grant.start!), grant.start!)),
                ': ',
                levelOf(grant.type),
                revokeButton(grant, names.get(grant.start!)),
              ),
            ),
          ),
      folders.map((folder) =>
        h(
          'p',
          { class: 'inherited' },
          'Inside ',
          h('a', { href: `#/${folder.id}` }, labelOf(folder)),
          ': whoever it is shared with has the same access here.',
        ),
      ),
    );
  });
  return list;
}

/** Revokes a grant after a confirmation that names the person; a warning first when it is the caller's own OWNS. */
function revokeButton(relation: GraphElement, person: Principal | null | undefined): HTMLElement {
  const status = h('span');
  const name = principalName(person, relation.start!);
  const revoke = async () => {
    const me = await currentUser();
    const own = relation.type === 'OWNS' && me?.id === relation.start;
    const question = own
      ? 'Give up your own ownership of this element?'
      : `Stop sharing with ${name} (${levelOf(relation.type)})?`;
    const warning = own
      ? h(
          'p',
          { class: 'warning' },
          'You will lose access to it and to everything under it unless another grant gives it to you. ',
          'Give someone else full access first if it must stay reachable.',
        )
      : null;
    if (!(await confirmDialog(question, own ? 'Give up ownership' : 'Revoke', warning))) return;
    try {
      await request('DELETE', `/${relation.id}`);
      tell(`Access of ${name} revoked.`);
      navigate(`#/${relation.end}`);
    } catch (error) {
      status.textContent = plainMessage(error);
    }
  };
  return h(
    'span',
    null,
    ' ',
    h(
      'button',
      {
        type: 'button',
        class: 'small danger',
        'aria-label': `Revoke access of ${name} (${levelOf(relation.type)})`,
        onclick: () => void revoke(),
      },
      'Revoke',
    ),
    h('span', { role: 'status' }, status),
  );
}
