// The explorer's flows for people (issue 46) in Debian's Chromium against the real app, on both databases: a
// read-only caller sees no write control, sharing by e-mail, the delete dialog's list and the owned subtree, plain
// search by a word in any property, a sign-in that ends and returns to the page with the edit kept, the warning
// before unsaved edits are lost, sign-in across tabs, and a phone's 390 x 844 screen. Each flow makes its own data.

import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { attachFile, describeBackends } from '../helpers/harness.js';
import {
  create,
  eventually,
  expectAccessible,
  leaveAndStay,
  namedUser,
  openElement,
  sharedBrowser,
  signedInPage,
  TOKEN_KEY,
} from './helpers.js';

const browser = sharedBrowser();

/** The names of the buttons, inputs and forms in <main>: what a person could act on. */
const controlsOf = (page: Page) =>
  page.evaluate(() => {
    const main = (globalThis as any).document.querySelector('main');
    return {
      buttons: [...main.querySelectorAll('button')].map((b: any) => b.textContent.trim()),
      forms: main.querySelectorAll('form').length,
      inputs: main.querySelectorAll('input, textarea, select').length,
    };
  });

describeBackends('Explorer flows', (service) => {
  let n = 0;
  /** A fresh user with a unique e-mail (the suites share one service). */
  const user = (name: string) => {
    n += 1;
    return namedUser(service(), `${name.toLowerCase()}${n}@flows.test`, `${name} ${n}`);
  };

  it('a read-only caller sees a banner and no write control; the owner sees them', async () => {
    const h = service();
    const ada = await user('Ada');
    const grace = await user('Grace');
    const project = await create(h, ada.token, { type: 'Project', data: { name: 'Shared plan', phase: 2 } });
    await create(h, ada.token, { type: 'Note', data: { name: 'Inside' } }, project);
    await attachFile(h, ada.token, project, Buffer.alloc(3 * 1024 * 1024, 1), 'plan.bin');
    await create(h, ada.token, { type: 'HAS_READ_ACCESS', start: grace.id, end: project, data: {} });

    const { page, context } = await signedInPage(browser(), h.url, grace.token);
    await openElement(page, h.url, project, 'Shared plan');
    expect(await page.getByRole('note').textContent()).toContain('Read only.');
    const seen = await controlsOf(page);
    expect(seen.forms).toBe(0);
    expect(seen.inputs).toBe(0);
    // Only looking: download, the diagram's own buttons (one per node) and paging.
    expect(seen.buttons).toContain('Download');
    const writes =
      /^(Save properties|Delete element|Delete file|Share|Create (child|another|relation)|Choose a file.*|Revoke|Add (person|property))$/;
    for (const name of seen.buttons) expect(name).not.toMatch(writes);
    expect(await page.locator('[data-file="size"]').textContent()).toBe('3.1 MB');
    expect(await page.getByText('phase').count()).toBe(1);
    await expectAccessible(page, 'read-only element');
    await context.close();

    const owner = await signedInPage(browser(), h.url, ada.token);
    await openElement(owner.page, h.url, project, 'Shared plan');
    expect(await owner.page.getByRole('note').count()).toBe(0);
    for (const name of ['Save properties', 'Delete element', 'Create child', 'Delete file'])
      await owner.page.getByRole('button', { name, exact: true }).waitFor();
    await owner.context.close();
  });

  it('shares with several people by e-mail, read preselected; names them; warns before giving up ownership', async () => {
    const h = service();
    const ada = await user('Ada');
    const grace = await user('Grace');
    const alan = await user('Alan');
    const project = await create(h, ada.token, { type: 'Project', data: { name: 'Apollo' } });
    const { page, context, errors } = await signedInPage(browser(), h.url, ada.token);
    await openElement(page, h.url, project, 'Apollo');
    const share = page.getByRole('form', { name: 'Share' });
    expect(await share.getByLabel('Access', { exact: true }).inputValue()).toBe('HAS_READ_ACCESS');
    await share.getByLabel('E-mail or name').fill('nobody@flows.test');
    await share.getByRole('button', { name: 'Add person' }).click();
    await eventually(() => share.getByRole('alert').textContent()).toContain('No user or group');
    for (const person of [grace, alan]) {
      await share.getByLabel('E-mail or name').fill(person.email);
      await share.getByRole('button', { name: 'Add person' }).click();
      await share.getByText(person.name).waitFor();
    }
    await share.getByRole('button', { name: 'Share', exact: true }).click();
    const list = page.locator('.grants');
    await eventually(() => list.locator('li').allTextContents()).toEqual(
      expect.arrayContaining([`${grace.name}: Can view Revoke`, `${alan.name}: Can view Revoke`]),
    );
    for (const person of [grace, alan])
      expect((await h.request('GET', `/${project}`, { token: person.token })).status).toBe(200);

    // Revoking Grace names her; revoking one's own ownership warns first.
    await page.getByRole('button', { name: `Revoke access of ${grace.name} (Can view)` }).click();
    expect(await page.getByRole('dialog').textContent()).toContain(`Stop sharing with ${grace.name}`);
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await eventually(async () => (await h.request('GET', `/${project}`, { token: grace.token })).status).toBe(404);
    await page
      .getByRole('button', { name: `Revoke access of ${ada.name} (Full access` })
      .first()
      .click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('Give up your own ownership of this element?');
    expect(await dialog.textContent()).toContain('You will lose access');
    await expectAccessible(page, 'share dialog');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await h.request('GET', `/${project}`, { token: ada.token })).status).toBe(200);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('the delete dialog lists what goes and what stays, and deletes the owned subtree deepest first', async () => {
    const h = service();
    const ada = await user('Ada');
    const grace = await user('Grace');
    const parent = await create(h, ada.token, { type: 'Project', data: { name: 'Parent' } });
    const child = await create(h, ada.token, { type: 'Note', data: { name: 'Child' } }, parent);
    const grandchild = await create(h, ada.token, { type: 'Note', data: { name: 'Grandchild' } }, child);
    const other = await create(h, ada.token, { type: 'Project', data: { name: 'Other' } });
    await create(h, ada.token, { type: 'FOLLOWS', start: parent, end: other, data: {} });
    await create(h, ada.token, { type: 'HAS_READ_ACCESS', start: grace.id, end: parent, data: {} });
    await attachFile(h, ada.token, parent, Buffer.alloc(2500, 1), 'notes.txt');

    const { page, context } = await signedInPage(browser(), h.url, ada.token);
    await openElement(page, h.url, parent, 'Parent');
    await page.getByRole('button', { name: 'Delete element' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const goes = await dialog.locator('ul.goes li').allTextContents();
    expect(goes).toEqual(
      expect.arrayContaining([
        'Parent (Project)',
        'its file (2.5 KB)',
        'the relation “this FOLLOWS Other”',
        `the relation “${grace.name} HAS_READ_ACCESS this”`,
      ]),
    );
    expect(await dialog.locator('ul.stays li').allTextContents()).toEqual(['Child']);
    await expectAccessible(page, 'delete dialog');
    await dialog.getByLabel('Also delete the children (and theirs) that I may delete').check();
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Browse' }).waitFor();
    expect(await page.locator('main .notice').textContent()).toBe('Deleted.');
    for (const id of [parent, child, grandchild])
      expect((await h.request('GET', `/${id}`, { token: ada.token })).status).toBe(404);
    expect((await h.request('GET', `/${other}`, { token: ada.token })).status).toBe(200);
    await context.close();
  });

  it('plain search finds a word in any property, highlights it, filters, hides tokens and relations', async () => {
    const h = service();
    const ada = await user('Ada');
    const word = `saffron${n}`;
    const note = await create(h, ada.token, {
      type: 'Note',
      data: { name: 'Groceries', body: `buy ${word} and rice` },
    });
    const recipe = await create(h, ada.token, { type: 'Recipe', data: { name: 'Paella', needs: [word] } });
    await create(h, ada.token, { type: 'NEEDS', start: recipe, end: note, data: { why: word } });
    const { page, context } = await signedInPage(browser(), h.url, ada.token);
    await page.goto(`${h.url}/explorer/#/search`);
    const box = page.getByLabel('Words to find');
    await box.fill(word);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const results = page.locator('.results');
    await eventually(() => results.locator('.count').textContent()).toBe('2 elements.');
    expect(await results.locator('mark').first().textContent()).toBe(word);
    expect(await results.getByText(`buy ${word} and rice`).count()).toBe(1);
    await page.getByLabel('Type', { exact: true }).selectOption('Recipe');
    await eventually(() => results.locator('.count').textContent()).toBe('1 element.');
    expect(await results.getByRole('link').allTextContents()).toEqual(['Paella']);
    await expectAccessible(page, 'search');

    // Relations (and Token nodes) are hidden unless asked for: the NEEDS relation matches too.
    await page.getByLabel('Type', { exact: true }).selectOption('');
    await page.getByLabel('Include relations and tokens').check();
    await eventually(() => results.locator('.count').textContent()).toBe('3 elements.');
    expect(await results.locator('.type', { hasText: 'NEEDS' }).count()).toBe(1);

    // A search that fails clears the old results.
    await box.fill(word);
    await page.route('**/search', (route) => route.fulfill({ status: 503, body: '' }));
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await eventually(() => results.getByRole('alert').count()).toBe(1);
    expect(await results.locator('li').count()).toBe(0);
    await context.close();
  });

  it('an ended sign-in says so, the header updates at once, and signing in returns to the page with the edit', async () => {
    const h = service();
    const ada = await user('Ada');
    const note = await create(h, ada.token, { type: 'Note', data: { name: 'Draft', words: 1 } });
    const { page, context } = await signedInPage(browser(), h.url, ada.token);
    await openElement(page, h.url, note, 'Draft');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.getByLabel('Value of words').fill('42');
    await page.getByRole('button', { name: 'Add property' }).click();
    await page.locator('.property-row').last().getByLabel('Property name').fill('extra');
    await page.locator('.property-row').last().getByLabel('Value of the new property').fill('kept');

    expect((await h.request('DELETE', '/token', { token: ada.token })).status).toBe(204);
    await page.getByRole('button', { name: 'Save properties' }).click();
    await page.getByRole('form', { name: 'Log in' }).waitFor();
    expect(await page.getByRole('status').first().textContent()).toContain('Your sign-in has ended');
    await page.locator('#who').getByRole('link', { name: 'Sign in' }).waitFor();

    const login = page.getByRole('form', { name: 'Log in' });
    await login.getByLabel('Email').fill(ada.email);
    await login.getByLabel('Password').fill(ada.password);
    await login.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Draft', level: 1 }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/${note}`);
    await page.getByText('Your unsaved changes are restored.').waitFor();
    expect(JSON.parse(await page.getByLabel('Properties (JSON object)').inputValue())).toEqual({
      name: 'Draft',
      words: 42,
      extra: 'kept',
    });
    await page.getByRole('button', { name: 'Save properties' }).click();
    const token = await page.evaluate((key) => (globalThis as any).localStorage.getItem(key), TOKEN_KEY);
    await eventually(async () => (await h.request('GET', `/${note}`, { token })).json.data).toMatchObject({
      words: 42,
      extra: 'kept',
    });
    await context.close();
  });

  it('warns before unsaved edits are lost, and keeps the key order', async () => {
    const h = service();
    const ada = await user('Ada');
    const note = await create(h, ada.token, { type: 'Note', data: { name: 'Order' } });
    const { page, context } = await signedInPage(browser(), h.url, ada.token);
    await openElement(page, h.url, note, 'Order');
    await page.getByLabel('Properties (JSON object)').fill('{"zeta": 1, "name": "Order", "alpha": 2}');
    await page.getByRole('button', { name: 'Save properties' }).click();
    await eventually(async () => (await h.request('GET', `/${note}`, { token: ada.token })).json.data.alpha).toBe(2);
    await eventually(() => page.locator('main .notice').first().textContent()).toBe('Properties saved.');
    await openElement(page, h.url, note, 'Order');
    expect(
      await page
        .locator('.property-row')
        .getByLabel('Property name')
        .evaluateAll((inputs) => inputs.map((i: any) => i.value)),
    ).toEqual(['zeta', 'name', 'alpha']);

    await page.getByLabel('Value of zeta').fill('7');
    await leaveAndStay(page);
    expect(new URL(page.url()).hash).toBe(`#/${note}`);
    expect(await page.getByLabel('Value of zeta').inputValue()).toBe('7');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('link', { name: 'Browse' }).click();
    await page.getByRole('heading', { name: 'Browse' }).waitFor();
    expect((await h.request('GET', `/${note}`, { token: ada.token })).json.data.zeta).toBe(1);
    await context.close();
  });

  it("picks a relation's other end by name, states the type rule, and creates children one after another", async () => {
    const h = service();
    const ada = await user('Ada');
    const apollo = await create(h, ada.token, { type: 'Project', data: { name: `Apollo ${n}` } });
    const artemis = await create(h, ada.token, { type: 'Project', data: { name: `Artemis ${n}` } });
    const { page, context } = await signedInPage(browser(), h.url, ada.token);
    await openElement(page, h.url, artemis, `Artemis ${n}`);
    const relation = page.getByRole('form', { name: 'New relation' });
    await relation.getByLabel('Relation type').fill('follows me');
    expect(await relation.getByText('A letter, then letters, digits or _').count()).toBe(1);
    await relation.getByLabel('Other element (search by name)').fill('Apollo');
    await relation.getByRole('button', { name: `Apollo ${n}` }).click();
    await relation.getByRole('button', { name: 'Create relation' }).click();
    await eventually(() => relation.getByRole('alert').textContent()).toContain('The relation type is not valid.');
    await relation.getByLabel('Relation type').fill('FOLLOWS');
    await relation.getByRole('button', { name: 'Create relation' }).click();
    await page
      .locator('[data-collection="related"]')
      .getByRole('link', { name: `Apollo ${n}` })
      .waitFor();
    const parents = await h.request('GET', `/${apollo}/parents`, { token: ada.token });
    expect(parents.json.relations.find((r: any) => r.type === 'FOLLOWS')).toMatchObject({
      start: artemis,
      end: apollo,
    });

    const child = page.getByRole('form', { name: 'New child' });
    for (const name of ['One', 'Two']) {
      await child.getByLabel('Type').fill('Note');
      await child.getByLabel('Properties of the child').fill(JSON.stringify({ name }));
      await child.getByRole('button', { name: 'Create another' }).click();
      await child.getByRole('link', { name }).waitFor();
    }
    expect(new URL(page.url()).hash).toBe(`#/${artemis}`);
    const children = await h.request('GET', `/${artemis}/children`, { token: ada.token });
    expect(children.json.nodes.map((node: any) => node.data.name).sort()).toEqual(['One', 'Two']);
    await context.close();
  });

  it('keeps the sign-in across tabs unless the computer is shared; Sign out is in the header', async () => {
    const h = service();
    const ada = await user('Ada');
    for (const shared of [false, true]) {
      const { page, context } = await signedInPage(browser(), h.url, null);
      const login = page.getByRole('form', { name: 'Log in' });
      if (shared) await page.getByLabel('This is a shared computer').check();
      await login.getByLabel('Email').fill(ada.email);
      await login.getByLabel('Password').fill(ada.password);
      await login.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('heading', { name: 'Browse' }).waitFor();
      const other = await context.newPage();
      await other.goto(`${h.url}/explorer/`);
      const who = other.locator('#who');
      await eventually(() => who.textContent()).toContain(shared ? 'Sign in' : ada.email);
      if (!shared) {
        await other.goto(`${h.url}/explorer/#/account`);
        await other.locator('#my-id').waitFor();
        await expectAccessible(other, 'account');
        await other.getByRole('button', { name: 'Sign out' }).click();
        await other.getByRole('form', { name: 'Log in' }).waitFor();
        // The first tab hears of it at once.
        await page.locator('#who').getByRole('link', { name: 'Sign in' }).waitFor();
      }
      await context.close();
    }
  });

  it('fits a 390 x 844 phone: no sideways scroll on any view, the header wraps, the diagram is reachable', async () => {
    const h = service();
    const ada = await user('Ada');
    const project = await create(h, ada.token, {
      type: 'Project',
      data: { name: 'A rather long project name to wrap' },
    });
    await create(h, ada.token, { type: 'Note', data: { name: 'Child' } }, project);
    const { page, context } = await signedInPage(browser(), h.url, null, { width: 390, height: 844 });
    const noSidewaysScroll = () => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth);
    await page.getByRole('form', { name: 'Log in' }).waitFor();
    expect(await noSidewaysScroll()).toBeLessThanOrEqual(390);
    await page.evaluate(([key, value]) => (globalThis as any).localStorage.setItem(key, value), [TOKEN_KEY, ada.token]);
    for (const [hash, heading] of [
      ['#/', 'Browse'],
      ['#/search', 'Search'],
      ['#/account', 'Account'],
      ['#/nowhere', 'Page not found'],
    ]) {
      await page.goto(`${h.url}/explorer/${hash}`);
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await eventually(() => page.locator('#who').textContent()).toContain(ada.email);
      expect(await noSidewaysScroll(), hash).toBeLessThanOrEqual(390);
    }
    await openElement(page, h.url, project, 'A rather long project name to wrap');
    expect(await noSidewaysScroll()).toBeLessThanOrEqual(390);
    await page.getByRole('button', { name: 'Go to the diagram' }).click();
    await eventually(() => page.locator('.diagram-canvas').isVisible()).toBe(true);
    const box = await page.locator('.diagram-canvas').boundingBox();
    expect(box!.y).toBeLessThan(844);
    expect(box!.y + box!.height).toBeGreaterThan(0);
    await expectAccessible(page, 'element on a phone');
    await context.close();
  });
});

describeBackends(
  'Explorer sharing, throttled',
  (service) => {
    it('says how long to wait when the look-up of people is throttled', async () => {
      const h = service();
      const ada = await namedUser(h, 'ada@throttled.test', 'Ada');
      const project = await create(h, ada.token, { type: 'Project', data: { name: 'Quiet' } });
      const { page, context } = await signedInPage(browser(), h.url, ada.token);
      await openElement(page, h.url, project, 'Quiet');
      const share = page.getByRole('form', { name: 'Share' });
      for (const email of ['one@throttled.test', 'two@throttled.test', 'three@throttled.test']) {
        await share.getByLabel('E-mail or name').fill(email);
        await share.getByRole('button', { name: 'Add person' }).click();
        await eventually(() => share.getByRole('alert').count()).toBe(1);
        if ((await share.getByRole('alert').textContent())?.startsWith('Too many')) break;
      }
      expect(await share.getByRole('alert').textContent()).toMatch(
        /^Too many look-ups in a short time\. Try again in \d+ seconds\.$/,
      );
      await context.close();
    });
  },
  { settings: { register: { principalLookup: { lookupsPerWindow: 1, windowInSeconds: 600 } } } },
);
