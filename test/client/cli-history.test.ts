// The built devdata-client CLI's resources history against the real server: every point of a range
// (all pages) or its buckets, as a table, CSV or the API's JSON; --since as a duration or an ISO
// time; a range, a bucket length or a resource it cannot read refused with the exit code a script
// can rely on. Errors are asserted by exit code and code, and by the CLI's own wording only.
import { join } from 'node:path';
import { DevdataClient, HISTORY_MAX_PAGE_POINTS, type HistoryPoint, type Resource } from '@devdata/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { killAll, ROOT, run } from '../support/processes.js';

const CLIENT_CLI = join(ROOT, 'client', 'bin', 'devdata-client.js');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const iso = (ms: number) => new Date(ms).toISOString();

afterAll(async () => {
  await killAll();
});

describe('devdata-client resources history', () => {
  const app = useTestApp();
  // A whole hour three to four hours ago: before the resources were created, within the raw history kept.
  const anchor = Math.floor((Date.now() - 3 * HOUR) / HOUR) * HOUR;
  const range = ['--since', iso(anchor), '--until', iso(anchor + HOUR)];
  const readings: HistoryPoint[] = Array.from({ length: 12 }, (_, index) => ({ at: iso(anchor + index * MINUTE), state: index }));
  let cli: (...args: string[]) => ReturnType<typeof run>;
  let devdata: DevdataClient;
  let sensor: Resource;
  let lamp: Resource;

  beforeAll(async () => {
    const base = await app().listen();
    const account = await app().account();
    devdata = new DevdataClient({ baseUrl: base, apiKey: account.key });
    const env = { ...process.env, DEVDATA_URL: base, DEVDATA_API_KEY: account.key };
    cli = (...args) => run(process.execPath, [CLIENT_CLI, ...args], { env });
    sensor = await devdata.createResource({ body: { name: 'Hall', type: 'sensor', state: 20 } });
    await devdata.backfillHistory(sensor.id, readings);
    lamp = await devdata.createResource({ body: { name: 'Lamp', type: 'switch', state: false } });
    await devdata.backfillHistory(lamp.id, [
      { at: iso(anchor), state: true },
      { at: iso(anchor + 2 * MINUTE), state: false },
      { at: iso(anchor + 5 * MINUTE), state: true },
    ]);
  });

  /** The output of a command that succeeded. */
  async function succeeded(...args: string[]): Promise<string> {
    const result = await cli(...args);
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    return result.stdout;
  }

  it('prints every point of the range as a table, as CSV or as JSON', async () => {
    const table = (await succeeded('resources', 'history', sensor.id, ...range)).trimEnd().split('\n');
    expect(table[0]).toMatch(/^TIME {2,}STATE$/);
    expect(table.slice(1)).toEqual(readings.map((point) => `${point.at}  ${point.state}`));

    const csv = await succeeded('resources', 'history', sensor.id, ...range, '--csv');
    expect(csv).toBe(['at,state', ...readings.map((point) => `${point.at},${point.state}`)].map((line) => `${line}\r\n`).join(''));

    expect(JSON.parse(await succeeded('resources', 'history', sensor.id, ...range, '--json'))).toEqual({ data: readings });

    // --since as a duration ago: the readings and the state the sensor was created with.
    const day = JSON.parse(await succeeded('resources', 'history', sensor.id, '--since', '5h', '--json'));
    expect(day.data.map((point: HistoryPoint) => point.state)).toEqual([...readings.map((point) => point.state), 20]);
    // None in the range: said on standard error, nothing on standard output.
    const none = await cli('resources', 'history', sensor.id, '--since', '20h', '--until', '19h');
    expect([none.code, none.stdout, none.stderr.trim()]).toEqual([0, '', 'No points.']);
  });

  it('reads every page of a long range', async () => {
    const many = await devdata.createResource({ body: { name: 'Fast', type: 'sensor', state: 0 } });
    const points = Array.from({ length: HISTORY_MAX_PAGE_POINTS + 5 }, (_, index) => ({ at: iso(anchor + index * 100), state: index }));
    await devdata.backfillHistoryAll(many.id, points);
    expect(JSON.parse(await succeeded('resources', 'history', many.id, ...range, '--json')).data).toEqual(points);
    const csv = (await succeeded('resources', 'history', many.id, ...range, '--csv')).split('\r\n');
    expect(csv).toHaveLength(points.length + 2);
    expect(csv.at(-2)).toBe(`${points.at(-1)!.at},${points.at(-1)!.state}`);
  });

  it('prints buckets with --bucket: a sensor’s min, max and mean, a switch’s time on', async () => {
    const buckets = ['--bucket', '5m', '--since', iso(anchor), '--until', iso(anchor + 15 * MINUTE)];
    const table = (await succeeded('resources', 'history', sensor.id, ...buckets)).trimEnd().split('\n');
    expect(table.map((line) => line.split(/ {2,}/))).toEqual([
      ['START', 'COUNT', 'MIN', 'MAX', 'MEAN', 'LAST'],
      [iso(anchor), '5', '0', '4', '2', '4'],
      [iso(anchor + 5 * MINUTE), '5', '5', '9', '7', '9'],
      [iso(anchor + 10 * MINUTE), '2', '10', '11', '10.5', '11'],
    ]);

    const csv = await succeeded('resources', 'history', sensor.id, ...buckets, '--csv');
    expect(csv.split('\r\n').slice(0, 2)).toEqual(['start,count,last,min,max,mean,trueSeconds', `${iso(anchor)},5,4,0,4,2,`]);

    const json = JSON.parse(await succeeded('resources', 'history', sensor.id, ...buckets, '--json'));
    expect(json).toEqual(await devdata.historyBuckets(sensor.id, { bucket: '5m', from: iso(anchor), to: iso(anchor + 15 * MINUTE) }));

    const switchTable = (await succeeded('resources', 'history', lamp.id, ...buckets)).trimEnd().split('\n');
    expect(switchTable.map((line) => line.split(/ {2,}/))).toEqual([
      ['START', 'COUNT', 'TIME ON', 'LAST'],
      [iso(anchor), '2', '2:00', 'off'],
      [iso(anchor + 5 * MINUTE), '1', '5:00', 'on'],
      [iso(anchor + 10 * MINUTE), '0', '5:00', 'on'],
    ]);
    const switchCsv = await succeeded('resources', 'history', lamp.id, ...buckets, '--csv');
    expect(switchCsv.split('\r\n')[1]).toBe(`${iso(anchor)},2,false,,,,120`);
  });

  it('refuses a time it cannot read with its usage (exit 2), and a resource it cannot read with the API’s error (exit 1)', async () => {
    const bad = await cli('resources', 'history', sensor.id, '--since', 'yesterday');
    expect(bad.code).toBe(2);
    expect(bad.stderr.split('\n').slice(0, 2)).toEqual([
      'devdata-client: --since takes a duration ago such as 30m, 24h or 7d, or an ISO 8601 time such as 2026-01-31T12:00Z, not "yesterday"',
      'Usage: devdata-client resources history <id> [options]',
    ]);
    expect(bad.stdout).toBe('');
    const badJson = await cli('resources', 'history', sensor.id, '--since', '2026-02-30T25:00Z', '--json');
    expect([badJson.code, JSON.parse(badJson.stderr).error.code]).toEqual([2, 'usage']);
    const both = await cli('resources', 'history', sensor.id, '--csv', '--json');
    expect([both.code, JSON.parse(both.stderr).error]).toEqual([2, expect.objectContaining({ code: 'usage', message: '--csv and --json exclude each other' })]);

    const missing = await cli('resources', 'history', 'res_missing', '--json');
    expect([missing.code, JSON.parse(missing.stderr).error]).toEqual([1, expect.objectContaining({ status: 404, code: 'not_found' })]);
  });
});
