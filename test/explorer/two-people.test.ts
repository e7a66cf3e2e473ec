// Issue 57, as two people (Ada and Ben) and two tabs use the explorer in Debian's Chromium, on both databases: a
// change made in another tab is shown and merged, never saved over; a save keeps the properties it did not change,
// nulls included; "Only what others shared with me" finds what is inside a shared folder; and every relation reads
// as a sentence in its direction, with the name at its other end.
import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { describeBackends } from '../helpers/harness.js';
import { create, eventually, leaveAndStay, openElement, sharedBrowser, signedInPage, uniqueUsers } from './helpers.js';

const browser = sharedBrowser();

/** The JSON box of the properties form, parsed. */
const shownProperties = async (page: Page) =>
  JSON.parse(await page.getByRole('form', { name: 'Properties' }).getByLabel('Properties (JSON object)').inputValue());

describeBackends('Explorer with two people and two tabs', (service) => {
  const user = uniqueUsers(service, 'two.test');

  it('shows a change made in another tab, merges it with the unsaved edit, and never saves over it', async () => {
    const h = service();
    const ada = await user('Ada');
    const budget = await create(h, ada.token, {
      type: 'Note',
      data: { name: 'Budget', amount: 12000, note: 'first quarter', reviewer: null },
    });
    const tab1 = await signedInPage(browser(), h.url, ada.token);
    await openElement(tab1.page, h.url, budget, 'Budget');
    // The other tab is a second window of the same browser (the same sign-in), as a person opens it.
    const tab2 = await tab1.context.newPage();
    await openElement(tab2, h.url, budget, 'Budget');
    await tab1.page.bringToFront();

    await tab1.page.getByLabel('Value of amount').fill('12500.5');
    await tab1.page.getByLabel('Value of note').fill('second quarter');
    await tab2.bringToFront();
    await tab2.getByLabel('Value of amount').fill('13000');
    await tab2.getByRole('button', { name: 'Add property' }).click();
    await tab2.locator('.property-row').last().getByLabel('Property name').fill('status');
    await tab2.locator('.property-row').last().getByLabel('Value of the new property').fill('approved');
    await tab2.getByRole('button', { name: 'Save properties' }).click();
    await eventually(async () => (await h.request('GET', `/${budget}`, { token: ada.token })).json.data.amount).toBe(
      13000,
    );

    // Tab 1 is told, in words that fit another tab of the same person; a save now is refused, plainly. (Brought to
    // the front: a background tab gets few animation frames, which Playwright waits for before a click.)
    await tab1.page.bringToFront();
    const banner = tab1.page.locator('.changed-elsewhere');
    await eventually(() => banner.textContent()).toContain('changed elsewhere (in another tab, or by someone else)');
    await tab1.page.getByRole('button', { name: 'Save properties' }).click();
    const refusal = tab1.page.getByRole('form', { name: 'Properties' }).getByRole('alert');
    await eventually(() => refusal.textContent()).toContain('Not saved: this element was changed elsewhere');
    expect(await refusal.textContent()).not.toMatch(/If-Match|ETag/);
    expect((await h.request('GET', `/${budget}`, { token: ada.token })).json.data).toMatchObject({
      amount: 13000,
      note: 'first quarter',
      status: 'approved',
    });

    // "Show the new version" shows it: theirs where only they changed, mine where only I did, a choice for both.
    await banner.getByRole('button', { name: 'Show the new version' }).click();
    await tab1.page.locator('fieldset.conflict').waitFor();
    expect(await shownProperties(tab1.page)).toEqual({
      name: 'Budget',
      amount: 13000,
      note: 'second quarter',
      reviewer: null,
      status: 'approved',
    });
    const choice = tab1.page.getByRole('group', { name: '“amount”' });
    expect(await choice.getByLabel('New version: 13000').isChecked()).toBe(true);
    await choice.getByLabel('Yours: 12500.5').check();
    expect((await shownProperties(tab1.page)).amount).toBe(12500.5);
    await tab1.page.getByRole('button', { name: 'Save properties' }).click();
    await eventually(async () => (await h.request('GET', `/${budget}`, { token: ada.token })).json.data).toMatchObject({
      amount: 12500.5,
      note: 'second quarter',
      status: 'approved',
      reviewer: null,
    });
    await eventually(() => tab1.page.locator('fieldset.conflict').count()).toBe(0);
    expect(tab1.errors).toEqual([]);
    await tab1.context.close();
  });

  it('a save keeps every property it did not change, nulls included', async () => {
    const h = service();
    const ada = await user('Ada');
    const note = await create(h, ada.token, {
      type: 'Note',
      data: { name: 'Launch checklist', reviewer: null, priority: 1, tags: ['a', null] },
    });
    const { page, context } = await signedInPage(browser(), h.url, ada.token);
    await openElement(page, h.url, note, 'Launch checklist');
    expect(await page.getByLabel('Type of reviewer').inputValue()).toBe('null');
    // A value that does not fit its type is said at once, beside the form.
    await page.getByLabel('Value of priority').fill('abc');
    expect(await page.getByLabel('Value of priority').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('.form-error').textContent()).toContain('“priority” is not a number.');
    await page.getByLabel('Value of priority').fill('2');
    expect(await page.locator('.form-error').textContent()).toBe('');
    await page.getByRole('button', { name: 'Save properties' }).click();
    await eventually(async () => (await h.request('GET', `/${note}`, { token: ada.token })).json.data.priority).toBe(2);
    await eventually(() => page.locator('main .notice').first().textContent()).toBe('Properties saved.');
    const { created, updated, ...data } = (await h.request('GET', `/${note}`, { token: ada.token })).json.data;
    expect(data).toEqual({ name: 'Launch checklist', reviewer: null, priority: 2, tags: ['a', null] });
    // Drawn again after the save, the form and the JSON still hold it.
    await eventually(() => shownProperties(page)).toMatchObject({ reviewer: null, priority: 2 });
    expect(await page.getByLabel('Type of reviewer').inputValue()).toBe('null');
    await context.close();
  });

  it('keeps what is typed while a save is on its way, and asks before it is lost', async () => {
    const h = service();
    const ada = await user('Ada');
    const note = await create(h, ada.token, { type: 'Note', data: { name: 'In flight', words: 1, pages: 1 } });
    const { page, context } = await signedInPage(browser(), h.url, ada.token);
    await openElement(page, h.url, note, 'In flight');
    // The service's answer to the save is held back until the person has typed on, as on a slow network.
    let typedOn!: () => void;
    const typed = new Promise<void>((resolve) => (typedOn = resolve));
    await page.route(`**/${note}`, async (route) => {
      if (route.request().method() !== 'PATCH') return route.fallback();
      const answer = await route.fetch();
      await typed;
      await route.fulfill({ response: answer });
    });
    await page.getByLabel('Value of words').fill('2');
    await page.getByRole('button', { name: 'Save properties' }).click();
    await eventually(async () => (await h.request('GET', `/${note}`, { token: ada.token })).json.data.words).toBe(2);
    await page.getByLabel('Value of pages').fill('9');
    typedOn();
    await eventually(() => page.locator('main .notice').first().textContent()).toContain('Your later changes are kept');
    await page.unroute(`**/${note}`);
    expect(await shownProperties(page)).toMatchObject({ words: 2, pages: 9 });
    expect((await h.request('GET', `/${note}`, { token: ada.token })).json.data.pages).toBe(1);
    await leaveAndStay(page);
    await page.getByRole('button', { name: 'Save properties' }).click();
    await eventually(async () => (await h.request('GET', `/${note}`, { token: ada.token })).json.data).toMatchObject({
      words: 2,
      pages: 9,
    });
    await context.close();
  });

  it('finds what is inside a folder shared with Ben, and says every relation with names, in its direction', async () => {
    const h = service();
    const ada = await user('Ada');
    const ben = await user('Ben');
    const folder = await create(h, ada.token, { type: 'Folder', data: { name: 'Projects' } });
    const inside = await create(h, ada.token, { type: 'Note', data: { name: 'Flux plan', text: 'flux' } }, folder);
    const deeper = await create(h, ada.token, { type: 'Note', data: { name: 'Flux detail' } }, inside);
    const budget = await create(h, ada.token, { type: 'Note', data: { name: 'Budget' } }, folder);
    await create(h, ada.token, { type: 'Note', data: { name: 'Flux private' } });
    const own = await create(h, ben.token, { type: 'Note', data: { name: 'Flux of my own' } });

    // Ada shares the folder with Ben through the explorer.
    const adaPage = await signedInPage(browser(), h.url, ada.token);
    await openElement(adaPage.page, h.url, folder, 'Projects');
    const share = adaPage.page.getByRole('form', { name: 'Share' });
    await share.getByLabel('E-mail or name').fill(ben.email);
    await share.getByRole('button', { name: 'Add person' }).click();
    await share.getByRole('list', { name: 'People to share with' }).getByRole('listitem').waitFor();
    await share.getByRole('button', { name: 'Share', exact: true }).click();
    const parents = adaPage.page.locator('[data-collection="parents"]');
    await eventually(() => parents.textContent()).toContain(`${ben.name} HAS_READ_ACCESS this`);
    expect(await parents.textContent()).toContain(`${ada.name} OWNS this`);
    const children = adaPage.page.locator('[data-collection="children"]');
    await eventually(() => children.textContent()).toContain('this OWNS Flux plan');
    expect(await children.textContent()).not.toContain('OWNS this');
    // The diagram draws who created each child too, though those links are on none of the folder's own pages.
    const diagram = adaPage.page.locator('.diagram-text');
    for (const name of ['Projects', 'Flux plan', 'Budget'])
      await eventually(() => diagram.textContent()).toContain(`${ada.name} —CREATED→ ${name}`);

    // A child: its parents say who owns it, Related reads in the relation's direction, and "Shared with" names no
    // folder as a person.
    await openElement(adaPage.page, h.url, inside, 'Flux plan');
    // The relation is made here, its other end found by the start of its name, and the outcome is shown.
    const relation = adaPage.page.getByRole('form', { name: 'New relation' });
    await relation.getByLabel('Relation type').fill('DEPENDS_ON');
    await relation.getByLabel('Other element (search by name)').fill('Budg');
    await relation.getByRole('button', { name: 'Budget' }).click();
    await relation.getByRole('button', { name: 'Create relation' }).click();
    await eventually(() => adaPage.page.locator('main .notice').first().textContent()).toBe(
      'Relation created: this DEPENDS_ON Budget.',
    );
    await eventually(() => adaPage.page.locator('[data-collection="parents"]').textContent()).toContain(
      'Projects OWNS this',
    );
    const related = adaPage.page.locator('[data-collection="related"]');
    await eventually(() => related.textContent()).toContain('this DEPENDS_ON Budget');
    expect(await related.textContent()).not.toContain('DEPENDS_ON this');
    expect(await related.textContent()).toContain('this OWNS Flux detail');
    const sharedWith = adaPage.page.locator('.shared-with');
    await eventually(() => sharedWith.textContent()).toContain('Inside Projects');
    expect(await sharedWith.textContent()).not.toContain('someone (');
    expect(await sharedWith.textContent()).not.toContain(folder.slice(0, 8));
    await adaPage.context.close();

    // Ben: "flux" finds his own note and the two inside the shared folder; ticked, only those two; an empty query
    // ticked lists everything shared with him, the folder included.
    const benPage = await signedInPage(browser(), h.url, ben.token);
    await benPage.page.goto(`${h.url}/explorer/#/`);
    const index = benPage.page.locator('[data-collection="index"]');
    await index.getByRole('link', { name: 'Projects' }).waitFor();
    expect(await index.textContent()).not.toContain('Token');
    await benPage.page.goto(`${h.url}/explorer/#/search`);
    // The type filter offers the types before any search.
    await eventually(() =>
      benPage.page.getByLabel('Type', { exact: true }).locator('option').allTextContents(),
    ).toContain('Note');
    const results = benPage.page.locator('.results');
    const found = () => results.locator('li').evaluateAll((items) => items.map((li: any) => li.dataset.id).sort());
    await benPage.page.getByLabel('Words to find').fill('flux');
    await benPage.page.getByRole('button', { name: 'Search', exact: true }).click();
    await eventually(found).toEqual([inside, deeper, own].sort());
    await benPage.page.getByLabel('Only what others shared with me').check();
    await eventually(found).toEqual([inside, deeper].sort());
    // The address holds the search: a reload repeats it.
    expect(new URL(benPage.page.url()).hash).toBe('#/search?q=flux&shared=1');
    await benPage.page.reload();
    await eventually(found).toEqual([inside, deeper].sort());
    expect(await benPage.page.getByLabel('Only what others shared with me').isChecked()).toBe(true);
    await benPage.page.getByLabel('Words to find').fill('');
    await benPage.page.getByRole('button', { name: 'Search', exact: true }).click();
    await eventually(found).toEqual([folder, inside, deeper, budget].sort());
    expect(benPage.errors).toEqual([]);
    await benPage.context.close();
  });
});
