// One element: its properties, parents, children and related elements, the neighbourhood on the diagram, and, when
// the service says the caller may write (`Allow`), the forms to create children and relations, to share it, its
// file's controls, and deletion. A read-only element says so in a banner and offers no write control.
import {
  type Abilities,
  abilitiesOf,
  type Collection,
  type GraphElement,
  getCollection,
  getElement,
  labelOf,
} from '../api.js';
import type { Diagram } from '../diagram.js';
import { h, replace } from '../dom.js';
import { dirtyElement } from '../drafts.js';
import { formatDate } from '../format.js';
import { follow } from '../live.js';
import { takeNotice } from '../notice.js';
import { problemView } from '../problem.js';
import { navigate } from '../router.js';
import { typeBadge } from '../types.js';
import { collectionSection } from './collection.js';
import { createChildSection, createRelationSection } from './create.js';
import { deleteSection } from './delete.js';
import { fileSection } from './file.js';
import { propertiesSection } from './properties.js';
import { shareSection } from './share.js';

// One diagram while the user goes from element to element: following nodes adds their neighbourhoods to the same
// picture. Coming from another view starts a new one.
let diagram: Diagram | null = null;

/** Drops the diagram, so that the next element view starts from that element alone. */
export function forgetDiagram(): void {
  diagram?.destroy();
  diagram = null;
}

/** The diagram library is loaded here, on the first element view, not with the rest of the explorer. */
async function sharedDiagram(): Promise<Diagram> {
  if (diagram === null) {
    const { Diagram } = await import('../diagram.js');
    diagram ??= new Diagram('Neighbourhood diagram', (id) => navigate(`#/${id}`));
  }
  return diagram;
}

/** Renders the element again, unless the user has moved on to another view meanwhile (an upload ends late, say). */
function refresh(main: HTMLElement, id: string): void {
  if (location.hash.toLowerCase() !== `#/${id}`) return;
  const kept = [...main.querySelectorAll<HTMLFormElement>(KEPT_FORMS)];
  // The outcome shown at the top (saved, uploaded) stays through the redraws that the change itself causes.
  const notice = main.querySelector(':scope > .notice');
  const focused = document.activeElement;
  void renderElement(main, id).then(() => {
    for (const form of kept)
      main.querySelector(`form[aria-labelledby="${form.getAttribute('aria-labelledby')}"]`)?.replaceWith(form);
    if (notice && !main.querySelector(':scope > .notice')) main.querySelector('h1')?.after(notice);
    if (focused instanceof HTMLElement && main.contains(focused)) focused.focus();
  });
}

/**
 * The forms a redraw (after a live change, or one's own save) carries over as they are: what the person has typed,
 * the form's status line and the focus. Drawn anew, a half-filled new child or share would be wiped by a change
 * that arrives while it is filled in. The properties are not among them: an unsaved edit of those is kept by
 * goLive's notice instead, and a shown version must follow the element.
 */
const KEPT_FORMS = ['child-heading', 'relation-heading', 'share-heading']
  .map((heading) => `form[aria-labelledby="${heading}"]`)
  .join(', ');

/** Loads the element and renders its view; called again to show the element as it is now. */
export async function renderElement(main: HTMLElement, id: string): Promise<void> {
  const shown = location.hash;
  let answer: Awaited<ReturnType<typeof getElement>>;
  let view: Diagram;
  try {
    [answer, view] = await Promise.all([getElement(id), sharedDiagram()]);
  } catch (error) {
    if (location.hash !== shown) return;
    replace(
      main,
      h('h1', { tabindex: '-1' }, 'Element'),
      problemView(error),
      h('p', null, h('a', { href: '#/' }, 'Back to Browse')),
    );
    return;
  }
  // A slow answer for a view the user has already left is dropped.
  if (location.hash !== shown) return;
  const element = answer.body;
  const may = abilitiesOf(answer.headers);
  view.add([element]);
  const addPage = (page: Collection) => {
    view.add([...page.nodes, ...page.relations]);
    view.focus(id);
  };
  if (element.start && element.end) void loadEnds(element, view);
  const onChanged = () => refresh(main, id);
  const properties = await propertiesSection(element, answer.headers.get('etag'), may.write, onChanged);
  if (location.hash !== shown) return;
  replace(
    main,
    h('h1', { tabindex: '-1' }, labelOf(element), ' ', typeBadge(element.type)),
    may.write ? null : readOnlyBanner(),
    // On a phone the diagram comes after the lists; a hash link would be taken for a route, so this scrolls.
    h(
      'p',
      { class: 'jump' },
      h(
        'button',
        { type: 'button', class: 'small', onclick: () => document.getElementById('diagram')?.scrollIntoView() },
        'Go to the diagram',
      ),
    ),
    factsList(element),
    h(
      'div',
      { class: 'element-layout' },
      h(
        'div',
        { class: 'element-main' },
        properties,
        fileSection(element, may, onChanged),
        collections(id, addPage, (page) => linksOfChildren(page, view)),
      ),
      h('div', { class: 'element-side' }, diagramSection(element, view), sideForms(element, may)),
    ),
  );
  // An outcome of this page's own action (an upload, a relation) drawn again with the element.
  const notice = takeNotice();
  if (notice) main.querySelector('h1')?.after(notice);
  view.focus(id);
  goLive(main, id, element.start !== undefined, view);
}

