// The console shows the API's refusal beside the field it names (docs/decisions.md, "Console"):
// the control gets aria-invalid and the message under it as its description, in Chromium against
// the real server, with axe-core finding nothing serious on the form that shows it.
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { describeInBrowser, launchBrowser } from '../support/browser.js';
import { goTo, openConsole, seriousAccessibilityViolations } from './console-browser.js';

/** The texts of the elements the control names in aria-describedby, in order. */
async function description(control: Locator): Promise<string> {
  const ids = ((await control.getAttribute('aria-describedby')) ?? '').split(/\s+/).filter(Boolean);
  const page = control.page();
  const texts = await Promise.all(ids.map((id) => page.locator(`[id="${id}"]`).textContent()));
  return texts.join(' ');
}

describeInBrowser('the console marks the field an API error names', () => {
  const app = useTestApp();
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const base = await app().listen();
    browser = await launchBrowser();
    page = (await openConsole(browser, base, { width: 1440 })).page;
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('on sign-up: a name of spaces is refused by the API, and the name field says why', async () => {
    await page.getByRole('heading', { level: 1, name: 'Welcome to devdata' }).waitFor();
    const form = page.getByRole('region', { name: 'Sign up' });
    const name = form.getByLabel('Name');
    await name.fill('   ');
    await form.getByLabel('E-mail').fill('spaces@example.com');
    expect(await name.getAttribute('aria-invalid')).toBeNull();
    await form.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('alert').waitFor();
    expect(await name.getAttribute('aria-invalid')).toBe('true');
    expect(await description(name)).toContain('not only white space');
    // Only the field the error names is marked.
    expect(await form.getByLabel('E-mail').getAttribute('aria-invalid')).toBeNull();
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });

  it('on a new resource: a tag longer than 64 characters marks Tags, and the corrected form is sent', async () => {
    const { key } = await app().account();
    await page.getByRole('textbox', { name: 'API key' }).fill(key);
    await page.getByRole('button', { name: 'Connect key' }).click();
    await page.getByRole('heading', { name: 'Connected key' }).waitFor();
    await goTo(page, 'Resources');
    await page.getByRole('button', { name: 'New resource' }).click();
    const form = page.getByRole('region', { name: 'New resource' });
    await form.getByLabel('Name').fill('Greenhouse');
    await form.getByLabel('State value').fill('21');
    const tags = form.getByLabel('Tags');
    await tags.fill(`north, ${'t'.repeat(65)}`);
    await form.getByRole('button', { name: 'Create resource' }).click();
    await form.getByRole('alert').waitFor();
    expect(await tags.getAttribute('aria-invalid')).toBe('true');
    expect(await description(tags)).toContain('must be 1-64 characters long');
    expect(await form.getByLabel('Name').getAttribute('aria-invalid')).toBeNull();
    expect(await seriousAccessibilityViolations(page)).toEqual([]);

    await tags.fill('north');
    await form.getByRole('button', { name: 'Create resource' }).click();
    await page.locator('tr', { hasText: 'Greenhouse' }).first().waitFor();
    const listed = await app().request({ url: '/api/v1/resources', key });
    expect(listed.json.data.map((resource: { name: string; tags: string[] }) => [resource.name, resource.tags])).toEqual([['Greenhouse', ['north']]]);
  });

  it('on the events filter: a type the API refuses (`resource*`) marks the filter with the form it takes', async () => {
    await goTo(page, 'Events');
    const filter = page.getByRole('form', { name: 'Filter events' });
    const type = filter.getByLabel('Type');
    await type.fill('resource*');
    await filter.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByRole('alert').first().waitFor();
    expect(await type.getAttribute('aria-invalid')).toBe('true');
    expect(await description(type)).toContain('a prefix ending in `.*`');
    await type.fill('resource.*');
    await filter.getByRole('button', { name: 'Apply filter' }).click();
    await page.getByRole('alert').first().waitFor({ state: 'detached' });
    expect(await type.getAttribute('aria-invalid')).toBeNull();
  });

  it('on a new webhook: a receiver on localhost is refused, and its field says how to develop locally', async () => {
    await goTo(page, 'Webhooks');
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('region', { name: 'New webhook' });
    await form.getByLabel('Name').fill('Local receiver');
    const url = form.getByLabel('Receiver URL');
    await url.fill('http://localhost:3000/hooks');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await form.getByRole('alert').waitFor();
    expect(await url.getAttribute('aria-invalid')).toBe('true');
    // The hint it had stays part of its description, before the API's message.
    expect(await description(url)).toMatch(/^HTTPS on port 443 to a public address\. must use https; .*devdata-client listen --forward-to/);
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  });
});
