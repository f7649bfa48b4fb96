// The webhook tools of the console (issue 41), in Chromium against the real server delivering to a
// real receiver on loopback: editing a webhook with the API's refusal under its field, a test
// delivery and the inspector of its attempts (the headers as the receiver got them, its answer as
// text), the status filter and Load more, retrying one delivery, recovering the failed ones,
// replaying from a cursor (and an expired one), a webhook the receiver's 410 stopped and the way
// back, a narrower key's limits, and each view accessible and whole at 1440 and 375 px.
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { issueKey } from '../../src/operator.js';
import { useTestApp } from '../support/app.js';
import { describeInBrowser, launchBrowser } from '../support/browser.js';
import { until } from '../support/wait.js';
import { HTML_ANSWER, Receiver } from '../webhooks/support.js';
import { goTo, loaded, openConsole, seriousAccessibilityViolations, sidewaysProblems, type ConsolePage } from './console-browser.js';

const RETENTION = 30;

interface Delivery {
  id: string;
  eventId: number;
  status: 'pending' | 'succeeded' | 'failed';
  test: boolean;
  replay: boolean;
  attempts: Array<{ responseStatus: number | null; requestHeaders: Record<string, string>; responseBody: string | null }>;
}

/** The texts of the elements the control names in aria-describedby, in order. */
async function description(control: Locator): Promise<string> {
  const ids = ((await control.getAttribute('aria-describedby')) ?? '').split(/\s+/).filter(Boolean);
  const texts = await Promise.all(ids.map((id) => control.page().locator(`[id="${id}"]`).textContent()));
  return texts.join(' ');
}

