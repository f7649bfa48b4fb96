// The developer console end to end in headless Chromium against the real server: a new developer
// signs up, connects the key the operator issued, and uses every page; axe-core checks each page
// at 1440 and 375 px, and no page may break its Content-Security-Policy or throw.
import { verifyWebhook } from '@devdata/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { issueKey } from '../../src/operator.js';
import { useTestApp } from '../support/app.js';
import { describeInBrowser, launchBrowser } from '../support/browser.js';
import { until } from '../support/wait.js';
import { Receiver } from '../webhooks/support.js';
import {
  goTo,
  inViewWidth,
  labelsUnderTheirBoxes,
  loaded,
  openConsole,
  seriousAccessibilityViolations,
  sidewaysProblems,
  type ConsolePage,
} from './console-browser.js';

/** Every page, with its main value and main action in the first row or card (the list is not empty by then). */
const PAGES: Array<{ link: string; heading: string; main: string; action?: string }> = [
  { link: 'Account', heading: 'Account', main: '[data-scope] .pill' },
  { link: 'Resources', heading: 'Resources', main: '[data-resource-id] .state', action: '[data-resource-id] button:has-text("Edit")' },
  { link: 'Events', heading: 'Events', main: '[data-event-id] code' },
  { link: 'Keys', heading: 'API keys', main: '[data-key-id]', action: '[data-key-id] button:has-text("Revoke")' },
  { link: 'Webhooks', heading: 'Webhooks', main: '[data-webhook-id] .pill', action: '[data-webhook-id] button:has-text("Delete")' },
  { link: 'Apps', heading: 'Apps', main: '[data-app-id] h2', action: '[data-app-id] button:has-text("Delete")' },
  { link: 'Schedules', heading: 'Schedules', main: '[data-schedule-id] .pill', action: '[data-schedule-id] button:has-text("Run now")' },
  { link: 'Usage', heading: 'Usage', main: '[data-day] .requests' },
  { link: 'Audit log', heading: 'Audit log', main: '[data-audit-id] code' },
];

