// The index (GET /): the top-level nodes the user may read, paged, and a form to create a node.
import { createElement } from '../api.js';
import { h, replace } from '../dom.js';
import { jsonEditor } from '../json-editor.js';
import { tell } from '../notice.js';
import { attempt } from '../problem.js';
import { saveOrder } from '../property-form.js';
import { navigate } from '../router.js';
import { collectionSection } from './collection.js';
import { typeField } from './create.js';

export async function renderIndex(main: HTMLElement): Promise<void> {
  const type = typeField(
    'Type',
    'A letter, then letters, digits or _, such as Note or Project; User, Token and Upload are the service’s own.',
  );
  const data = jsonEditor('Properties (JSON object)', { name: '' }, { rows: 4, objectOnly: true });
  const status = h('div');
  const form = h(
    'form',
    { 'aria-labelledby': 'new-node-heading', class: 'compact', novalidate: true },
    h('h2', { id: 'new-node-heading' }, 'New node'),
    type.element,
    data.element,
    h('button', { type: 'submit' }, 'Create node'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = data.value();
    if (type.check() === null) return void type.input.reportValidity();
    if (value === undefined) return;
    void attempt(status, async () => {
      const id = await createElement({ type: type.input.value, data: value });
      saveOrder(id, value as Record<string, unknown>);
      tell('Node created.');
      navigate(`#/${id}`);
    });
  });
  replace(
    main,
    h('h1', { tabindex: '-1' }, 'Browse'),
    h(
      'div',
      { class: 'element-layout' },
      h(
        'div',
        { class: 'element-main' },
        collectionSection({
          heading: 'Index',
          path: '/',
          anchor: null,
          pageSize: 25,
          // A sign-in token is the service's own record of a session, not something the person made.
          shown: (node) => node.type !== 'Token',
        }),
      ),
      h('div', { class: 'element-side' }, form),
    ),
  );
}
