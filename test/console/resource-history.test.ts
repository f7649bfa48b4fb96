// A resource's history page in the console, in Chromium against the real server: a sensor's chart
// of backfilled readings over each range, a switch's time on, a text's states page by page, each
// growing live after a PATCH, the CSV of what is shown, accessible and whole at 1440 and 375 px.
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { describeInBrowser, launchBrowser } from '../support/browser.js';
import { goTo, loaded, openConsole, seriousAccessibilityViolations, sidewaysProblems, type ConsolePage } from './console-browser.js';

const MINUTE = 60_000;

interface Bucket {
  start: string;
  count: number;
  last: unknown;
  min?: number;
  max?: number;
  mean?: number;
}

describeInBrowser("a resource's history in the console", () => {
  const app = useTestApp();
  let base: string;
  let browser: Browser;
  let wide: ConsolePage;
  let page: Page;
  let key: string;
  const ids = { sensor: '', pump: '', text: '' };

  const api = async (method: string, url: string, body?: unknown) => {
    const response = await app().request({ method, url, key, body });
    expect(response.status, `${method} ${url}: ${response.body}`).toBeLessThan(300);
    return response.json;
  };

  /** A resource created now, with readings backfilled before it, `minutesAgo` before its creation. */
  async function withHistory(body: object, readings: Array<[minutesAgo: number, state: unknown]>): Promise<string> {
    const created = await api('POST', '/api/v1/resources', body);
    const createdAt = Date.parse(created.updatedAt);
    const points = readings.map(([minutesAgo, state]) => ({ at: new Date(createdAt - minutesAgo * MINUTE).toISOString(), state }));
    expect(await api('POST', `/api/v1/resources/${created.id}/history`, { points })).toEqual({ inserted: points.length, replaced: 0 });
    return created.id;
  }

  beforeAll(async () => {
    base = await app().listen();
    browser = await launchBrowser();
    key = (await app().account()).key;
    ids.sensor = await withHistory({ name: 'Greenhouse temperature', type: 'sensor', state: 21 }, [
      [50, 18.5],
      [40, 19],
      [30, 20.25],
      [20, 23.25],
      [10, 22],
    ]);
    ids.pump = await withHistory({ name: 'Irrigation pump', type: 'switch', state: false }, [
      [50, true],
      [30, false],
      [20, true],
      [10, false],
    ]);
    ids.text = await withHistory({ name: 'Status message', type: 'text', state: 'All good' }, [
      [1, 'Watering, then "drying"'],
      ...Array.from({ length: 59 }, (_, index) => [index + 2, `Reading ${index + 2}`] as [number, string]),
    ]);
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
  }

  async function expectAccessible(where: string, target: Page = page): Promise<void> {
    const violations = await seriousAccessibilityViolations(target);
    expect(violations, `${where}: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }

  /** Opens the history from the resources page's link, as a user does, and waits for it to be live. */
  async function openHistory(target: Page, name: string): Promise<void> {
    await goTo(target, 'Resources');
    await target.getByRole('link', { name: `History of ${name}` }).click();
    await target.getByRole('heading', { level: 1, name: 'Resource history' }).waitFor();
    await target.getByRole('heading', { level: 2, name }).waitFor();
    await target.getByText('Live', { exact: true }).waitFor();
    await loaded(target);
  }

  const summary = (target: Page = page) => target.locator('.history-summary');

  async function chooseRange(label: string, bucket: string, target: Page = page): Promise<void> {
    await target.getByLabel('Range', { exact: true }).selectOption({ label });
    await target.locator(`.history[data-bucket="${bucket}"]`).waitFor();
    await loaded(target);
  }

  async function downloadCsv(target: Page = page): Promise<{ name: string; text: string }> {
    const [download] = await Promise.all([target.waitForEvent('download'), target.getByRole('button', { name: 'Download CSV' }).click()]);
    return { name: download.suggestedFilename(), text: readFileSync(await download.path(), 'utf8') };
  }

  /** Marks the document, so that a reload (a new document) shows as the mark gone. */
  const markDocument = (target: Page) => target.evaluate('window.historyTestMark = 1');
  const stillMarked = (target: Page) => target.evaluate<boolean>('window.historyTestMark === 1');

  it("draws a sensor's backfilled readings with their numbers, over each range", async () => {
    await openHistory(page, 'Greenhouse temperature');
    expect(new URL(page.url()).pathname).toBe('/console/resources/history');
    expect(new URL(page.url()).searchParams.get('show')).toBe(ids.sensor);
    // The last 24 hours in 5 minute buckets: each reading in a bucket of its own.
    await page.locator('.history[data-bucket="5m"]').waitFor();
    expect(await summary().textContent()).toBe('6 readings in 6 buckets of 5m: lowest 18.5, highest 23.25, latest 21.');
    expect(await page.locator('.history-chart canvas').count()).toBe(1);
    expect(await page.getByRole('img', { name: /Chart of Greenhouse temperature \(last 24 hours\)/ }).count()).toBe(1);
    await expectAccessible('sensor history');

    for (const [label, bucket] of [
      ['Last 7 days', '1h'],
      ['Last 30 days', '6h'],
      ['Last hour', '1m'],
    ] as const) {
      await chooseRange(label, bucket);
      expect(await summary().textContent(), label).toMatch(/^6 readings in \d buckets? of \w+: lowest 18\.5, highest 23\.25, latest 21\.$/);
    }
    // An hour's buckets hold two readings ten minutes apart.
    await chooseRange('Last 7 days', '1h');
    expect(await summary().textContent()).toMatch(/^6 readings in [12] buckets? of 1h/);
    await chooseRange('Last hour', '1m');
  });

  it('shows a custom range in the shortest bucket that keeps it under 500 buckets, and refuses an end before its start', async () => {
    const local = (ms: number) => new Date(ms).toISOString().slice(0, 16); // the browser runs in UTC
    const now = Date.now();
    await page.getByLabel('Range', { exact: true }).selectOption({ label: 'Custom…' });
    // It starts as the range shown, the last hour.
    const shownFrom = Date.parse(`${await page.getByLabel('From', { exact: true }).inputValue()}Z`);
    const shownTo = Date.parse(`${await page.getByLabel('To', { exact: true }).inputValue()}Z`);
    expect(shownTo - shownFrom).toBe(60 * MINUTE);
    expect(Math.abs(shownTo - now)).toBeLessThan(2 * MINUTE);
    await page.getByLabel('From', { exact: true }).fill(local(now - 3 * 24 * 60 * MINUTE));
    await page.getByLabel('To', { exact: true }).fill(local(now + 2 * MINUTE));
    await page.getByRole('button', { name: 'Show range' }).click();
    // Three days: 5m would make 864 buckets, 15m 288.
    await page.locator('.history[data-bucket="15m"]').waitFor();
    await loaded(page);
    expect(await summary().textContent()).toMatch(/^6 readings in \d buckets of 15m: lowest 18\.5, highest 23\.25, latest 21\.$/);

    await page.getByLabel('From', { exact: true }).fill(local(now - 2 * 60 * MINUTE));
    await page.getByRole('button', { name: 'Show range' }).click();
    await page.locator('.history[data-bucket="1m"]').waitFor();
    await loaded(page);
    expect(await summary().textContent()).toMatch(/^6 readings in 6 buckets of 1m/);

    await page.getByLabel('To', { exact: true }).fill(local(now - 3 * 60 * MINUTE));
    await page.getByRole('button', { name: 'Show range' }).click();
    await page.getByText('The start must be before the end.').waitFor();
    expect(await page.getByLabel('To', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    // What was shown stays.
    expect(await page.locator('.history[data-bucket="1m"]').count()).toBe(1);
    await expectAccessible('custom range refused');
    await chooseRange('Last hour', '1m');
  });

  it("grows live as the sensor's state changes, and downloads the buckets it shows", async () => {
    await markDocument(page);
    await api('PATCH', `/api/v1/resources/${ids.sensor}`, { state: 25.5 });
    await summary()
      .getByText(/^7 readings in \d buckets of 1m: lowest 18\.5, highest 25\.5, latest 25\.5\.$/)
      .waitFor();
    await page.locator('.facts .state', { hasText: '25.5' }).waitFor();
    // The same state sent again is a reading too, though its event does not name the state as changed.
    await api('PATCH', `/api/v1/resources/${ids.sensor}`, { state: 25.5 });
    await summary()
      .getByText(/^8 readings in \d buckets of 1m: lowest 18\.5, highest 25\.5, latest 25\.5\.$/)
      .waitFor();
    expect(await stillMarked(page)).toBe(true);

    const csv = await downloadCsv();
    expect(csv.name).toBe('Greenhouse-temperature-history-1m.csv');
    const lines = csv.text.split('\r\n');
    expect(lines.at(-1)).toBe('');
    expect(lines[0]).toBe('start,count,last,min,max,mean');
    const rows = lines.slice(1, -1);
    const first = rows[0]?.split(',')[0] as string;
    const last = rows.at(-1)?.split(',')[0] as string;
    // The same buckets as the API gives for the span the rows cover.
    const read = await api('GET', `/api/v1/resources/${ids.sensor}/history?bucket=1m&from=${first}&to=${new Date(Date.parse(last) + MINUTE).toISOString()}`);
    const expected = (read.data as Bucket[]).map((bucket) => [bucket.start, bucket.count, bucket.last, bucket.min, bucket.max, bucket.mean].join(','));
    expect(rows).toEqual(expected);
    expect(rows.reduce((sum, row) => sum + Number(row.split(',')[1]), 0)).toBe(8);
    // Its bucket may hold the creation's reading too.
    expect(rows.at(-1)).toMatch(/^[^,]+,[123],25\.5,[\d.]+,25\.5,[\d.]+$/);
  });

  it('shows how long a switch was on per bucket, its CSV, and a change live', async () => {
    await openHistory(page, 'Irrigation pump');
    await page.locator('.history[data-bucket="5m"]').waitFor();
    expect(await summary().textContent()).toMatch(/^On \d+(\.\d)? % of the time recorded, 5 states recorded in \d+ buckets of 5m; latest off\.$/);
    expect(await page.getByRole('img', { name: /Chart of Irrigation pump \(last 24 hours\): the share of each 5m bucket spent on/ }).count()).toBe(1);
    await expectAccessible('switch history');

    const csv = await downloadCsv();
    const lines = csv.text.split('\r\n').slice(0, -1);
    expect(lines[0]).toBe('start,count,last,trueSeconds');
    const cells = lines.slice(1).map((line) => line.split(','));
    // On from 50 to 30 and from 20 to 10 minutes before its creation: 30 minutes.
    expect(cells.reduce((sum, row) => sum + Number(row[3]), 0)).toBeCloseTo(1800, 3);
    expect(cells.reduce((sum, row) => sum + Number(row[1]), 0)).toBe(5);
    expect(cells.at(-1)?.[2]).toBe('false');

    await chooseRange('Last hour', '1m');
    await markDocument(page);
    await api('PATCH', `/api/v1/resources/${ids.pump}`, { state: true });
    await summary()
      .getByText(/6 states recorded in \d+ buckets of 1m; latest on\.$/)
      .waitFor();
    expect(await stillMarked(page)).toBe(true);
  });

  it("lists a text's states newest first, a page at a time, with a new state live and the page's CSV", async () => {
    await openHistory(page, 'Status message');
    const states = () => page.locator('.history-list [data-at] .state').allTextContents();
    await page.locator('.history-list [data-at]').first().waitFor();
    const newest = await states();
    expect(newest).toHaveLength(50);
    expect(newest.slice(0, 3)).toEqual(['All good', 'Watering, then "drying"', 'Reading 2']);
    await expectAccessible('text history');

    await page.getByRole('button', { name: 'Older states' }).click();
    await page.locator('.history-list [data-at] .state', { hasText: 'Reading 50' }).waitFor();
    expect(await states()).toEqual(Array.from({ length: 11 }, (_, index) => `Reading ${index + 50}`));
    expect(await page.getByRole('button', { name: 'Older states' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Newer states' }).click();
    await page.locator('.history-list [data-at] .state', { hasText: 'All good' }).waitFor();

    await markDocument(page);
    await api('PATCH', `/api/v1/resources/${ids.text}`, { state: 'Tank refilled' });
    await page.locator('.history-list [data-at]').first().locator('.state', { hasText: 'Tank refilled' }).waitFor();
    expect(await stillMarked(page)).toBe(true);

    const csv = await downloadCsv();
    expect(csv.name).toBe('Status-message-states.csv');
    const lines = csv.text.split('\r\n');
    expect(lines[0]).toBe('at,state');
    expect(lines).toHaveLength(1 + 50 + 1);
    expect(lines[1]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z,Tank refilled$/);
    expect(lines[3]).toMatch(/,"Watering, then ""drying"""$/);
  });

  it('is readable and accessible at 375 px: the chart within the screen, the states as cards', async () => {
    const narrow = await openConsole(browser, base, { width: 375, height: 812 });
    await connect(narrow.page);
    const target = narrow.page;
    for (const [name, check] of [
      ['Greenhouse temperature', '.history-chart canvas'],
      ['Irrigation pump', '.history-chart canvas'],
      ['Status message', '.history-list [data-at]'],
    ] as const) {
      await openHistory(target, name);
      await target.locator(check).first().waitFor();
      expect(await sidewaysProblems(target), name).toEqual([]);
      await expectAccessible(`${name} at 375 px`, target);
    }
    // The text's states: a card each, its state in view.
    expect(await target.locator('li.row-card[data-at]').count()).toBe(50);
    await openHistory(target, 'Greenhouse temperature');
    await chooseRange('Last hour', '1m', target);
    const box = await target.locator('.history-chart canvas').boundingBox();
    expect(box && box.x >= 0 && box.x + box.width <= 375).toBe(true);
    expect(await summary(target).textContent()).toMatch(/^8 readings/);
    expect(narrow.problems).toEqual([]);
    await narrow.context.close();
    expect(wide.problems).toEqual([]);
  });
});
