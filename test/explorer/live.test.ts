// The explorer goes live (issue 43): two people signed in, in two browser contexts of Debian's Chromium, look at the
// same folder; what one changes (a property saved, a child created, a child deleted) appears on the other's page
// without a reload, in the element view, the children list and the diagram. Also the browser's own EventSource
// follows GET /events unchanged where no Authorization header is needed (an anonymous user).
import { expect, it } from 'vitest';
import { describeBackends, startHarness } from '../helpers/harness.js';
import { create, eventually, namedUser, openElement, sharedBrowser, signedInPage } from './helpers.js';

const browser = sharedBrowser();

describeBackends('Explorer live changes', (service) => {
  it('shows another person’s changes to the element, its children and the diagram without a reload', async () => {
    const h = service();
    const ada = await namedUser(h, 'ada@live.test', 'Ada');
    const grace = await namedUser(h, 'grace@live.test', 'Grace');
    const folder = await create(h, ada.token, { type: 'Folder', data: { name: 'Plans' } });
    const first = await create(h, ada.token, { type: 'Note', data: { name: 'First note' } }, folder);
    for (const type of ['HAS_READ_ACCESS', 'HAS_UPDATE_ACCESS', 'HAS_CREATE_ACCESS', 'HAS_DELETE_ACCESS'])
      await create(h, ada.token, { type, start: grace.id, end: folder, data: {} });

    const watcher = await signedInPage(browser(), h.url, ada.token);
    await openElement(watcher.page, h.url, folder, 'Plans');
    await watcher.page.getByText('First note').first().waitFor();
    const loads = { count: 0 };
    watcher.page.on('framenavigated', () => loads.count++);

    const editor = await signedInPage(browser(), h.url, grace.token);
    await openElement(editor.page, h.url, folder, 'Plans');
    const form = editor.page.getByRole('form', { name: 'Properties' });
    await form.getByLabel('Properties (JSON object)').fill('{"name": "Plans", "status": "approved by Grace"}');
    await form.getByRole('button', { name: 'Save properties' }).click();
    const shown = watcher.page.getByRole('form', { name: 'Properties' }).getByLabel('Properties (JSON object)');
    await eventually(() => shown.inputValue()).toContain('approved by Grace');

    // A child created and one deleted by Grace: Ada's children list and diagram follow.
    const second = await create(h, grace.token, { type: 'Note', data: { name: 'Second note' } }, folder);
    await eventually(() => watcher.page.locator('main').textContent()).toContain('Second note');
    await eventually(() => watcher.page.locator('.diagram-text').textContent()).toContain('Second note');
    expect((await h.request('DELETE', `/${first}`, { token: grace.token })).status).toBe(204);
    await eventually(() => watcher.page.locator('.diagram-text').textContent()).not.toContain('First note');
    await eventually(() => watcher.page.locator('main').textContent()).not.toContain('First note');
    expect(second).toBeTruthy();
    expect(loads.count).toBe(0);

    // Deleted by someone else: the page says so.
    expect((await h.request('DELETE', `/${folder}`, { token: ada.token })).status).toBe(204);
    await eventually(() => editor.page.getByRole('heading', { level: 1 }).textContent()).toBe('Element deleted');
    expect(watcher.errors).toEqual([]);
    expect(editor.errors).toEqual([]);
    await watcher.context.close();
    await editor.context.close();
  });

  it('keeps a half-filled form, its status line and the focus when another person’s change redraws the view', async () => {
    const h = service();
    const ada = await namedUser(h, 'ada@forms.test', 'Ada');
    const grace = await namedUser(h, 'grace@forms.test', 'Grace');
    const folder = await create(h, ada.token, { type: 'Folder', data: { name: 'Drafts' } });
    await create(h, ada.token, { type: 'HAS_UPDATE_ACCESS', start: grace.id, end: folder, data: {} });
    await create(h, ada.token, { type: 'HAS_READ_ACCESS', start: grace.id, end: folder, data: {} });

    const { page, context, errors } = await signedInPage(browser(), h.url, ada.token);
    await openElement(page, h.url, folder, 'Drafts');
    const child = page.getByRole('form', { name: 'New child' });
    await child.getByLabel('Type').fill('Note');
    await child.getByRole('button', { name: 'Create another' }).click();
    await eventually(() => child.getByRole('status').textContent()).toContain('Created');
    await child.getByLabel('Properties of the child').fill('{"name": "Half typed"}');

    // Grace renames the folder: Ada's view is drawn again with the new name, her form as she left it.
    expect((await h.request('PATCH', `/${folder}`, { token: grace.token, body: { name: 'Drafts 2' } })).status).toBe(
      204,
    );
    await eventually(() => page.getByRole('heading', { level: 1 }).textContent()).toContain('Drafts 2');
    expect(await child.getByLabel('Type').inputValue()).toBe('Note');
    expect(await child.getByLabel('Properties of the child').inputValue()).toBe('{"name": "Half typed"}');
    expect(await child.getByRole('status').textContent()).toContain('Created');
    expect(await child.getByLabel('Properties of the child').evaluate((e) => e === document.activeElement)).toBe(true);
    await child.getByRole('button', { name: 'Create another' }).click();
    await child.getByRole('link', { name: 'Half typed' }).waitFor();
    const children = await h.request('GET', `/${folder}/children`, { token: ada.token });
    expect(children.json.nodes.map((n: any) => n.data.name ?? null).sort()).toEqual(['Half typed', null]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('the browser’s EventSource follows the feed as the anonymous user', async () => {
    const base = service();
    const owner = await namedUser(base, 'owner@live.test', 'Owner');
    const anonymous = await namedUser(base, 'anonymous@live.test', 'Anonymous');
    const h = await startHarness(base.backend, { db: base.db, anonymousUserId: anonymous.id });
    try {
      const doc = await create(h, owner.token, { type: 'Doc', data: { name: 'Public' } });
      await create(h, owner.token, { type: 'HAS_READ_ACCESS', start: anonymous.id, end: doc, data: {} });
      const context = await browser().newContext();
      const page = await context.newPage();
      await page.goto(`${h.url}/explorer/`);
      await page.evaluate((id) => {
        const w = globalThis as any;
        w.received = [];
        const source = new w.EventSource(`/events?id=${id}`);
        source.addEventListener('ready', () => w.received.push('ready'));
        source.addEventListener('changed', (e: any) => w.received.push(JSON.parse(e.data).element.data.name));
      }, doc);
      await eventually(() => page.evaluate(() => (globalThis as any).received)).toEqual(['ready']);
      expect((await h.request('PATCH', `/${doc}`, { token: owner.token, body: { name: 'Renamed' } })).status).toBe(204);
      await eventually(() => page.evaluate(() => (globalThis as any).received)).toEqual(['ready', 'Renamed']);
      await context.close();
    } finally {
      await h.stop();
    }
  });
});
