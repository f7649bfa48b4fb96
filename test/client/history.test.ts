// devdata's history helpers through the real server (api-decisions §13): a page of points and every
// page by its cursor, buckets for a sensor and for a switch, backfill with its Idempotency-Key
// replayed, a long backfill split into requests each with a key of its own and a failing one said
// in terms of the whole list, and several resources read at once.
import {
  DevdataClient,
  DevdataError,
  HISTORY_MAX_BACKFILL_POINTS,
  HistoryBackfillFailure,
  type HistoryBucket,
  type HistoryPoint,
  type HistoryPointInput,
  newIdempotencyKey,
} from '@devdata/client';
import { beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { thrown } from './support.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const iso = (ms: number) => new Date(ms).toISOString();

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

describe('devdata history helpers', () => {
  const app = useTestApp();
  let base: string;
  // A whole hour three to four hours ago: in the past of every resource created now, within the
  // raw history kept, and aligned to every bucket up to an hour.
  const anchor = Math.floor((Date.now() - 3 * HOUR) / HOUR) * HOUR;

  beforeAll(async () => {
    base = await app().listen();
  });

  /** A client of a new account, and what it sent to the history's paths. */
  async function client() {
    const account = await app().account();
    const sent: Array<{ method: string; url: URL; key: string | null; replayed: string | null }> = [];
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      const key = request.headers.get('idempotency-key');
      const response = await fetch(request);
      const url = new URL(request.url);
      if (url.pathname.includes('history')) sent.push({ method: request.method, url, key, replayed: response.headers.get('idempotent-replayed') });
      return response;
    };
    return { devdata: new DevdataClient({ baseUrl: base, apiKey: account.key, fetch: recording }), sent };
  }

  /** A reading a minute from the anchor's start: 0, 1, 2, … */
  const readings = (count: number): HistoryPoint[] => Array.from({ length: count }, (_, index) => ({ at: iso(anchor + index * MINUTE), state: index }));

  it('reads a page of points, every page by its cursor with iterateHistory, oldest or newest first', async () => {
    const { devdata, sent } = await client();
    const sensor = await devdata.createResource({ body: { name: 'Hall', type: 'sensor', state: 20 } });
    const points = readings(25);
    // Times as a Date or as the API's strings alike.
    const input: HistoryPointInput[] = points.map((point, index) => (index % 2 === 0 ? { ...point, at: new Date(point.at) } : point));
    expect(await devdata.backfillHistory(sensor.id, input)).toEqual({ inserted: 25, replaced: 0 });

    const range = { from: new Date(anchor), to: iso(anchor + HOUR) };
    const page = await devdata.history(sensor.id, { ...range, limit: 10 });
    expectTypeOf(page.data).toEqualTypeOf<HistoryPoint[]>();
    expect(page).toEqual({ data: points.slice(0, 10), cursor: points[9]!.at, hasMore: true });
    expect((await devdata.history(sensor.id, { ...range, limit: 10, cursor: page.cursor! })).data).toEqual(points.slice(10, 20));

    sent.length = 0;
    expect(await collect(devdata.iterateHistory(sensor.id, { ...range, limit: 10 }))).toEqual(points);
    expect(sent.map(({ url }) => url.searchParams.get('cursor'))).toEqual([null, points[9]!.at, points[19]!.at]);
    expect(sent[0]!.url.searchParams.get('from')).toBe(iso(anchor));
    expect(await collect(devdata.iterateHistory(sensor.id, { ...range, limit: 7, order: 'desc' }))).toEqual([...points].reverse());

    // Without a range, the last 24 hours: the backfilled points and the state it was created with.
    const day = await devdata.history(sensor.id);
    expect(day.data.map((point) => point.state)).toEqual([...points.map((point) => point.state), 20]);
  });

  it('reads buckets: a sensor’s min, max and mean, a switch’s time spent on carried across empty buckets', async () => {
    const { devdata } = await client();
    const sensor = await devdata.createResource({ body: { name: 'Hall', type: 'sensor', state: 20 } });
    await devdata.backfillHistory(sensor.id, readings(25));
    const buckets = await devdata.historyBuckets(sensor.id, { bucket: '5m', from: new Date(anchor), to: new Date(anchor + 30 * MINUTE) });
    expectTypeOf(buckets.data).toEqualTypeOf<HistoryBucket[]>();
    // Five buckets of five readings; the sixth has none and a sensor's empty buckets are left out.
    expect(buckets).toEqual({
      bucket: '5m',
      data: [0, 1, 2, 3, 4].map((index) => ({
        start: iso(anchor + index * 5 * MINUTE),
        count: 5,
        last: 5 * index + 4,
        min: 5 * index,
        max: 5 * index + 4,
        mean: 5 * index + 2,
      })),
    });

    const lamp = await devdata.createResource({ body: { name: 'Lamp', type: 'switch', state: false } });
    await devdata.backfillHistory(lamp.id, [
      { at: new Date(anchor), state: true },
      { at: new Date(anchor + 2 * MINUTE), state: false },
      { at: new Date(anchor + 5 * MINUTE), state: true },
    ]);
    const on = await devdata.historyBuckets(lamp.id, { bucket: '5m', from: iso(anchor), to: iso(anchor + 15 * MINUTE) });
    expect(on.data).toEqual([
      { start: iso(anchor), count: 2, last: false, trueSeconds: 120 },
      { start: iso(anchor + 5 * MINUTE), count: 1, last: true, trueSeconds: 300 },
      { start: iso(anchor + 10 * MINUTE), count: 0, last: true, trueSeconds: 300 },
    ]);
  });

  it('backfills with an Idempotency-Key: a repeat with the same key is answered with the first response', async () => {
    const { devdata, sent } = await client();
    const sensor = await devdata.createResource({ body: { name: 'Hall', type: 'sensor', state: 20 } });
    const points = readings(3);
    const key = newIdempotencyKey();
    const first = await devdata.backfillHistory(sensor.id, points, { idempotencyKey: key });
    expect(first).toEqual({ inserted: 3, replaced: 0 });
    // Run again, the same points would replace themselves: the replay says what the first call did.
    expect(await devdata.backfillHistory(sensor.id, points, { idempotencyKey: key })).toEqual(first);
    expect(sent.map(({ method, key, replayed }) => [method, key, replayed])).toEqual([
      ['POST', key, null],
      ['POST', key, 'true'],
    ]);
    // Without a key, each call sends a new one and runs.
    expect(await devdata.backfillHistory(sensor.id, points)).toEqual({ inserted: 0, replaced: 3 });
    expect(sent[2]!.key).toMatch(/^[\x21-\x7e]{1,255}$/);
    expect(sent[2]!.key).not.toBe(key);

    // All or nothing: a point after the resource's last change is refused by its index, nothing stored.
    const refused = await thrown(
      devdata.backfillHistory(sensor.id, [
        { at: new Date(anchor + HOUR), state: 1 },
        { at: new Date(Date.now() + HOUR), state: 2 },
      ]),
      DevdataError,
    );
    expect(refused).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(refused.details.map((detail) => detail.path)).toEqual(['/points/1/at']);
    expect((await devdata.history(sensor.id, { from: new Date(anchor), to: new Date(anchor + 2 * HOUR) })).data).toEqual(points);
  });

  it('backfills a long list as consecutive requests, each with its own key, and says which point of the whole list failed', async () => {
    const { devdata, sent } = await client();
    const sensor = await devdata.createResource({ body: { name: 'Hall', type: 'sensor', state: 20 } });
    const points = readings(25);
    const progress: Array<[number, number, number, number]> = [];
    const result = await devdata.backfillHistoryAll(sensor.id, points, {
      size: 10,
      onProgress: ({ done, total, request, requests }) => progress.push([done, total, request, requests]),
    });
    expect(result).toEqual({ inserted: 25, replaced: 0 });
    expect(progress).toEqual([
      [10, 25, 1, 3],
      [20, 25, 2, 3],
      [25, 25, 3, 3],
    ]);
    expect(new Set(sent.map(({ key }) => key)).size).toBe(3);
    expect(await collect(devdata.iterateHistory(sensor.id, { from: new Date(anchor), to: new Date(anchor + HOUR) }))).toEqual(points);

    const other = await devdata.createResource({ body: { name: 'Porch', type: 'sensor', state: 20 } });
    const broken: HistoryPointInput[] = readings(25);
    broken[13] = { at: new Date(Date.now() + HOUR), state: 13 };
    const failure = await thrown(devdata.backfillHistoryAll(other.id, broken, { size: 10 }), HistoryBackfillFailure);
    expect(failure).toBeInstanceOf(DevdataError);
    expect(failure).toMatchObject({ status: 400, code: 'invalid_request', request: 1, requests: 3, pointIndex: 13, done: 10 });
    expect(failure.details.map((detail) => detail.path)).toEqual(['/points/13/at']);
    expect(failure.message).toMatch(/^Backfill request 2 of 3 failed at point 13, after 10 points were stored: /);
    // The first request was stored, the failing one not at all, the third never sent.
    expect((await devdata.history(other.id, { from: new Date(anchor), to: new Date(anchor + HOUR) })).data).toEqual(points.slice(0, 10));
    await expect(devdata.backfillHistoryAll(other.id, points, { size: HISTORY_MAX_BACKFILL_POINTS + 1 })).rejects.toThrow(RangeError);

    // By default as many points per request as the API takes.
    sent.length = 0;
    const many = Array.from({ length: HISTORY_MAX_BACKFILL_POINTS + 1 }, (_, index) => ({ at: new Date(anchor - HOUR + index * 100), state: index }));
    expect(await devdata.backfillHistoryAll(other.id, many)).toEqual({ inserted: many.length, replaced: 0 });
    expect(sent).toHaveLength(2);
  });

  it('reads several resources at once, points or buckets, in the order named', async () => {
    const { devdata, sent } = await client();
    const hall = await devdata.createResource({ body: { name: 'Hall', type: 'sensor', state: 20 } });
    const porch = await devdata.createResource({ body: { name: 'Porch', type: 'sensor', state: 10 } });
    await devdata.backfillHistory(hall.id, readings(4));
    await devdata.backfillHistory(porch.id, readings(2));
    const range = { from: new Date(anchor), to: new Date(anchor + HOUR) };

    sent.length = 0;
    const points = await devdata.historyOf([porch.id, hall.id], { ...range, limit: 3 });
    expectTypeOf(points.data[0]!.data).toEqualTypeOf<HistoryPoint[]>();
    expect(points).toEqual({
      data: [
        { resourceId: porch.id, data: readings(2), cursor: readings(2)[1]!.at, hasMore: false },
        { resourceId: hall.id, data: readings(3), cursor: readings(3)[2]!.at, hasMore: true },
      ],
    });
    expect(sent[0]!.url.searchParams.getAll('resource')).toEqual([porch.id, hall.id]);

    const buckets = await devdata.historyBucketsOf([hall.id, porch.id], { ...range, bucket: '1h' });
    expectTypeOf(buckets.data[0]!.data).toEqualTypeOf<HistoryBucket[]>();
    expect(buckets).toEqual({
      bucket: '1h',
      data: [
        { resourceId: hall.id, data: [{ start: iso(anchor), count: 4, last: 3, min: 0, max: 3, mean: 1.5 }] },
        { resourceId: porch.id, data: [{ start: iso(anchor), count: 2, last: 1, min: 0, max: 1, mean: 0.5 }] },
      ],
    });

    const missing = await thrown(devdata.historyOf([hall.id, 'res_missing']), DevdataError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
  });
});
