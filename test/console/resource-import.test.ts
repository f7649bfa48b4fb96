// Importing resources from a file on the console's resources page, in Chromium against the real
// server: the preview of what the rows become, batches of up to 1,000 through POST /api/v1/batch
// with a progress bar, a refused row named by its line with what was imported before it, a lost
// answer sent again with the same Idempotency-Key, and the dialog accessible at 1440 and 375 px.
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { describeInBrowser, launchBrowser } from '../support/browser.js';
import { goTo, loaded, openConsole, seriousAccessibilityViolations, sidewaysProblems, type ConsolePage } from './console-browser.js';

interface StoredResource {
  id: string;
  name: string;
  type: string;
  state: unknown;
  tags: string[];
  attributes: Record<string, unknown>;
  version: number;
}

describeInBrowser('importing resources from a file in the console', () => {
  const app = useTestApp();
  let base: string;
  let browser: Browser;
  let wide: ConsolePage;
  let page: Page;
  let key: string;

  beforeAll(async () => {
    base = await app().listen();
    browser = await launchBrowser();
    key = (await app().account()).key;
    wide = await openConsole(browser, base, { width: 1440 });
    page = wide.page;
    await connect(page);
  });

  afterAll(async () => {
    await browser?.close();
  });

  async function connect(target: Page): Promise<void> {
    await target.getByRole('textbox', { name: 'API key' }).fill(key);
    await target.getByRole('button', { name: 'Connect key' }).click();
    await target.getByRole('heading', { name: 'Connected key' }).waitFor();
    await goTo(target, 'Resources');
    await loaded(target);
  }

  const api = (method: string, url: string, body?: unknown) => app().request({ method, url, key, body });

  async function everyResource(): Promise<StoredResource[]> {
    const found: StoredResource[] = [];
    for (let offset = 0; ; ) {
      const page = (await api('GET', `/api/v1/resources?limit=500&offset=${offset}`)).json as { data: StoredResource[]; hasMore: boolean };
      found.push(...page.data);
      if (!page.hasMore) return found;
      offset += page.data.length;
    }
  }

  async function expectAccessible(where: string, target: Page = page): Promise<void> {
    const violations = await seriousAccessibilityViolations(target);
    expect(violations, `${where}: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }

  /** Opens the dialog by keyboard, as well as a mouse does. */
  async function openImport(target: Page = page) {
    await target.getByRole('button', { name: 'Import', exact: true }).focus();
    await target.keyboard.press('Enter');
    const dialog = target.getByRole('dialog', { name: 'Import resources' });
    await dialog.waitFor();
    return dialog;
  }

  function chooseFile(target: Page, name: string, text: string, mimeType = 'text/csv') {
    return target
      .getByRole('dialog', { name: 'Import resources' })
      .getByLabel('CSV or NDJSON file')
      .setInputFiles({ name, mimeType, buffer: Buffer.from(text) });
  }

  it('previews a CSV file (creates, an update by id, an unreadable line), imports it and lists what it made', async () => {
    const door = (await api('POST', '/api/v1/resources', { name: 'Door', type: 'binary_sensor', state: true })).json as StoredResource;
    const csv = [
      'id,name,type,state,tags,attributes',
      ',Greenhouse temperature,sensor,21.5,greenhouse;north,"{""unit_of_measurement"":""°C""}"',
      ',Irrigation pump,switch,on,greenhouse,',
      `${door.id},Front door,binary_sensor,off,,`,
      ',Broken row,sensor,20,,{oops',
      ',Status message,text,All systems nominal,,',
    ].join('\r\n');

    // The dialog opens by keyboard and Escape closes it, giving focus back to the Import button.
    await openImport();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog', { name: 'Import resources' }).waitFor({ state: 'detached' });
    await expect.poll(() => page.evaluate<string>('document.activeElement.textContent')).toBe('Import');

    const dialog = await openImport();
    await chooseFile(page, 'greenhouse.csv', csv);
    await dialog.getByText('greenhouse.csv').waitFor();
    expect(await dialog.getByRole('status').first().textContent()).toBe('greenhouse.csv (CSV): 4 resources to import (3 new, 1 update), 1 unreadable.');
    // The preview: line, name, type, state, create or update.
    const preview = dialog.locator('table.import-preview tbody tr');
    const cells = async (line: number) => dialog.locator(`table.import-preview tr[data-line="${line}"]`).locator('th, td').allTextContents();
    expect(await preview.count()).toBe(4);
    expect(await cells(2)).toEqual(['2', 'Greenhouse temperature', 'sensor', '21.5', 'create']);
    expect(await cells(3)).toEqual(['3', 'Irrigation pump', 'switch', 'on', 'create']);
    expect(await cells(4)).toEqual(['4', 'Front door', 'kept', 'off', `update ${door.id}`]);
    expect(await cells(6)).toEqual(['6', 'Status message', 'text', 'All systems nominal', 'create']);
    // The unreadable line is named, and the import waits for a decision about it.
    const unreadable = dialog.locator('.import-unreadable');
    expect(await unreadable.locator('li').allTextContents()).toEqual([expect.stringMatching(/^Line 5: \S/)]);
    const importButton = dialog.getByRole('button', { name: 'Import 4 resources' });
    expect(await importButton.isDisabled()).toBe(true);
    await expectAccessible('the import preview');
    await dialog.getByLabel('Import the readable rows and skip the unreadable ones').check();
    await importButton.click();

    await dialog.getByText('Imported 4 resources').waitFor();
    expect(await dialog.locator('.notice-success').textContent()).toBe('Imported 4 resources: 3 created, 1 updated.');
    const bar = dialog.getByRole('progressbar');
    expect(await bar.getAttribute('aria-valuenow')).toBe('4');
    expect(await bar.getAttribute('aria-valuemax')).toBe('4');
    expect(await bar.getAttribute('aria-valuetext')).toBe('4 of 4 resources');
    await expectAccessible('the import done');
    await dialog.getByRole('button', { name: 'Close' }).click();

    // The list was read again and shows them; the service holds exactly what the file said.
    for (const name of ['Greenhouse temperature', 'Irrigation pump', 'Front door', 'Status message'])
      await page.locator('tr[data-resource-id]', { hasText: name }).waitFor();
    const stored = await everyResource();
    expect(stored.map(({ name, type, state, tags, attributes }) => ({ name, type, state, tags, attributes }))).toEqual([
      { name: 'Front door', type: 'binary_sensor', state: false, tags: [], attributes: {} },
      { name: 'Greenhouse temperature', type: 'sensor', state: 21.5, tags: ['greenhouse', 'north'], attributes: { unit_of_measurement: '°C' } },
      { name: 'Irrigation pump', type: 'switch', state: true, tags: ['greenhouse'], attributes: {} },
      { name: 'Status message', type: 'text', state: 'All systems nominal', tags: [], attributes: {} },
    ]);
    expect(stored.find((resource) => resource.id === door.id)?.version).toBe(2);
    expect(wide.problems).toEqual([]);
  });

  it('names the row the service refuses by its line, and says which lines the batches before it imported', async () => {
    const before = (await everyResource()).length;
    // 1,001 creates (lines 2-1002), then an update of a resource that does not exist (line 1003):
    // the first batch (lines 2-1001) is written, the second (lines 1002-1003) is refused whole.
    const lines = ['name,type,state'];
    for (let index = 1; index <= 1001; index++) lines.push(`Sensor ${index},sensor,${index}`);
    const csv = `id,${lines[0]}\n${lines
      .slice(1)
      .map((line) => `,${line}`)
      .join('\n')}\nres_missing,Ghost,sensor,0\n`;

    const keys: string[] = [];
    const recordKey = (request: Request) => {
      if (request.url().endsWith('/api/v1/batch')) keys.push(request.headers()['idempotency-key'] ?? '');
    };
    page.on('request', recordKey);
    const dialog = await openImport();
    await chooseFile(page, 'sensors.csv', csv);
    await dialog.getByRole('button', { name: 'Import 1,002 resources' }).click();
    const refusal = dialog.getByRole('alert');
    await refusal.waitFor();
    page.off('request', recordKey);
    // Two batches, each with a key of its own.
    expect(keys.length).toBe(2);
    expect(new Set(keys).size).toBe(2);
    const text = (await refusal.textContent()) ?? '';
    expect(text).toContain('Batch 2 of 2 was refused, and nothing of it was written');
    expect(await refusal.locator('.import-problems li').allTextContents()).toEqual([expect.stringMatching(/^Line 1,003( \(\w+\))?: \S/)]);
    expect(text).toContain('Already imported: 1,000 resources, lines 2–1,001 of the file (1,000 created, 0 updated). Not imported: lines 1,002–1,003.');
    expect(text).toMatch(/HTTP 404 · code \S+ · request id \S+/);
    expect(await dialog.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('1000');
    // Nothing of the refused batch was written: no "Sensor 1001", no "Ghost".
    const stored = await everyResource();
    expect(stored.length).toBe(before + 1000);
    expect(stored.some((resource) => resource.name === 'Sensor 1001' || resource.name === 'Ghost')).toBe(false);
    // A 404 is kept with the batch's key: sending it again would get the same answer, so it is not offered.
    expect(await dialog.getByRole('button', { name: /again/ }).count()).toBe(0);
    await expectAccessible('a refused batch');
    await dialog.getByRole('button', { name: 'Close' }).click();
    await page.locator('caption', { hasText: `of ${before + 1000}` }).waitFor();
  });

  it('stops between batches when asked, says what was imported, and goes on with the rest', async () => {
    const before = (await everyResource()).length;
    const rows = Array.from({ length: 1500 }, (_, index) => `{"name":"Reading ${index + 1}","type":"sensor","state":${index}}`);
    // The first batch is held until Stop has been pressed, so the stop falls while it is in flight.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let sent = 0;
    await page.route('**/api/v1/batch', async (route) => {
      sent++;
      if (sent === 1) await held;
      await route.continue();
    });
    try {
      const dialog = await openImport();
      await chooseFile(page, 'readings.ndjson', `${rows.join('\n')}\n`, 'application/x-ndjson');
      await dialog.getByRole('button', { name: 'Import 1,500 resources' }).click();
      const stop = dialog.getByRole('button', { name: 'Stop after this batch' });
      await stop.click();
      await dialog.getByRole('button', { name: 'Stopping after this batch…' }).waitFor();
      release();
      const stopped = dialog.locator('.notice-warning');
      await stopped.waitFor();
      expect(await stopped.textContent()).toBe(
        'Stopped between batches.Already imported: 1,000 resources, lines 1–1,000 of the file (1,000 created, 0 updated). Not imported: lines 1,001–1,500.',
      );
      expect(sent).toBe(1);
      expect((await everyResource()).length).toBe(before + 1000);
      await dialog.getByRole('button', { name: 'Go on importing' }).click();
      await dialog.getByText('Imported 1,500 resources').waitFor();
      expect(await dialog.locator('.notice-success').textContent()).toBe('Imported 1,500 resources: 1,500 created, 0 updated.');
      expect(await dialog.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('1500');
      await dialog.getByRole('button', { name: 'Close' }).click();
    } finally {
      await page.unroute('**/api/v1/batch');
    }
    expect((await everyResource()).length).toBe(before + 1500);
  });

  it('sends a batch whose answer was lost again with the same Idempotency-Key, and it is written once', async () => {
    const before = (await everyResource()).length;
    const keys: string[] = [];
    let lost = false;
    await page.route('**/api/v1/batch', async (route) => {
      keys.push(route.request().headers()['idempotency-key'] ?? '');
      if (lost) return route.continue();
      // The service receives and commits the batch; its answer never reaches the page.
      lost = true;
      await route.fetch();
      await route.abort('connectionreset');
    });
    try {
      const dialog = await openImport();
      await chooseFile(
        page,
        'retry.ndjson',
        '{"name":"Once only","type":"text","state":"a"}\n{"name":"Once too","type":"sensor","state":1}\n',
        'application/x-ndjson',
      );
      await dialog.getByRole('button', { name: 'Import 2 resources' }).click();
      await dialog.getByText('Imported 2 resources').waitFor();
      expect(keys.length).toBe(2);
      expect(keys[1]).toBe(keys[0]);
      expect(keys[0]).toMatch(/^[\x21-\x7e]{1,255}$/);
      await dialog.getByRole('button', { name: 'Close' }).click();
    } finally {
      await page.unroute('**/api/v1/batch');
    }
    const stored = await everyResource();
    expect(stored.length).toBe(before + 2);
    expect(stored.filter((resource) => resource.name === 'Once only').length).toBe(1);
    // The lost answer is the one failure Chromium logged.
    expect(wide.problems.filter((problem) => !problem.includes('net::ERR_CONNECTION_RESET'))).toEqual([]);
  });

  it('offers a batch that never got an answer again, with the same key, once the automatic tries are spent', async () => {
    const before = (await everyResource()).length;
    const keys: string[] = [];
    let reachable = false;
    await page.route('**/api/v1/batch', async (route) => {
      keys.push(route.request().headers()['idempotency-key'] ?? '');
      if (reachable) return route.continue();
      await route.abort('connectionrefused');
    });
    try {
      const dialog = await openImport();
      await chooseFile(page, 'offline.csv', 'name,type,state\nOffline first,switch,off\n');
      await dialog.getByRole('button', { name: 'Import 1 resource' }).click();
      await dialog.getByText('no answer: sending the batch again with the same Idempotency-Key').waitFor();
      const unanswered = dialog.getByRole('alert');
      await unanswered.waitFor({ timeout: 45_000 });
      expect(await unanswered.textContent()).toContain('Batch 1 of 1 got no answer');
      expect(keys.length).toBeGreaterThan(3);
      reachable = true;
      await dialog.getByRole('button', { name: 'Send batch 1 again' }).click();
      await dialog.getByText('Imported 1 resource').waitFor();
      expect(new Set(keys).size).toBe(1);
    } finally {
      await page.unroute('**/api/v1/batch');
    }
    await page.getByRole('button', { name: 'Close' }).click();
    expect((await everyResource()).length).toBe(before + 1);
    expect(wide.problems.filter((problem) => !problem.includes('net::ERR_'))).toEqual([]);
  });

  it('at 375 px: a file dropped on the dialog, its preview as cards, nothing sideways, nothing for axe', async () => {
    const narrow = await openConsole(browser, base, { width: 375, height: 812 });
    try {
      await connect(narrow.page);
      const dialog = await openImport(narrow.page);
      // A drop, as from a file manager.
      const transfer = await narrow.page.evaluateHandle(
        `(() => { const transfer = new DataTransfer(); transfer.items.add(new File(['{"name":"Dropped","type":"switch","state":false}\\n'], 'dropped.ndjson')); return transfer; })()`,
      );
      await dialog.locator('.drop-zone').dispatchEvent('drop', { dataTransfer: transfer });
      await dialog.getByText('dropped.ndjson').waitFor();
      const card = dialog.locator('li.row-card[data-line="1"]');
      await card.waitFor();
      expect(await card.locator('.row-card-name').textContent()).toBe('Dropped');
      expect(await sidewaysProblems(narrow.page)).toEqual([]);
      await expectAccessible('the import preview at 375 px', narrow.page);
      await dialog.getByRole('button', { name: 'Import 1 resource' }).click();
      await dialog.getByText('Imported 1 resource').waitFor();
      expect(await sidewaysProblems(narrow.page)).toEqual([]);
      await expectAccessible('the import done at 375 px', narrow.page);
      await dialog.getByRole('button', { name: 'Close' }).click();
      expect(narrow.problems).toEqual([]);
    } finally {
      await narrow.context.close();
    }
  });
});
