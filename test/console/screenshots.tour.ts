// The pictures of docs/console.md: the console page by page, at 1440 and 375 px wide, over an
// account filled through the API the way a developer would fill it (greenhouse sensors, a webhook
// to a local receiver, an app, schedules). Run with `npm run screenshots`.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { issueKey } from '../../src/operator.js';
import { useTestApp } from '../support/app.js';
import { launchBrowser } from '../support/browser.js';
import { until } from '../support/wait.js';
import { Receiver } from '../webhooks/support.js';
import { goTo, loaded, openConsole } from './console-browser.js';

const OUTPUT = join(process.cwd(), 'docs', 'console');

const app = useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
let base: string;
let browser: Browser;
let receiver: Receiver;

beforeAll(async () => {
  base = await app().listen();
  receiver = await new Receiver().start();
  browser = await launchBrowser();
  mkdirSync(OUTPUT, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
});

/** The page, whole; a dialog as the screen shows it (the page behind it would be cut off at the screen's edge). */
async function shoot(page: Page, name: string, width: number, { dialog = false } = {}): Promise<void> {
  // Nothing still loading, and the row highlight of a live change faded.
  await loaded(page);
  await page.waitForTimeout(2200);
  await page.screenshot({ path: join(OUTPUT, `${name}-${width}.png`), fullPage: !dialog });
}

/** A day of temperatures every 2 minutes before `endMs`: warm in the afternoon, cool at night, a little noise. */
function dayOfReadings(endMs: number): Array<{ at: string; state: number }> {
  return Array.from({ length: 720 }, (_, index) => {
    const atMs = endMs - (720 - index) * 120_000;
    const hour = new Date(atMs).getUTCHours() + new Date(atMs).getUTCMinutes() / 60;
    // A fixed pseudo-random number in [-0.8, 0.8) per reading: the same picture on every run.
    const hash = Math.sin(index * 12.9898 + 78.233) * 43758.5453;
    const noise = (hash - Math.floor(hash) - 0.5) * 1.6;
    return { at: new Date(atMs).toISOString(), state: Math.round((19 + 4 * Math.sin(((hour - 9) / 24) * 2 * Math.PI) + noise) * 100) / 100 };
  });
}

/** What a developer would have after a first afternoon with the service. */
async function fillAccount(key: string): Promise<void> {
  const api = async (method: string, url: string, body?: unknown) => {
    const response = await app().request({ method, url, key, body });
    expect(response.status, `${method} ${url}: ${response.body}`).toBeLessThan(300);
    return response.json;
  };
  const temperature = await api('POST', '/api/v1/resources', {
    name: 'Greenhouse temperature',
    type: 'sensor',
    state: 21.5,
    attributes: { unit_of_measurement: '°C' },
    tags: ['greenhouse', 'north'],
  });
  await api('POST', `/api/v1/resources/${temperature.id}/history`, { points: dayOfReadings(Date.parse(temperature.updatedAt)) });
  await api('POST', '/api/v1/resources', {
    name: 'Greenhouse humidity',
    type: 'sensor',
    state: 64,
    attributes: { unit_of_measurement: '%' },
    tags: ['greenhouse'],
  });
  const pump = await api('POST', '/api/v1/resources', { name: 'Irrigation pump', type: 'switch', state: false, tags: ['greenhouse', 'pump'] });
  await api('POST', '/api/v1/resources', { name: 'Door open', type: 'binary_sensor', state: false, tags: ['greenhouse', 'security'] });
  await api('POST', '/api/v1/resources', { name: 'Status message', type: 'text', state: 'All systems nominal' });
  await api('PATCH', `/api/v1/resources/${temperature.id}`, { state: 22.75 });
  await api('PATCH', `/api/v1/resources/${pump.id}`, { state: true });
  await api('POST', '/api/v1/events', { type: 'custom.deploy.finished', data: { version: '1.4.0', by: 'ci' } });
  await api('POST', '/api/v1/keys', { name: 'ci', scopes: ['resources:read', 'events:read'], expiresInDays: 30 });
  const laptop = await api('POST', '/api/v1/keys', { name: 'old laptop', scopes: ['resources:read'], expiresInDays: 30 });
  await api('DELETE', `/api/v1/keys/${laptop.id}`);
  await api('POST', '/api/v1/webhooks', {
    name: 'Local receiver',
    url: receiver.url('/hook'),
    events: ['resource.created', 'resource.updated', 'resource.deleted', 'custom.*'],
  });
  await api('PATCH', `/api/v1/resources/${temperature.id}`, { state: 23.1 });
  await until(() => receiver.on('/hook').length > 0, 'a webhook delivery');
  await api('POST', '/api/v1/apps', {
    name: 'Greenhouse Monitor',
    type: 'confidential',
    redirectUris: ['https://monitor.example.com/callback'],
    scopes: ['resources:read', 'events:read'],
  });
  const warmUp = await api('POST', '/api/v1/schedules', {
    name: 'Morning warm-up',
    cron: '30 6 * * 1-5',
    timezone: 'Europe/Berlin',
    action: { type: 'set_state', resourceId: pump.id, state: true },
  });
  await api('POST', '/api/v1/schedules', {
    name: 'Nightly report',
    cron: '0 22 * * *',
    action: { type: 'publish_event', eventType: 'custom.report.requested', data: { period: 'day' } },
  });
  await api('POST', `/api/v1/schedules/${warmUp.id}/run`);
  // A one-off that has run: the server's scheduler runs it within a second or two.
  const once = await api('POST', '/api/v1/schedules', {
    name: 'Water the seedlings once',
    at: new Date(Date.now() + 1000).toISOString(),
    action: { type: 'set_state', resourceId: pump.id, state: false },
  });
  await until(async () => (await api('GET', `/api/v1/schedules/${once.id}`)).lastRunAt !== null, 'the one-off run');
}

/** The file of the import dialog's picture: new sensors of a second greenhouse, an update by id, a line with a slip. */
function importFile(humidityId: string): string {
  return [
    'id,name,type,state,tags,attributes',
    ',East greenhouse temperature,sensor,19.5,greenhouse;east,"{""unit_of_measurement"":""°C""}"',
    ',East greenhouse humidity,sensor,58,greenhouse;east,"{""unit_of_measurement"":""%""}"',
    ',East vent,switch,off,greenhouse;east,',
    ',East door open,binary_sensor,maybe,greenhouse;east,',
    `${humidityId},Greenhouse humidity (west),sensor,61,greenhouse;west,`,
    ',East status,text,Seedlings planted,greenhouse;east,',
  ].join('\n');
}

it('takes every page at 1440 and 375 px into docs/console/', async () => {
  const wide = await openConsole(browser, base, { width: 1440 });
  const page = wide.page;
  await page.getByRole('heading', { level: 1, name: 'Welcome to devdata' }).waitFor();
  await shoot(page, '01-signup', 1440);
  await page.getByLabel('Name').fill('Ada Lovelace');
  await page.getByLabel('E-mail').fill(`ada-${Date.now()}@example.com`);
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();
  await shoot(page, '02-first-key', 1440);
  const command = (await page.locator('.command code').textContent()) ?? '';
  const accountId = /--account (\S+)/.exec(command)?.[1] as string;
  const { key } = await issueKey(app().context, { accountId, name: 'Console' });
  await fillAccount(key);

  const narrow = await openConsole(browser, base, { width: 375, height: 812 });
  await narrow.page.getByRole('heading', { level: 1, name: 'Welcome to devdata' }).waitFor();
  await shoot(narrow.page, '01-signup', 375);
  await narrow.context.addCookies(await wide.context.cookies());
  await narrow.page.reload();
  await narrow.page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();
  await shoot(narrow.page, '02-first-key', 375);

  for (const [width, target] of [
    [1440, page],
    [375, narrow.page],
  ] as const) {
    await target.getByRole('textbox', { name: 'API key' }).fill(key);
    await target.getByRole('button', { name: 'Connect key' }).click();
    await target.getByRole('heading', { name: 'Connected key' }).waitFor();
    await shoot(target, '03-account', width);

    await goTo(target, 'Resources');
    await target.getByText('Live', { exact: true }).waitFor();
    await shoot(target, '04-resources', width);
    await target.getByRole('button', { name: 'Import', exact: true }).click();
    const humidity = await target.locator('[data-resource-id]', { hasText: 'Greenhouse humidity' }).getAttribute('data-resource-id');
    await target
      .getByLabel('CSV or NDJSON file')
      .setInputFiles({ name: 'greenhouse-east.csv', mimeType: 'text/csv', buffer: Buffer.from(importFile(humidity as string)) });
    await target.locator('.import-preview').waitFor();
    await shoot(target, '04-resource-import', width, { dialog: true });
    await target.getByRole('dialog', { name: 'Import resources' }).getByRole('button', { name: 'Close' }).click();
    await target.getByRole('button', { name: 'Edit Greenhouse temperature' }).click();
    await target.getByLabel('State value').fill('19.5');
    const id = await target.locator('[data-resource-id]', { hasText: 'Greenhouse temperature' }).getAttribute('data-resource-id');
    await app().request({ method: 'PATCH', url: `/api/v1/resources/${id}`, key, body: { state: 24 } });
    await target.getByRole('button', { name: 'Save changes' }).click();
    await target.locator('.conflict').waitFor();
    await target.locator('.conflict').scrollIntoViewIfNeeded();
    await shoot(target, '05-resource-conflict', width);
    await target.getByRole('button', { name: 'Reload the stored version' }).click();
    await target.getByRole('button', { name: 'Close' }).click();

    await goTo(target, 'Events');
    await target.locator('[data-event-id]').first().waitFor();
    await shoot(target, '06-events', width);

    await goTo(target, 'Keys', 'API keys');
    await shoot(target, '07-keys', width);

    await goTo(target, 'Webhooks');
    await target.getByRole('button', { name: 'Show deliveries of Local receiver' }).click();
    await target.locator('.delivery-log .pill', { hasText: 'succeeded' }).first().waitFor();
    await shoot(target, '08-webhooks', width);
    // The inspector: a test delivery sent, opened to its attempt with the headers sent.
    await target.getByRole('button', { name: 'Send test to Local receiver' }).click();
    const testId = (await target.locator('.notice-success code').textContent()) as string;
    const test = target.locator(`[data-delivery-id="${testId}"]`);
    await test.locator('.pill', { hasText: 'succeeded' }).waitFor();
    await test.getByRole('button', { name: 'Inspect attempts of the test delivery' }).click();
    const attempts = target.getByRole('region', { name: 'Attempts of the test delivery' });
    await attempts.locator('summary', { hasText: 'Request headers' }).click();
    await attempts.scrollIntoViewIfNeeded();
    await shoot(target, '08-webhook-inspector', width);

    await goTo(target, 'Apps');
    await shoot(target, '09-apps', width);

    await goTo(target, 'Schedules');
    await target.getByRole('button', { name: 'New schedule' }).click();
    await target.getByLabel('Name').fill('Evening check');
    await target.getByLabel('Cron expression').fill('0 18 * * 1-5');
    await target.locator('.next-runs li').first().waitFor();
    await shoot(target, '10-schedules', width);

    await goTo(target, 'Usage');
    await target.getByLabel('Period').selectOption({ label: 'last 7 days' });
    await target.locator('.chart canvas').waitFor();
    await shoot(target, '11-usage', width);

    await goTo(target, 'Audit log');
    await target.locator('[data-audit-id]').first().waitFor();
    await shoot(target, '12-audit', width);

    await goTo(target, 'Resources');
    await target.getByRole('link', { name: 'History of Greenhouse temperature' }).click();
    await target.locator('.history-chart canvas').waitFor();
    await target.getByText('Live', { exact: true }).waitFor();
    await shoot(target, '14-resource-history', width);
  }

  const dark = await openConsole(browser, base, { width: 1440, colorScheme: 'dark' });
  await dark.context.addCookies(await wide.context.cookies());
  await dark.page.reload();
  await dark.page.getByRole('textbox', { name: 'API key' }).fill(key);
  await dark.page.getByRole('button', { name: 'Connect key' }).click();
  await dark.page.getByRole('heading', { name: 'Connected key' }).waitFor();
  await goTo(dark.page, 'Resources');
  await dark.page.getByText('Live', { exact: true }).waitFor();
  await shoot(dark.page, '13-resources-dark', 1440);

  expect([...wide.problems, ...narrow.problems, ...dark.problems]).toEqual([]);
});