describeInBrowser('the developer console in Chromium', () => {
  const app = useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_TIMEOUT_MS: '2000' } });
  let base: string;
  let browser: Browser;
  let receiver: Receiver;
  let wide: ConsolePage;
  let page: Page;
  let accountId: string;
  let key: string;
  let resourceId: string;

  beforeAll(async () => {
    base = await app().listen();
    receiver = await new Receiver().start();
    browser = await launchBrowser();
    wide = await openConsole(browser, base, { width: 1440 });
    page = wide.page;
  });

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
  });

  /** The API as another client sees it: what the console shows must follow. */
  const api = (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => app().request({ method, url, key, body, headers });

  async function expectAccessible(where: string, target: Page = page): Promise<void> {
    const violations = await seriousAccessibilityViolations(target);
    expect(violations, `${where}: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }

  it('signs a new developer up, with the session cookie kept over http://localhost, and names the command to ask the operator for', async () => {
    await page.getByRole('heading', { level: 1, name: 'Welcome to devdata' }).waitFor();
    await expectAccessible('signup');
    await page.getByLabel('Name').fill('Ada Lovelace');
    await page.getByLabel('E-mail').fill(`ada-${Date.now()}@example.com`);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();

    const cookies = await wide.context.cookies();
    const session = cookies.find((cookie) => cookie.name === '__Host-service_developer_session');
    expect(session).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Strict', path: '/' });
    // The session survives a reload: the page reads it back from the cookie.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();
    const command = (await page.locator('.command code').textContent()) ?? '';
    expect(command).toMatch(/^npx devdata keys issue --account acc_\S+ --name "Console" --json$/);
    accountId = /--account (\S+)/.exec(command)?.[1] as string;
    await expectAccessible('account without a key');
  });

  it('connects the key the operator issued, keeps it for the tab only and shows its scopes', async () => {
    // What `npx devdata keys issue --account … --name Console` runs.
    const issued = await issueKey(app().context, { accountId, name: 'Console' });
    key = issued.key;
    await page.getByRole('textbox', { name: 'API key' }).fill('ddk_not_a_real_key');
    await page.getByRole('button', { name: 'Connect key' }).click();
    const refused = page.getByRole('alert');
    await refused.waitFor();
    expect(await refused.textContent()).toMatch(/request id \S+/);

    await page.getByRole('textbox', { name: 'API key' }).fill(key);
    await page.getByRole('button', { name: 'Connect key' }).click();
    await page.getByRole('heading', { name: 'Connected key' }).waitFor();
    expect(await page.getByRole('cell', { name: 'granted', exact: true }).count()).toBe(10);
    // Evaluated in the page (a string: the test's own types know no DOM).
    const storage = await page.evaluate<{ session: Record<string, string>; local: Record<string, string>; url: string }>(
      '({ session: { ...sessionStorage }, local: { ...localStorage }, url: location.href })',
    );
    expect(Object.values(storage.session)).toEqual([key]);
    expect(storage.local).toEqual({});
    expect(storage.url).not.toContain(key);
    await expectAccessible('account with a key');
  });

  it('creates a resource, and a change made elsewhere appears live, within seconds', async () => {
    await goTo(page, 'Resources');
    await page.getByText('Live', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'New resource' }).click();
    const form = page.getByRole('region', { name: 'New resource' });
    await form.getByLabel('Name').fill('Greenhouse temperature');
    await form.getByLabel('Type').selectOption('sensor');
    await form.getByLabel('State value').fill('21.5');
    await form.getByLabel('Attributes (JSON object)').fill('{"unit_of_measurement":"°C"}');
    await form.getByLabel('Tags').fill('greenhouse, north');
    await form.getByRole('button', { name: 'Create resource' }).click();
    const row = page.locator('tr', { hasText: 'Greenhouse temperature' });
    await row.waitFor();
    resourceId = (await row.getAttribute('data-resource-id')) as string;
    expect(resourceId).toMatch(/^res_/);
    await expectAccessible('resources');

    const changed = await api('PATCH', `/api/v1/resources/${resourceId}`, { state: 23.25 });
    expect(changed.status).toBe(200);
    const sent = Date.now();
    // The page does not poll: without the live stream the change would never show, so a bound that
    // a busy machine meets still tells live from not at all.
    await row.locator('td.state', { hasText: '23.25' }).waitFor({ timeout: 30_000 });
    expect(Date.now() - sent).toBeLessThan(5_000);

    // Filters: a type that does not match hides it, the tag that does shows it.
    const filters = page.getByRole('form', { name: 'Filter resources' });
    await filters.getByLabel('Type').selectOption('switch');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No resources match these filters.').waitFor();
    await filters.getByLabel('Type').selectOption({ label: 'Any type' });
    await filters.getByLabel('Tags').fill('north');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await row.waitFor();
  });

  it('shows a 412 with both versions after a change made elsewhere, and reloads the stored one', async () => {
    await page.getByRole('button', { name: 'Edit Greenhouse temperature' }).click();
    await page.getByLabel('State value').fill('19');
    const elsewhere = await api('PATCH', `/api/v1/resources/${resourceId}`, { state: 25, tags: ['greenhouse'] });
    expect(elsewhere.status).toBe(200);
    await page.getByRole('button', { name: 'Save changes' }).click();
    const conflict = page.locator('.conflict');
    await conflict.getByRole('heading', { name: 'Changed elsewhere: version 3 is stored now' }).waitFor();
    expect(await conflict.textContent()).toContain('precondition_failed');
    expect(await conflict.locator('tr', { hasText: 'State' }).locator('td').allTextContents()).toEqual(['19', '25']);
    await expectAccessible('conflict');
    await conflict.getByRole('button', { name: 'Reload the stored version' }).click();
    expect(await page.getByLabel('State value').inputValue()).toBe('25');
    await page.getByLabel('State value').fill('20');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved: version 4.').waitFor();
    const stored = await api('GET', `/api/v1/resources/${resourceId}`);
    expect(stored.json).toMatchObject({ state: 20, version: 4, tags: ['greenhouse'] });
    await page.getByRole('button', { name: 'Close' }).click();
  });

  it('tails events live with pause, filters them and publishes a custom event', async () => {
    await goTo(page, 'Events');
    await page.getByText('Live', { exact: true }).waitFor();
    // History: the resource's events so far.
    await page.locator('tr[data-event-id]', { hasText: 'resource.created' }).waitFor();
    await page.getByRole('combobox', { name: 'Type' }).fill('custom.deploy.finished');
    await page.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByText('Live', { exact: true }).waitFor();
    await page.locator('#publish-type').fill('deploy.finished');
    await page.getByLabel('Data (JSON object)').fill('{"version":"1.4.0"}');
    await page.getByRole('button', { name: 'Publish event' }).click();
    await page.getByText(/Published event #\d+/).waitFor();
    await page.locator('tr[data-event-id]', { hasText: 'custom.deploy.finished' }).waitFor();
    expect(await page.locator('tr[data-event-id]').count()).toBe(1);

    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByText('Paused', { exact: true }).waitFor();
    const published = await api('POST', '/api/v1/events', { type: 'custom.deploy.finished', data: { version: '1.4.1' } });
    expect(published.status).toBe(201);
    await page.waitForTimeout(300);
    expect(await page.locator('tr[data-event-id]').count()).toBe(1);
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator(`tr[data-event-id="${published.json.id}"]`).waitFor();
    await expectAccessible('events');
  });

  it('creates a key with scopes the connected key holds, shows its secret once, and revokes it', async () => {
    await goTo(page, 'Keys', 'API keys');
    await page.getByRole('button', { name: 'New key' }).click();
    await page.getByLabel('Name').fill('ci');
    // A key with no scope is refused before anything is sent.
    const keysBefore = (await api('GET', '/api/v1/keys')).json.data.length;
    await page.getByRole('button', { name: 'Create key' }).click();
    const scopes = page.getByRole('group', { name: 'Scopes' });
    expect(await scopes.getAttribute('aria-describedby')).toBe('key-scope-problem');
    await page.getByText('Choose at least one scope').waitFor();
    expect((await api('GET', '/api/v1/keys')).json.data.length).toBe(keysBefore);
    await page.getByRole('checkbox', { name: /resources:read/ }).check();
    expect(await page.getByText('Choose at least one scope').count()).toBe(0);
    expect(await labelsUnderTheirBoxes(page)).toEqual([]);
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByRole('textbox', { name: 'Your new API key' }).inputValue();
    expect(secret).toMatch(/^ddk_/);
    await page.getByRole('button', { name: 'Copy', exact: true }).waitFor();
    await expectAccessible('key secret');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    const row = page.locator('tr[data-key-id]').filter({ hasText: /^ci/ });
    await row.waitFor();
    expect((await api('GET', '/api/v1/auth/me', undefined, { authorization: `Bearer ${secret}` })).status).toBe(200);

    // Renamed: only the name changes, and the key works on.
    await page.getByRole('button', { name: 'Rename ci' }).click();
    // A name of spaces: the API refuses it, and the field says so.
    await page.getByLabel('New name').fill('   ');
    await page.getByRole('button', { name: 'Save name' }).click();
    await page.locator('#rename-key-name[aria-invalid="true"]').waitFor();
    expect(await page.locator('#rename-key-name-error').count()).toBe(1);
    await page.getByLabel('New name').fill('ci runner');
    await page.getByRole('button', { name: 'Save name' }).click();
    await row.locator('th', { hasText: 'ci runner' }).waitFor();
    const renamed = (await api('GET', '/api/v1/keys')).json.data.find((listed: { name: string }) => listed.name === 'ci runner');
    expect(renamed).toMatchObject({ scopes: ['resources:read'], status: 'active' });
    expect((await api('GET', '/api/v1/auth/me', undefined, { authorization: `Bearer ${secret}` })).status).toBe(200);

    // The key in use: the warning says so (and nothing is revoked on cancel).
    await page.getByRole('button', { name: 'Revoke Console' }).click();
    await page.getByText('This is the key this console is using.').waitFor();
    await expectAccessible('revoke dialog');
    await page.getByRole('button', { name: 'Cancel' }).click();

    await page.getByRole('button', { name: 'Revoke ci runner' }).click();
    expect(await page.getByText('This is the key this console is using.').count()).toBe(0);
    await page.getByRole('button', { name: 'Revoke key' }).click();
    // Still listed, as revoked, with nothing left to do to it.
    await row.locator('.key-status', { hasText: 'revoked' }).waitFor();
    expect(await row.getByRole('button').count()).toBe(0);
    expect((await app().request({ url: '/api/v1/auth/me', key: secret })).status).toBe(401);
    await expectAccessible('keys with a revoked one');
  });

  it('creates a webhook to a local receiver and sees the delivery in its log', async () => {
    await goTo(page, 'Webhooks');
    await page.getByRole('button', { name: 'New webhook' }).click();
    await page.getByLabel('Name').fill('Local receiver');
    await page.getByLabel('Receiver URL').fill(receiver.url('/console-hook'));
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const secret = await page.getByRole('textbox', { name: "The webhook's signing secret" }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByRole('heading', { name: 'Local receiver' }).waitFor();

    const created = await api('POST', '/api/v1/resources', { name: 'Vent', type: 'switch', state: false });
    expect(created.status).toBe(201);
    await until(() => receiver.on('/console-hook').length > 0, 'the delivery');
    const delivery = receiver.on('/console-hook')[0]!;
    const event = await verifyWebhook(delivery.rawBody, delivery.headers['x-service-signature'] as string, secret);
    expect(event.type).toBe('resource.created');

    await page.getByRole('button', { name: 'Show deliveries of Local receiver' }).click();
    const logged = page.locator('.delivery-log tr', { hasText: 'resource.created' });
    await logged.locator('.pill', { hasText: 'succeeded' }).waitFor();
    expect(await logged.locator('td.response').textContent()).toBe('200');
    await page.getByRole('button', { name: `Retry delivery of event ${event.id}` }).click();
    await until(() => receiver.on('/console-hook').length > 1, 'the retried delivery');

    await page.getByRole('button', { name: 'Pause Local receiver' }).click();
    await page.locator('.pill', { hasText: 'paused' }).waitFor();
    await page.getByRole('button', { name: 'Resume Local receiver' }).click();
    await page.locator('.pill', { hasText: 'active' }).waitFor();
    await page.getByRole('button', { name: 'Rotate secret of Local receiver' }).click();
    await page.getByRole('button', { name: 'Rotate secret', exact: true }).click();
    expect(await page.getByRole('textbox', { name: 'The new signing secret' }).inputValue()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await expectAccessible('webhooks');

    // The delivery's event, linked: the events page opens on it, with its deliveries.
    await logged
      .getByRole('link', { name: `#${event.id}` })
      .first()
      .click();
    await page.getByRole('heading', { level: 1, name: 'Events' }).waitFor();
    const shown = page.locator(`[data-shown-event-id="${event.id}"]`);
    await shown.locator('.event-deliveries li', { hasText: 'Local receiver' }).first().locator('.pill', { hasText: 'succeeded' }).waitFor();
    await expectAccessible('an event opened by a link');
    // In the tail too: a row opens to its deliveries, and links the resource it is about.
    const row = page.locator(`tr[data-event-id="${event.id}"]`);
    await row.locator('summary').click();
    await row.getByRole('button', { name: `Webhook deliveries of event ${event.id}` }).click();
    await row.locator('.event-deliveries li', { hasText: 'Local receiver' }).first().waitFor();
    await row.getByRole('link', { name: 'Vent' }).click();
    await page.getByRole('heading', { level: 1, name: 'Resources' }).waitFor();
    await page.locator(`[data-shown-resource-id="${created.json.id}"] .state`, { hasText: 'off' }).waitFor();
    // And from a delivery back to its webhook, with the delivery log open.
    await page.goto(`/console/webhooks?show=${(await api('GET', '/api/v1/webhooks')).json.data[0].id}`);
    await page.locator('.card.shown .delivery-log').waitFor();
  });

  it('deletes a resource after confirmation; Escape cancels the dialog and focus returns to its button', async () => {
    await goTo(page, 'Resources');
    const vent = page.locator('tr', { hasText: 'Vent' });
    await vent.waitFor();
    await page.getByRole('button', { name: 'Delete Vent' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete Vent?' });
    await dialog.waitFor();
    // The dialog is modal and keyboard-first: focus starts on Cancel, Escape closes it.
    expect(await page.evaluate<string>('document.activeElement.textContent')).toBe('Cancel');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    // Focus goes back to the button that opened it, not to the page's body (as the dialog's
    // cleanup runs: it may come a moment after the dialog left the page).
    await expect.poll(() => page.evaluate<string>('document.activeElement.textContent')).toBe('Delete Vent');
    await page.getByRole('button', { name: 'Delete Vent' }).click();
    await dialog.getByRole('button', { name: 'Delete resource' }).click();
    await vent.waitFor({ state: 'detached' });
    expect((await api('GET', '/api/v1/resources')).json.data.map((resource: { name: string }) => resource.name)).toEqual(['Greenhouse temperature']);
  });

  it('registers a confidential app, shows its secret once and lists it', async () => {
    await goTo(page, 'Apps');
    await page.getByRole('button', { name: 'Register an app' }).click();
    await page.getByLabel('Name').fill('Greenhouse Monitor');
    await page.getByLabel('Redirect URIs').fill('http://127.0.0.1:8123/callback');
    await page.getByRole('checkbox', { name: /resources:read/ }).check();
    expect(await page.getByRole('checkbox', { name: /keys:manage/ }).count()).toBe(0);
    await page.getByRole('button', { name: 'Register app' }).click();
    expect(await page.getByRole('textbox', { name: "The app's client secret" }).inputValue()).toMatch(/^ddcs_/);
    await expectAccessible('app secret');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByRole('heading', { name: 'Greenhouse Monitor' }).waitFor();
    const listed = await api('GET', '/api/v1/apps');
    expect(listed.json.data).toEqual([
      expect.objectContaining({
        name: 'Greenhouse Monitor',
        type: 'confidential',
        redirectUris: ['http://127.0.0.1:8123/callback'],
        scopes: ['resources:read'],
      }),
    ]);

    // Edited: its name, redirect URIs and scopes; only what changed is sent.
    await page.getByRole('button', { name: 'Edit Greenhouse Monitor' }).click();
    const form = page.getByRole('form', { name: 'Edit Greenhouse Monitor' });
    await form.getByLabel('Name').fill('Greenhouse Dashboard');
    await form.getByLabel('Redirect URIs').fill('http://127.0.0.1:8123/callback\nhttp://127.0.0.1:8124/callback');
    await form.getByRole('checkbox', { name: /events:read/ }).check();
    expect(await labelsUnderTheirBoxes(page)).toEqual([]);
    await form.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: 'Greenhouse Dashboard' }).waitFor();
    expect((await api('GET', '/api/v1/apps')).json.data[0]).toMatchObject({
      name: 'Greenhouse Dashboard',
      redirectUris: ['http://127.0.0.1:8123/callback', 'http://127.0.0.1:8124/callback'],
      scopes: ['resources:read', 'events:read'],
    });
    const audit = await api('GET', '/api/v1/audit?type=app.updated');
    expect(audit.json.data.at(-1).data.changed).toEqual(['name', 'redirectUris', 'scopes']);
  });

  it('creates a cron schedule read out in words, runs it now and shows the outcome', async () => {
    await goTo(page, 'Schedules');
    await page.getByRole('button', { name: 'New schedule' }).click();
    await page.getByLabel('Name').fill('Morning warm-up');
    await page.getByLabel('Cron expression').fill('30 6 * * 1-5');
    await page.getByText('At 06:30, Monday through Friday (UTC)').waitFor();
    expect(await page.locator('.next-runs li').count()).toBe(5);
    await page.getByLabel('Resource', { exact: true }).selectOption({ label: 'Greenhouse temperature (sensor)' });
    await page.getByLabel('State value').fill('18');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.getByRole('heading', { name: 'Morning warm-up' }).waitFor();
    await page.getByRole('button', { name: 'Run now Morning warm-up' }).click();
    await page.getByText(/Ran at .*: succeeded/).waitFor();
    await page.locator('table tr', { hasText: 'Morning warm-up' }).locator('.pill', { hasText: 'succeeded' }).waitFor();
    expect((await api('GET', `/api/v1/resources/${resourceId}`)).json.state).toBe(18);
    // The card: its last run with the outcome, and the action's resource by its name, linked.
    const card = page.locator('[data-schedule-id]', { hasText: 'Morning warm-up' });
    await card.locator('.last-run .pill', { hasText: 'succeeded' }).waitFor();
    expect(await card.locator('.last-run time').count()).toBe(1);
    expect(await card.getByRole('link', { name: 'Greenhouse temperature' }).getAttribute('href')).toBe(`/console/resources?show=${resourceId}`);
    await expectAccessible('schedules');
  });

  it('keeps schedule cards current: a one-off that ran in the background reads done with its run, without a reload', async () => {
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    const created = await api('POST', '/api/v1/schedules', { name: 'Lights test', at: inAnHour, action: { type: 'set_state', resourceId, state: 19 } });
    expect(created.status, created.body).toBe(201);
    await goTo(page, 'Resources');
    await goTo(page, 'Schedules');
    const card = page.locator(`[data-schedule-id="${created.json.id}"]`);
    await card.locator('.pill', { hasText: 'enabled' }).waitFor();
    expect(await card.locator('.last-run').textContent()).toBe('never');
    // Moved to a moment from now elsewhere: the page is not told, only the run tells it.
    const soon = await api('PATCH', `/api/v1/schedules/${created.json.id}`, { at: new Date(Date.now() + 1000).toISOString() });
    expect(soon.status, soon.body).toBe(200);
    // The server's scheduler runs it (it looks every second); the page hears of the run on the event stream.
    await card.locator('.pill', { hasText: 'done' }).waitFor({ timeout: 30_000 });
    await card.locator('.last-run .pill', { hasText: 'succeeded' }).waitFor();
    expect(await card.locator('.next-run').textContent()).toBe('none: it ran once');
    expect(await card.getByRole('button', { name: /^Enable/ }).count()).toBe(0);
    expect(await card.getByRole('button', { name: /^Pause/ }).count()).toBe(0);
    expect((await api('GET', `/api/v1/schedules/${created.json.id}`)).json).toMatchObject({ enabled: false, nextRunAt: null });
    await expectAccessible('a one-off that ran');
  });

  it('edits a schedule, reporting a bad time zone under the time zone field', async () => {
    const card = page.locator('[data-schedule-id]', { hasText: 'Morning warm-up' });
    const id = (await card.getAttribute('data-schedule-id')) as string;
    await card.getByRole('button', { name: 'Edit Morning warm-up' }).click();
    const form = page.getByRole('region', { name: 'Edit Morning warm-up' });
    expect(await form.getByLabel('Cron expression').inputValue()).toBe('30 6 * * 1-5');
    await form.getByLabel('Time zone').fill('Mars/Olympus');
    const zone = form.getByLabel('Time zone');
    expect(await zone.getAttribute('aria-invalid')).toBe('true');
    const problem = form.locator('#schedule-timezone-problem');
    expect(await problem.textContent()).toContain('"Mars/Olympus" is not an IANA time zone');
    expect(await zone.getAttribute('aria-describedby')).toContain('schedule-timezone-problem');
    // The expression itself is fine: nothing is said against it.
    expect(await form.locator('#schedule-cron-reading .reason').count()).toBe(0);
    await form.getByLabel('Time zone').fill('Europe/Berlin');
    expect(await problem.count()).toBe(0);
    await form.getByLabel('Name').fill('Morning warm-up, weekends');
    await form.getByLabel('Cron expression').fill('0 8 * * 6,0');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: 'Morning warm-up, weekends' }).waitFor();
    expect((await api('GET', `/api/v1/schedules/${id}`)).json).toMatchObject({
      name: 'Morning warm-up, weekends',
      cron: '0 8 * * 6,0',
      timezone: 'Europe/Berlin',
      action: { type: 'set_state', resourceId, state: 18 },
    });
    const audit = await api('GET', '/api/v1/audit?type=schedule.updated');
    expect(audit.json.data.at(-1).data.changed.sort()).toEqual(['cron', 'name', 'timezone']);
  });

  it('shows usage per day as a chart with its table, and the audit log with a type filter', async () => {
    await goTo(page, 'Usage');
    await page.locator('.chart canvas').waitFor();
    const today = new Date().toISOString().slice(0, 10);
    const requests = Number(await page.locator('tr', { hasText: today }).locator('td').first().textContent());
    expect(requests).toBeGreaterThan(10);
    await expectAccessible('usage');

    await goTo(page, 'Audit log');
    await page.locator('[data-audit-id] code', { hasText: 'webhook.created' }).waitFor();
    // Newest first, as the API pages it with order=desc.
    const newest = (await api('GET', '/api/v1/audit?order=desc&limit=50')).json.data.map((record: { id: string }) => record.id);
    const rows = await page.locator('[data-audit-id]').all();
    expect(await Promise.all(rows.map((row) => row.getAttribute('data-audit-id')))).toEqual(newest);
    await page.getByLabel('Type').selectOption('key.*');
    await page.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByText('Audit records of type key.*, newest first').waitFor();
    const revoked = page.locator('[data-audit-id]').first();
    await revoked.locator('code', { hasText: 'key.revoked' }).waitFor();
    // Names, not ids: the revoked key by its (new) name and the key that acted, each linked to the keys page.
    const target = revoked.locator('.target a');
    expect(await target.textContent()).toBe('ci runner');
    expect(await target.getAttribute('href')).toMatch(/^\/console\/keys\?show=key_/);
    expect(await revoked.locator('.actor').textContent()).toBe('key Console');
    await page.locator('[data-audit-id] code', { hasText: 'key.updated' }).waitFor();
    // Read until the table holds the filtered rows: a CI run once read it between two renders
    // (none), another while the unfiltered rows, key.revoked among them, were still shown.
    await vi.waitFor(async () => {
      const shown = await page.locator('[data-audit-id] code').allTextContents();
      expect(shown.length).toBeGreaterThan(0);
      expect(shown.every((type) => type.startsWith('key.'))).toBe(true);
    });
    await expectAccessible('audit');
  });

  it('shows a schedule the service stopped when its key was revoked, and Enable resumes it on the connected key', async () => {
    const other = await api('POST', '/api/v1/keys', { name: 'Short-lived', scopes: ['schedules:manage', 'resources:write'] });
    expect(other.status).toBe(201);
    const created = await app().request({
      method: 'POST',
      url: '/api/v1/schedules',
      key: other.json.key,
      body: { name: 'Night mode', cron: '0 22 * * *', action: { type: 'set_state', resourceId, state: 12 } },
    });
    expect(created.status, created.body).toBe(201);
    expect((await api('DELETE', `/api/v1/keys/${other.json.id}`)).status).toBe(204);

    // Away and back: the schedules page reads the list when it opens.
    await goTo(page, 'Resources');
    await goTo(page, 'Schedules');
    const card = page.locator(`[data-schedule-id="${created.json.id}"]`);
    await card.locator('.pill', { hasText: 'stopped by the service: credential revoked' }).waitFor();
    await card.getByText('Enabling it again makes the connected key the credential it runs on.').waitFor();
    await expectAccessible('a schedule stopped by the service');
    await card.getByRole('button', { name: 'Enable Night mode' }).click();
    await card.locator('.pill', { hasText: 'enabled' }).waitFor();
    expect((await api('GET', `/api/v1/schedules/${created.json.id}`)).json).toMatchObject({ enabled: true, disabledReason: null });
  });

  it('shows every page at 1440 and 375 px without sideways scrolling, each main value and action in view, and no serious accessibility problem', async () => {
    for (const width of [1440, 375]) {
      const viewer = await openConsole(browser, base, { width, height: 812 });
      try {
        // The same browser profile's cookie; the key is per tab, so this tab connects it too.
        await viewer.context.addCookies(await wide.context.cookies());
        await viewer.page.reload();
        await viewer.page.getByRole('textbox', { name: 'API key' }).fill(key);
        await viewer.page.getByRole('button', { name: 'Connect key' }).click();
        await viewer.page.getByRole('heading', { name: 'Connected key' }).waitFor();
        for (const { link, heading, main, action } of PAGES) {
          const where = `${heading} at ${width} px`;
          await goTo(viewer.page, link, heading);
          await loaded(viewer.page);
          await viewer.page.locator(main).first().waitFor();
          expect(await inViewWidth(viewer.page, main), `${where}: the main value ${main}`).toBe(true);
          if (action) expect(await inViewWidth(viewer.page, action), `${where}: the action ${action}`).toBe(true);
          expect(await sidewaysProblems(viewer.page), where).toEqual([]);
          await expectAccessible(where, viewer.page);
        }
        // The scope picker: each label beside its box, however long.
        await goTo(viewer.page, 'Keys', 'API keys');
        await viewer.page.getByRole('button', { name: 'New key' }).click();
        await viewer.page.getByRole('group', { name: 'Scopes' }).waitFor();
        expect(await labelsUnderTheirBoxes(viewer.page), `the scope picker at ${width} px`).toEqual([]);
        expect(await sidewaysProblems(viewer.page), `the new key form at ${width} px`).toEqual([]);
        // Cards where the content is narrow, tables where it is wide.
        expect((await viewer.page.locator('.row-card').count()) > 0).toBe(width === 375);
        expect(viewer.problems).toEqual([]);
      } finally {
        await viewer.context.close();
      }
    }
  });

  it('disables, with the reason, what a narrower key does not allow', async () => {
    const narrow = await issueKey(app().context, { accountId, name: 'Read only', scopes: ['resources:read', 'events:read'] });
    const reader = await openConsole(browser, base, { width: 1440 });
    try {
      await reader.context.addCookies(await wide.context.cookies());
      await reader.page.reload();
      await reader.page.getByRole('textbox', { name: 'API key' }).fill(narrow.key);
      await reader.page.getByRole('button', { name: 'Connect key' }).click();
      await reader.page.getByRole('heading', { name: 'Connected key' }).waitFor();
      await goTo(reader.page, 'Resources');
      const create = reader.page.getByRole('button', { name: 'New resource' });
      expect(await create.isDisabled()).toBe(true);
      expect(await reader.page.getByText('Needs the resources:write scope, which the connected key does not have.').first().isVisible()).toBe(true);
      await goTo(reader.page, 'Keys', 'API keys');
      await reader.page.getByText('Managing keys is not available.').waitFor();
      await expectAccessible('narrow key', reader.page);
    } finally {
      await reader.context.close();
    }
  });

  it('keeps the Secure session cookie over plain http on http://127.0.0.1 too (a potentially trustworthy origin)', async () => {
    const loopback = await openConsole(browser, base, { width: 1440, address: base });
    try {
      expect(new URL(loopback.page.url()).hostname).toBe('127.0.0.1');
      await loopback.page.getByLabel('Name').fill('Loopback developer');
      await loopback.page.getByLabel('E-mail').fill(`loopback-${Date.now()}@example.com`);
      await loopback.page.getByRole('button', { name: 'Sign up' }).click();
      await loopback.page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();
      await loopback.page.reload();
      await loopback.page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();
      expect((await loopback.context.cookies()).map((cookie) => cookie.name)).toEqual(['__Host-service_developer_session']);
    } finally {
      await loopback.context.close();
    }
  });

  it('logs out: the session ends and the key is forgotten', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Welcome to devdata' }).waitFor();
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
    expect((await wide.context.cookies()).filter((cookie) => cookie.name === '__Host-service_developer_session')).toEqual([]);
    expect(wide.problems).toEqual([]);
  });
});
