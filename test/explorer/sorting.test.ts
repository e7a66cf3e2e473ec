// Issue 51, item 5, in Debian's Chromium on both databases: the search's results sort by name, created, updated or a
// property typed in, either way, kept in the address; "More results" continues with the last answer's searchAfter,
// neither repeating nor skipping; a property of mixed kinds is said plainly; Browse shows the newest nodes first.
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeBackends } from '../helpers/harness.js';
import { create, eventually, expectAccessible, namedUser, sharedBrowser, signedInPage } from './helpers.js';

const browser = sharedBrowser();

/** More than a page (25): thirty memos, created in an order other than their names' (7 and 30 share no factor). */
const MEMOS = 30;
const numberAt = (k: number) => ((k * 7) % MEMOS) + 1;
const nameOf = (n: number) => `Memo ${String(n).padStart(2, '0')}`;

describeBackends('Explorer sorting and paging', (service) => {
  let context: BrowserContext;
  let page: Page;
  /** The memos' ids in the order they were created. */
  const created: string[] = [];
  const byName = new Map<string, string>();

  beforeAll(async () => {
    const h = service();
    const ada = await namedUser(h, 'ada@sorting.test', 'Ada');
    for (let k = 0; k < MEMOS; k += 1) {
      const n = numberAt(k);
      // `code` holds a number on one memo and a string on another: a property no order can sort.
      const code = n === 1 ? { code: 3 } : n === 2 ? { code: 'x' } : {};
      const id = await create(h, ada.token, {
        type: 'Memo',
        data: { name: nameOf(n), body: 'lantern', rank: 31 - n, ...code },
      });
      created.push(id);
      byName.set(nameOf(n), id);
    }
    ({ context, page } = await signedInPage(browser(), h.url, ada.token));
  });
  afterAll(async () => {
    await context?.close();
  });

  const results = () => page.locator('.results');
  const shownIds = () =>
    results()
      .locator('li[data-id]')
      .evaluateAll((items) => items.map((li) => li.getAttribute('data-id')));
  const firstName = () => results().locator('li[data-id] a').first().textContent();

  it('sorts by name both ways, pages with "More results" without repeating or skipping, and keeps it in the address', async () => {
    await page.goto(`${service().url}/explorer/#/search`);
    await page.getByLabel('Words to find').fill('lantern');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await eventually(() => results().locator('.count').textContent()).toBe('30 elements.');
    expect(await shownIds()).toHaveLength(25);

    await page.getByLabel('Sort by', { exact: true }).selectOption('name');
    await eventually(firstName).toBe('Memo 01');
    expect(await page.getByLabel('Order', { exact: true }).inputValue()).toBe('asc');
    expect(page.url()).toContain('sort=name&order=asc');
    const names = Array.from({ length: MEMOS }, (_, i) => nameOf(i + 1));
    expect(await shownIds()).toEqual(names.slice(0, 25).map((name) => byName.get(name)));
    await expectAccessible(page, 'search sorted');

    await page.getByRole('button', { name: 'More results' }).click();
    await eventually(async () => (await shownIds()).length).toBe(MEMOS);
    expect(await shownIds()).toEqual(names.map((name) => byName.get(name)));
    // The last page was not full: nothing more to load, and the focus went on to its first element.
    expect(await page.getByRole('button', { name: 'More results' }).count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Memo 26');

    await page.getByLabel('Order', { exact: true }).selectOption('desc');
    await eventually(firstName).toBe('Memo 30');
    expect(await shownIds()).toEqual(
      [...names]
        .reverse()
        .slice(0, 25)
        .map((name) => byName.get(name)),
    );
  });

  it('sorts by created both ways, and a reload repeats the sorted search', async () => {
    await page.getByLabel('Sort by', { exact: true }).selectOption('created');
    // Created starts newest first.
    await eventually(async () => (await shownIds())[0]).toBe(created.at(-1));
    expect(await page.getByLabel('Order', { exact: true }).inputValue()).toBe('desc');
    expect(await shownIds()).toEqual([...created].reverse().slice(0, 25));
    expect(await results().locator('.sorted').first().textContent()).toMatch(/^ Created /);

    await page.getByLabel('Order', { exact: true }).selectOption('asc');
    await eventually(async () => (await shownIds())[0]).toBe(created[0]);
    await page.getByRole('button', { name: 'More results' }).click();
    await eventually(async () => (await shownIds()).length).toBe(MEMOS);
    expect(await shownIds()).toEqual(created);

    expect(page.url()).toContain('q=lantern&sort=created&order=asc');
    await page.reload();
    await eventually(async () => (await shownIds())[0]).toBe(created[0]);
    expect(await page.getByLabel('Sort by', { exact: true }).inputValue()).toBe('created');
    expect(await page.getByLabel('Words to find').inputValue()).toBe('lantern');
  });

  it('sorts by a property typed in, and says plainly when its values are of different kinds', async () => {
    await page.getByLabel('Sort by', { exact: true }).selectOption('property');
    const property = page.getByLabel('Property to sort by');
    await property.fill('rank');
    await property.press('Enter');
    // rank is 31 minus the memo's number: ascending starts at Memo 30, whose value is shown.
    await eventually(firstName).toBe('Memo 30');
    expect(await results().locator('.sorted').first().textContent()).toBe(' rank: 1');
    expect(page.url()).toContain('sort=property&property=rank&order=asc');

    await property.fill('code');
    await property.press('Enter');
    const alert = results().getByRole('alert');
    await eventually(() => alert.textContent()).toBe(
      "Cannot sort by 'code': its values are of different kinds (number and string).",
    );
    expect(await results().locator('li').count()).toBe(0);
  });

  it('Browse shows every node newest first, page after page, without Token nodes', async () => {
    await page.goto(`${service().url}/explorer/#/`);
    await page.locator('[data-collection="index"] li[data-id]').first().waitFor();
    await page.getByLabel('Show', { exact: true }).selectOption('newest');
    const list = page.locator('[data-collection="newest"]');
    await eventually(() => list.locator('li[data-id]').count()).toBe(25);
    expect(page.url()).toMatch(/#\/\?order=newest$/);
    const first = await list
      .locator('li[data-id]')
      .evaluateAll((items) => items.map((li) => li.getAttribute('data-id')));
    // The memos are the newest nodes (after Ada's User node): the last created first.
    expect(first).toEqual([...created].reverse().slice(0, 25));
    await expectAccessible(page, 'browse newest');

    // Every page loaded: each node once, as many as the count says, the memos first, her sign-in Token not listed.
    await list.getByRole('button', { name: 'More results' }).click();
    await eventually(() => list.getByRole('button', { name: 'More results' }).count()).toBe(0);
    const all = await list.locator('li[data-id]').evaluateAll((items) => items.map((li) => li.getAttribute('data-id')));
    expect(all.length).toBeGreaterThan(MEMOS);
    expect(new Set(all).size).toBe(all.length);
    expect(await list.locator('.count').textContent()).toBe(`${all.length} elements.`);
    expect(all.slice(0, MEMOS)).toEqual([...created].reverse());
    expect(await list.textContent()).not.toContain('Token');

    // The choice is in the address: a reload shows the same list.
    await page.reload();
    await eventually(() => page.locator('[data-collection="newest"] li[data-id]').count()).toBe(25);
  });
});