/**
 * Follows the element (a node: with its children and the relations among them) while it is shown: another
 * person's change draws the view again, a deletion takes the element off the diagram, and an unsaved edit of the
 * properties is never replaced: a notice offers the new version instead.
 */
function goLive(main: HTMLElement, id: string, relation: boolean, view: Diagram): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const gone = () => {
    if (location.hash.toLowerCase() !== `#/${id}`) return;
    replace(
      main,
      h('h1', { tabindex: '-1' }, 'Element deleted'),
      h('p', { role: 'status' }, 'This element was deleted, or you can no longer see it.'),
      h('p', null, h('a', { href: '#/' }, 'Back to Browse')),
    );
  };
  follow(
    relation ? `/events?id=${id}` : `/events?parent=${id}`,
    (event) => {
      if (event.event === 'deleted' && event.data.id) view.remove(event.data.id);
      if (event.event === 'deleted' && event.data.id === id) return gone();
      if (dirtyElement() === id) return changedElsewhere(main, id, event.data.id === id);
      clearTimeout(timer);
      timer = setTimeout(() => refresh(main, id), 150);
    },
    gone,
  );
}

/**
 * The element (or what is under it) changed elsewhere while this person edits it: say so, and let them choose when
 * to look. The feed does not say who changed it, so the words fit another tab of the same person too.
 */
function changedElsewhere(main: HTMLElement, id: string, itself: boolean): void {
  const shown = main.querySelector('.changed-elsewhere');
  if (shown && (!itself || shown.hasAttribute('data-itself'))) return;
  shown?.remove();
  main
    .querySelector('h1')
    ?.after(
      h(
        'p',
        { class: 'banner changed-elsewhere', role: 'status', 'data-itself': itself },
        itself
          ? 'This element was changed elsewhere (in another tab, or by someone else). Your unsaved edit is kept. '
          : 'Something under this element was changed elsewhere. Your unsaved edit is kept. ',
        h('button', { type: 'button', class: 'small', onclick: () => refresh(main, id) }, 'Show the new version'),
      ),
    );
}

function readOnlyBanner(): HTMLElement {
  return h(
    'p',
    { class: 'banner read-only', role: 'note' },
    h('strong', null, 'Read only. '),
    'This element is shared with you to read: you can look at it and its file, but not change, share or delete it.',
  );
}

/** The write forms, each only where the service lets the caller use it. */
function sideForms(element: GraphElement, may: Abilities): (HTMLElement | null)[] {
  if (!may.write && !may.delete) return [];
  const node = !element.start;
  return [
    may.write && node ? createChildSection(element.id) : null,
    may.write && node ? createRelationSection(element.id) : null,
    may.write ? shareSection(element.id) : null,
    may.delete ? deleteSection(element) : null,
  ];
}

/** Id, the ends of a relation, and when it was created and updated. */
function factsList(element: GraphElement): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    h('dt', null, 'Id'),
    h('dd', null, h('code', null, element.id)),
    element.start
      ? [h('dt', null, 'Start'), h('dd', null, h('a', { href: `#/${element.start}` }, element.start))]
      : null,
    element.end ? [h('dt', null, 'End'), h('dd', null, h('a', { href: `#/${element.end}` }, element.end))] : null,
    (['created', 'updated'] as const).map((key) =>
      element.data[key]
        ? [h('dt', null, key === 'created' ? 'Created' : 'Updated'), h('dd', null, formatDate(element.data[key]))]
        : null,
    ),
  );
}

/** Parents (grants included; they are revoked from Share), children and related elements, each page drawn. */
function collections(id: string, addPage: (page: Collection) => void, addChildren: (page: Collection) => void) {
  return h(
    'div',
    { class: 'collections' },
    collectionSection({ heading: 'Parents', path: `/${id}/parents`, anchor: id, onPage: addPage }),
    collectionSection({
      heading: 'Children',
      path: `/${id}/children`,
      anchor: id,
      onPage: (page) => {
        addPage(page);
        addChildren(page);
      },
    }),
    collectionSection({ heading: 'Related', path: `/${id}/related`, anchor: id, onPage: addPage }),
  );
}

function diagramSection(element: GraphElement, view: Diagram): HTMLElement {
  const reset = () => {
    view.clear();
    view.add([element]);
    view.focus(element.id);
  };
  return h(
    'section',
    { 'aria-labelledby': 'diagram-heading', id: 'diagram' },
    h('h2', { id: 'diagram-heading' }, 'Diagram'),
    view.element,
    h('button', { type: 'button', onclick: reset }, 'Reset diagram'),
  );
}

/**
 * The relations of each child on the page to what the diagram shows (who CREATED it, a link between two children):
 * they are on none of the element's own pages. Only relations are added: the diagram draws those whose two ends it
 * already holds, so the picture does not grow by the children's neighbours.
 */
function linksOfChildren(page: Collection, view: Diagram): void {
  for (const child of page.nodes)
    void getCollection(`/${child.id}/related?pageSize=25`).then(
      (related) => view.add(related.relations),
      () => {},
    );
}

async function loadEnds(relation: GraphElement, view: Diagram): Promise<void> {
  const ends = await Promise.allSettled([getElement(relation.start!), getElement(relation.end!)]);
  view.add([...ends.flatMap((end) => (end.status === 'fulfilled' ? [end.value.body] : [])), relation]);
}
