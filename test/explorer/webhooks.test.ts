// The explorer's Webhooks page in Chromium, as a person uses it against a receiver on a loopback socket (allowed by
// webhooks.allowedHosts): create one and see its secret once, ping it and send the ping again, disable and enable
// it, rotate its secret, be told why an inward address is refused, and delete it. A ping is sent while the request
// waits, so no dispatcher runs here.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { expect, it } from 'vitest';
import { describeBackends } from '../helpers/harness.js';
import { startReceiver } from '../helpers/receiver.js';
import { eventually, expectAccessible, sharedBrowser, signedInPage, uniqueUsers } from './helpers.js';

const browser = sharedBrowser();
/** Set to a folder to keep a screenshot of the page (as explorer.test.ts keeps its views'). */
const SCREENSHOTS = process.env.TRELLIS_EXPLORER_SCREENSHOTS;

describeBackends(
  'Explorer webhooks page',
  (service) => {
    const user = uniqueUsers(service, 'webhooks.test');

    it('creates, pings, redelivers, disables, enables, rotates and deletes a webhook, and shows a refused address', async () => {
      const h = service();
      const wendy = await user('Wendy');
      const receiver = await startReceiver();
      const { page, context, errors } = await signedInPage(browser(), h.url, wendy.token);
      await page.goto(`${h.url}/explorer/#/webhooks`);
      await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      const navLink = page.getByRole('navigation').getByRole('link', { name: 'Webhooks' });
      await eventually(() => navLink.getAttribute('aria-current')).toBe('page');
      await page.getByText('You have no webhooks yet.').waitFor();
      await expectAccessible(page, 'webhooks, none');

      // Created: the secret is shown once, with the notice; the list shows the webhook enabled.
      const form = page.getByRole('form', { name: 'New webhook' });
      await form.getByLabel('Address (URL)').fill(receiver.url);
      await form.getByLabel('Description (optional)').fill('CRM sync');
      await form.getByLabel('Created', { exact: true }).check();
      await form.getByLabel('Changed', { exact: true }).check();
      await form.getByRole('button', { name: 'Create webhook' }).click();
      const firstSecret = (await page.locator('.secret-value').textContent()) ?? '';
      expect(firstSecret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
      await page.getByText('Copy it now, it will not be shown again.').waitFor();
      const card = page.getByRole('article', { name: 'CRM sync' });
      await eventually(() => card.locator('.state').textContent()).toBe('Enabled');
      expect(await card.textContent()).toContain(receiver.url);
      expect(await card.textContent()).toContain('Created, Changed');
      const listed = (await h.request('GET', '/webhooks', { token: wendy.token })).json.items;
      expect(listed).toHaveLength(1);
      const id = listed[0].id as string;
      expect(listed[0]).toMatchObject({ url: receiver.url, events: ['created', 'changed'], enabled: true });
      await expectAccessible(page, 'webhooks, created with its secret');

      // After a reload the secret is gone for good; the webhook is still listed.
      await page.reload();
      await card.waitFor();
      expect(await page.locator('.secret-value').count()).toBe(0);
      expect(await page.content()).not.toContain(firstSecret);

      // Ping: the receiver gets a signed webhook.ping, and the page says it answered 200.
      await card.getByRole('button', { name: 'Ping', exact: true }).click();
      await receiver.until(1);
      expect(receiver.hits[0]!.json.type).toBe('webhook.ping');
      new Webhook(firstSecret).verify(receiver.hits[0]!.body, receiver.hits[0]!.headers as Record<string, string>);
      await eventually(() => card.getByText(/^Ping delivered/).textContent()).toMatch(/answered 200 in \d+ ms/);
      expect(await card.locator('.last-delivery').textContent()).toMatch(/webhook\.ping.*answered 200/);
      await card.getByRole('button', { name: 'Show recent deliveries' }).click();
      const table = card.getByRole('table');
      await eventually(() => table.getByRole('row').count()).toBe(2);
      expect(await table.textContent()).toContain('webhook.ping');
      await expectAccessible(page, 'webhooks, pinged, recent deliveries');

      // Sent again from the table: the same message (same webhook-id), signed afresh, and a new row for it.
      await table.getByRole('button', { name: /^Send again: webhook\.ping of / }).click();
      await receiver.until(2);
      expect(receiver.hits[1]!.headers['webhook-id']).toBe(receiver.hits[0]!.headers['webhook-id']);
      new Webhook(firstSecret).verify(receiver.hits[1]!.body, receiver.hits[1]!.headers as Record<string, string>);
      await eventually(() => card.getByText(/^webhook\.ping delivered again/).textContent()).toMatch(/answered 200/);
      await eventually(() => table.getByRole('row').count()).toBe(3);
      const log = (await h.request('GET', `/webhooks/${id}/deliveries`, { token: wendy.token })).json;
      expect(log.totalItems).toBe(2);
      expect(log.items[0].eventId).toBe(log.items[1].eventId);
      if (SCREENSHOTS) {
        mkdirSync(SCREENSHOTS, { recursive: true });
        await page.screenshot({ path: join(SCREENSHOTS, 'webhooks.png'), fullPage: true });
      }

      // Disabled: the page and the service agree; enabled again, both say so.
      await card.getByRole('button', { name: 'Disable' }).click();
      await eventually(() => card.locator('.state').textContent()).toContain('Disabled');
      expect(await card.locator('.state').textContent()).toContain('Disabled by its owner.');
      expect((await h.request('GET', `/webhooks/${id}`, { token: wendy.token })).json.enabled).toBe(false);
      await card.getByRole('button', { name: 'Enable' }).click();
      await eventually(() => card.locator('.state').textContent()).toBe('Enabled');
      expect((await h.request('GET', `/webhooks/${id}`, { token: wendy.token })).json.enabled).toBe(true);

      // Rotated: a new secret, shown once in the card, which signs the next ping.
      await card.getByRole('button', { name: 'Rotate secret' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
      const secondSecret = (await card.locator('.secret-value').textContent()) ?? '';
      expect(secondSecret).toMatch(/^whsec_/);
      expect(secondSecret).not.toBe(firstSecret);
      await card.getByRole('button', { name: 'Ping', exact: true }).click();
      await receiver.until(3);
      const signedAgain = receiver.hits[2]!;
      new Webhook(secondSecret).verify(signedAgain.body, signedAgain.headers as Record<string, string>);

      // An inward address: the service's refusal, detail and all, under the form; nothing is created.
      const refused = await h.request('POST', '/webhooks', { token: wendy.token, body: { url: 'http://10.1.2.3/' } });
      expect(refused.status).toBe(400);
      await form.getByLabel('Address (URL)').fill('http://10.1.2.3/');
      await form.getByRole('button', { name: 'Create webhook' }).click();
      const alert = form.getByRole('alert');
      await eventually(() => alert.textContent()).toContain(refused.json.detail);
      expect(await alert.textContent()).toContain('The service could not accept this.');
      expect((await h.request('GET', '/webhooks', { token: wendy.token })).json.totalItems).toBe(1);
      await expectAccessible(page, 'webhooks, refused address');

      // Deleted after the confirmation: gone from the page and from the service.
      await card.getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
      await page.getByText('You have no webhooks yet.').waitFor();
      expect(await card.count()).toBe(0);
      expect((await h.request('GET', `/webhooks/${id}`, { token: wendy.token })).status).toBe(404);

      expect(errors).toEqual([]);
      await context.close();
      await receiver.close();
    });

    it('has no Webhooks link for a visitor, and the page asks them to sign in', async () => {
      const h = service();
      const { page, context } = await signedInPage(browser(), h.url, null);
      await page.goto(`${h.url}/explorer/#/webhooks`);
      await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
      await page.getByText('Webhooks belong to a signed-in user.').waitFor();
      expect(await page.getByRole('navigation').getByRole('link', { name: 'Webhooks' }).count()).toBe(0);
      await context.close();
    });
  },
  { settings: { webhooks: { allowedHosts: ['127.0.0.1'] } } },
);