describeInBrowser('the webhook tools in the console', () => {
  const app = useTestApp({
    env: {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // Five quick attempts, so a failing receiver ends a delivery as failed within a second or two.
      WEBHOOK_RETRY_SCHEDULE: '0,0.1,0.1,0.1,0.1',
      WEBHOOK_TIMEOUT_MS: '2000',
      EVENT_RETENTION: String(RETENTION),
    },
  });
  const receiver = new Receiver();
  let base: string;
  let browser: Browser;
  let wide: ConsolePage;
  let page: Page;
  let key: string;
  let orders: { id: string };

  const api = async (method: string, url: string, body?: unknown) => {
    const response = await app().request({ method, url, key, body });
    expect(response.status, `${method} ${url}: ${response.body}`).toBeLessThan(300);
    return response.json;
  };
  const deliveries = async (webhookId: string): Promise<Delivery[]> => (await api('GET', `/api/v1/webhooks/${webhookId}/deliveries`)).data;
  const publish = async (type: string): Promise<number> => (await api('POST', '/api/v1/events', { type, data: { n: 1 } })).id;

  beforeAll(async () => {
    base = await app().listen();
    await receiver.start();
    browser = await launchBrowser();
    key = (await app().account()).key;
    orders = await api('POST', '/api/v1/webhooks', { name: 'Orders', url: receiver.url('/ok?hook=orders'), events: ['custom.*'] });
    wide = await openConsole(browser, base, { width: 1440 });
    page = wide.page;
    await connect(page, key);
    await goTo(page, 'Webhooks');
    await loaded(page);
  });

  afterAll(async () => {
    await browser?.close();
    await receiver.close();
  });

  async function connect(target: Page, withKey: string): Promise<void> {
    await target.getByRole('textbox', { name: 'API key' }).fill(withKey);
    await target.getByRole('button', { name: 'Connect key' }).click();
    await target.getByRole('heading', { name: 'Connected key' }).waitFor();
  }

  async function expectAccessible(where: string, target: Page = page): Promise<void> {
    const violations = await seriousAccessibilityViolations(target);
    expect(violations, `${where}: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }

  const card = (name: string, target: Page = page) => target.getByRole('region', { name, exact: true });
  const row = (id: string, target: Page = page) => target.locator(`tr[data-delivery-id="${id}"], li[data-delivery-id="${id}"]`);
  const rows = (within: Locator) => within.locator('[data-delivery-id]');
  const shownIds = async (within: Locator) => Promise.all((await rows(within).all()).map((element) => element.getAttribute('data-delivery-id')));

  it("edits a webhook's name, URL and events in a dialog, with the API's refusal under the URL", async () => {
    await page.getByRole('button', { name: 'Edit Orders' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit Orders' });
    await dialog.waitFor();
    const url = dialog.getByLabel('Receiver URL');
    // The browser takes it as a URL; the API refuses user information in it.
    await url.fill(receiver.url('/html').replace('http://', 'http://user:secret@'));
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await dialog.getByRole('alert').waitFor();
    expect(await url.getAttribute('aria-invalid')).toBe('true');
    expect(await description(url)).toContain('must not contain user information');
    expect(await dialog.getByLabel('Name').getAttribute('aria-invalid')).toBeNull();
    await expectAccessible('the edit dialog with a refused URL');

    await dialog.getByLabel('Name').fill('Orders (HTML receiver)');
    await url.fill(receiver.url('/html'));
    await dialog.getByLabel('custom.*', { exact: true }).uncheck();
    await dialog.getByLabel('Exact custom types').fill('custom.order.paid, custom.order.refunded');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await dialog.waitFor({ state: 'detached' });
    await card('Orders (HTML receiver)').waitFor();
    // Focus is back on the button that opened the dialog.
    // (As the dialog's cleanup runs: it may come a moment after the dialog left the page.)
    await expect.poll(() => page.evaluate<string | undefined>('document.activeElement?.textContent')).toBe('Edit Orders (HTML receiver)');
    expect(await api('GET', `/api/v1/webhooks/${orders.id}`)).toMatchObject({
      name: 'Orders (HTML receiver)',
      url: receiver.url('/html'),
      events: ['custom.order.paid', 'custom.order.refunded'],
    });
    const shownEvents = await card('Orders (HTML receiver)').locator('.tag').allTextContents();
    expect(shownEvents).toEqual(['custom.order.paid', 'custom.order.refunded']);

    // Escape closes it without a request, focus back on Edit.
    await page.getByRole('button', { name: 'Edit Orders (HTML receiver)' }).click();
    await page.getByRole('dialog', { name: 'Edit Orders (HTML receiver)' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await expect.poll(() => page.evaluate<string | undefined>('document.activeElement?.textContent')).toBe('Edit Orders (HTML receiver)');
  });

  it('sends a test and inspects its attempt: the headers the receiver got, and its answer as text', async () => {
    const hook = card('Orders (HTML receiver)');
    await hook.getByRole('button', { name: 'Send test to Orders (HTML receiver)' }).click();
    const notice = hook.locator('.notice-success', { hasText: 'Test delivery' });
    await notice.waitFor();
    const deliveryId = (await notice.locator('code').textContent()) as string;
    expect(deliveryId).toMatch(/^dlv_/);
    // The log opened by itself, the new delivery marked.
    const test = row(deliveryId);
    await test.locator('.pill', { hasText: 'succeeded' }).waitFor();
    expect(await test.getAttribute('class')).toContain('just-queued');
    expect(await test.locator('.pill-note').allTextContents()).toEqual(['test']);
    expect(await test.locator('code').first().textContent()).toBe('webhook.test');
    // A test is no event of the log: no link to one.
    expect(await test.getByRole('link').count()).toBe(0);

    const received = receiver.on('/html');
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0]!.rawBody)).toMatchObject({ id: 0, type: 'webhook.test', data: { webhookId: orders.id } });

    const inspect = test.locator('button[aria-expanded]');
    expect(await inspect.textContent()).toBe('Inspect attempts of the test delivery');
    expect(await inspect.getAttribute('aria-expanded')).toBe('false');
    await inspect.click();
    expect(await inspect.textContent()).toBe('Hide attempts of the test delivery');
    expect(await inspect.getAttribute('aria-expanded')).toBe('true');
    const attempts = page.getByRole('region', { name: 'Attempts of the test delivery' });
    await attempts.waitFor();
    expect(await inspect.getAttribute('aria-controls')).toBe(await attempts.getAttribute('id'));
    const attempt = attempts.locator('[data-attempt="1"]');
    expect(await attempt.getByRole('heading', { level: 4 }).textContent()).toBe('Attempt 1 HTTP 200');

    // Every header as the receiver got it, signatures included.
    await attempt.locator('summary', { hasText: 'Request headers' }).click();
    const names = await attempt.locator('.headers dt').allTextContents();
    const values = await attempt.locator('.headers dd').allTextContents();
    const shown = Object.fromEntries(names.map((name, index) => [name, values[index]]));
    for (const name of [
      'content-type',
      'user-agent',
      'x-service-signature',
      'x-service-event-id',
      'x-service-delivery-id',
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
    ]) {
      expect(shown[name], name).toBeDefined();
    }
    for (const [name, value] of Object.entries(shown)) expect(value, name).toBe(received[0]!.headers[name]);
    expect(shown['x-service-event-id']).toBe('0');
    expect(shown['webhook-id']).toBe(deliveryId);

    // The answer, markup and all, as text: nothing of it runs or renders.
    const excerpt = attempt.locator('.response-excerpt pre');
    expect(await excerpt.textContent()).toBe(HTML_ANSWER);
    expect(await attempt.locator('.response-excerpt pre *').count()).toBe(0);
    expect(await page.evaluate<boolean>('window.receiverScriptRan === true')).toBe(false);
    await expectAccessible('a test delivery opened in the inspector');
    // The refresh keeps it open.
    await page.waitForTimeout(2500);
    expect(await attempts.isVisible()).toBe(true);
    await inspect.click();
    await attempts.waitFor({ state: 'detached' });
  });

  it('filters by status, retries one failed delivery and recovers the others', async () => {
    await api('PATCH', `/api/v1/webhooks/${orders.id}`, { url: receiver.url('/fail') });
    const failedIds = [await publish('custom.order.paid'), await publish('custom.order.refunded'), await publish('custom.order.paid')];
    await publish('custom.other'); // not subscribed to
    await until(async () => (await deliveries(orders.id)).filter((delivery) => delivery.status === 'failed').length === 3, 'three failed deliveries');
    await api('PATCH', `/api/v1/webhooks/${orders.id}`, { url: receiver.url('/ok') });

    const log = card('Orders (HTML receiver)').locator('.delivery-log');
    await log.getByLabel('Status').selectOption('failed');
    await log.getByText('Deliveries that are failed, newest first').waitFor();
    await until(async () => (await rows(log).count()) === 3, 'the three failed deliveries listed');
    const eventIds = await rows(log).locator('th a').allTextContents();
    expect(eventIds).toEqual(failedIds.map((id) => `#${id}`).reverse());

    // A failed one's five attempts, each with the receiver's "no".
    const first = (await deliveries(orders.id)).find((delivery) => delivery.eventId === failedIds[0])!;
    await row(first.id)
      .getByRole('button', { name: `Inspect attempts of the delivery of event ${failedIds[0]}` })
      .click();
    const opened = page.getByRole('region', { name: `Attempts of the delivery of event ${failedIds[0]}` });
    await opened.waitFor();
    expect(await opened.locator('[data-attempt]').count()).toBe(5);
    expect(await opened.locator('h4').first().textContent()).toBe('Attempt 1 HTTP 500');
    expect(await opened.locator('[data-attempt="5"] .facts').textContent()).toContain('receiver answered 500');
    expect(await opened.locator('.response-excerpt pre').allTextContents()).toEqual(['no', 'no', 'no', 'no', 'no']);

    const atOk = receiver.on('/ok').length;
    await row(first.id)
      .getByRole('button', { name: `Retry delivery of event ${failedIds[0]}` })
      .click();
    await until(() => receiver.on('/ok').length === atOk + 1, 'the retried delivery');
    expect(receiver.on('/ok').at(-1)!.headers['x-service-delivery-id']).toBe(first.id);
    // Succeeded now, it leaves the failed ones.
    await until(async () => (await rows(log).count()) === 2, 'two failed left');

    const recover = log.getByRole('form', { name: 'Recover failed deliveries' });
    const since = recover.getByLabel('Failed since');
    // 24 hours ago to begin with (the browser runs in UTC).
    expect(Math.abs(Date.parse(`${await since.inputValue()}Z`) - (Date.now() - 86_400_000))).toBeLessThan(120_000);
    await since.fill(new Date(Date.now() - 3_600_000).toISOString().slice(0, 16));
    await recover.getByRole('button', { name: 'Recover failed deliveries' }).click();
    await recover.getByText('Queued 2 new deliveries.').waitFor();
    await until(() => receiver.on('/ok').length === atOk + 3, 'the two recovered deliveries');
    const recovered = receiver.on('/ok').slice(-2);
    expect(recovered.map((entry) => entry.headers['x-service-replay'])).toEqual(['true', 'true']);
    expect(recovered.map((entry) => Number(entry.headers['x-service-event-id'])).sort()).toEqual([failedIds[1], failedIds[2]].sort());

    // The recovered ones are new deliveries, marked as replays.
    await log.getByLabel('Status').selectOption('succeeded');
    await until(async () => (await rows(log).locator('.pill-note', { hasText: 'replay' }).count()) === 2, 'two replays among the succeeded');
    await expectAccessible('the failed deliveries filtered, recovered');
    await log.getByLabel('Status').selectOption('');
  });

  it('replays from a cursor, and from an expired one shows the oldest that works', async () => {
    const log = card('Orders (HTML receiver)').locator('.delivery-log');
    const replay = log.getByRole('form', { name: 'Replay from a cursor' });
    const events = (await api('GET', '/api/v1/events?after=0&limit=100')).data as Array<{ id: number; type: string }>;
    const paid = events.filter((event) => event.type === 'custom.order.paid').map((event) => event.id);
    expect(paid).toHaveLength(2);
    const atOk = receiver.on('/ok').length;
    await replay.getByLabel('After event #').fill(String(paid[0]! - 1));
    // Up to the event it does not subscribe to, which is left out.
    await replay.getByLabel('Until event # (optional)').fill(String(paid[1]! + 1));
    await replay.getByRole('button', { name: 'Replay events' }).click();
    // The two paid ones and the refund between them.
    await replay.getByText('Queued 3 new deliveries; skipped 0.').waitFor();
    await until(() => receiver.on('/ok').length === atOk + 3, 'the replayed deliveries');
    expect(
      receiver
        .on('/ok')
        .slice(-3)
        .every((entry) => entry.headers['x-service-replay'] === 'true'),
    ).toBe(true);

    // Push the first events out of the retained log.
    for (let index = 0; index < RETENTION; index++) await publish('custom.noise');
    await replay.getByLabel('After event #').fill('0');
    await replay.getByLabel('Until event # (optional)').fill('');
    await replay.getByRole('button', { name: 'Replay events' }).click();
    const refusal = replay.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('Nothing was replayed');
    expect(await refusal.textContent()).toContain('HTTP 410');
    const oldest = Number(/oldest cursor that still works is (\d+)/.exec((await refusal.textContent()) ?? '')?.[1]);
    const tail = await api('GET', `/api/v1/events?after=${oldest}&limit=1`);
    expect(tail.oldestCursor).toBe(oldest);
    const after = replay.getByLabel('After event #');
    expect(await after.getAttribute('aria-invalid')).toBe('true');
    expect(await description(after)).toContain(`must be at least ${oldest}`);
    await expectAccessible('a replay from an expired cursor');
    await refusal.getByRole('button', { name: `Use cursor ${oldest}` }).click();
    expect(await after.inputValue()).toBe(String(oldest));
    await replay.getByRole('button', { name: 'Replay events' }).click();
    // Only noise after it: nothing this webhook subscribes to.
    await replay.getByText('No retained event in that range matches this webhook: nothing was queued.').waitFor();
  });

  it('pages through the deliveries with Load more', async () => {
    const total = async () => (await deliveries(orders.id)).length;
    while ((await total()) < 45) await publish('custom.order.paid');
    await until(async () => (await deliveries(orders.id)).every((delivery) => delivery.status !== 'pending'), 'every delivery done');
    const count = await total();
    const log = card('Orders (HTML receiver)').locator('.delivery-log');
    // The log was open while they arrived: a refresh keeps older rows below the newest page (more
    // than 20 shown). A filter change reads afresh, one page.
    await log.getByLabel('Status').selectOption('succeeded');
    await log.getByLabel('Status').selectOption('');
    const newest = (await deliveries(orders.id)).slice(0, 20).map((delivery) => delivery.id);
    // The open log reads the newest again every 2 s: a page of them, as many as it shows.
    await until(async () => JSON.stringify(await shownIds(log)) === JSON.stringify(newest), 'the newest 20 shown');
    await log.getByRole('button', { name: 'Load more deliveries' }).click();
    await until(async () => (await rows(log).count()) === 40, 'two pages');
    await log.getByRole('button', { name: 'Load more deliveries' }).click();
    await until(async () => (await rows(log).count()) === count, 'every delivery');
    await log.getByText(`All ${count} shown.`).waitFor();
    expect(await log.getByRole('button', { name: 'Load more deliveries' }).isDisabled()).toBe(true);
    const all = await shownIds(log);
    expect(all).toEqual((await deliveries(orders.id)).map((delivery) => delivery.id));
    // A new one comes in on top while they stay shown.
    await publish('custom.order.refunded');
    await until(async () => (await rows(log).count()) === count + 1, 'the new delivery on top');
  });

  it('shows why a 410 from the receiver stopped a webhook, and resumes it: test, resume, recover', async () => {
    const gone = await api('POST', '/api/v1/webhooks', { name: 'Shop', url: receiver.url('/status/410'), events: ['custom.shop'] });
    const eventId = await publish('custom.shop');
    await until(async () => (await api('GET', `/api/v1/webhooks/${gone.id}`)).disabledReason === 'receiver_gone', 'the webhook stopped');
    await goTo(page, 'Events');
    await goTo(page, 'Webhooks');
    const shop = card('Shop');
    await shop.locator('.pill', { hasText: 'stopped by the service: receiver gone' }).waitFor();
    const notice = shop.locator('.notice-warning');
    expect(await notice.textContent()).toContain('Stopped: the receiver answered 410 Gone.');
    expect(await notice.locator('ol li').count()).toBe(4);
    await expectAccessible('a webhook stopped by its receiver');

    // The steps: a new URL, a test that the receiver now answers, resume, recover.
    await shop.getByRole('button', { name: 'Edit Shop' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit Shop' });
    await dialog.getByLabel('Receiver URL').fill(receiver.url('/ok?hook=shop'));
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    await dialog.waitFor({ state: 'detached' });
    await shop.locator('.facts code', { hasText: '/ok?hook=shop' }).waitFor();
    await shop.getByRole('button', { name: 'Send test to Shop' }).click();
    await shop.getByText('(sent even while the webhook is not active)').waitFor();
    const testId = (await shop.locator('.notice-success code').textContent()) as string;
    await row(testId).locator('.pill', { hasText: 'succeeded' }).waitFor();
    await shop.getByRole('button', { name: 'Resume Shop' }).click();
    await shop.locator('.pill', { hasText: 'active' }).waitFor();
    expect(await shop.locator('.notice-warning').count()).toBe(0);
    const recover = shop.getByRole('form', { name: 'Recover failed deliveries' });
    await recover.getByRole('button', { name: 'Recover failed deliveries' }).click();
    await recover.getByText('Queued 1 new delivery.').waitFor();
    await until(() => receiver.on('/ok?hook=shop').some((entry) => entry.headers['x-service-event-id'] === String(eventId)), 'the recovered delivery');
  });

  it('disables, with the reason, what a key without events:read may not do, and lets it test and recover', async () => {
    const owner = await app().account();
    const { key: managerKey } = await issueKey(app().context, { accountId: owner.accountId, name: 'Webhooks only', scopes: ['webhooks:manage'] });
    const created = await app().request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key: owner.key,
      body: { name: 'Audit trail', url: receiver.url('/ok?hook=audit'), events: ['custom.*'] },
    });
    expect(created.status, created.body).toBe(201);
    const viewer = await openConsole(browser, base, { width: 1440 });
    try {
      await connect(viewer.page, managerKey);
      await goTo(viewer.page, 'Webhooks');
      await loaded(viewer.page);
      const hook = card('Audit trail', viewer.page);
      for (const name of ['Edit Audit trail', 'Rotate secret of Audit trail']) expect(await hook.getByRole('button', { name }).isDisabled(), name).toBe(true);
      expect(await viewer.page.getByRole('button', { name: 'New webhook' }).isDisabled()).toBe(true);
      await hook.getByRole('button', { name: 'Send test to Audit trail' }).click();
      const testId = (await hook.locator('.notice-success code').textContent()) as string;
      await row(testId, viewer.page).locator('.pill', { hasText: 'succeeded' }).waitFor();
      const replay = hook.getByRole('form', { name: 'Replay from a cursor' });
      expect(await replay.getByRole('button', { name: 'Replay events' }).isDisabled()).toBe(true);
      expect(await replay.getByText('Needs the events:read scope, which the connected key does not have.').isVisible()).toBe(true);
      const recover = hook.getByRole('form', { name: 'Recover failed deliveries' });
      await recover.getByRole('button', { name: 'Recover failed deliveries' }).click();
      await recover.getByText('No delivery ended failed since then: nothing was queued.').waitFor();
      await expectAccessible('webhooks with a key without events:read', viewer.page);
      expect(viewer.problems).toEqual([]);
    } finally {
      await viewer.context.close();
    }
  });

  it('is whole and accessible at 375 px with a delivery opened and the resend tools', async () => {
    const narrow = await openConsole(browser, base, { width: 375, height: 812 });
    try {
      await connect(narrow.page, key);
      await goTo(narrow.page, 'Webhooks');
      await loaded(narrow.page);
      const hook = card('Orders (HTML receiver)', narrow.page);
      await hook.getByRole('button', { name: 'Show deliveries of Orders (HTML receiver)' }).click();
      await hook.getByLabel('Status').selectOption('failed');
      await hook.getByText('Deliveries that are failed, newest first').waitFor();
      const failed = hook.locator('li[data-delivery-id]').first();
      await failed.waitFor();
      await failed.getByRole('button', { name: /^Inspect attempts of/ }).click();
      const opened = hook.getByRole('region', { name: /^Attempts of/ });
      await opened.waitFor();
      await opened.locator('summary', { hasText: 'Request headers' }).first().click();
      expect(await sidewaysProblems(narrow.page)).toEqual([]);
      await expectAccessible('the inspector at 375 px', narrow.page);
      expect(narrow.problems).toEqual([]);
    } finally {
      await narrow.context.close();
    }
    expect(wide.problems).toEqual([]);
  });
});
