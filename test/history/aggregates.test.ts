// History buckets (api-decisions §13) checked exactly against points imported at known times, on
// the backend the suite runs on: generated points and ranges for each type, against a plain
// reference computed here from the points alone, before housekeeping (buckets from the points),
// after it (buckets of an hour and longer from the hourly aggregates), after a backfill made hours
// stale, and past the raw retention (hourly aggregates only).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { TestApp, type TestAccount } from '../support/app.js';

type State = number | string | boolean;
interface Point {
  at: number;
  state: State;
}
interface Bucket {
  start: string;
  count: number;
  last: State;
  min?: number;
  max?: number;
  mean?: number;
  trueSeconds?: number;
}
type ResourceType = 'sensor' | 'binary_sensor' | 'switch' | 'text';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const SIZES = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '1h': HOUR, '6h': 6 * HOUR, '1d': DAY } as const;
type BucketName = keyof typeof SIZES;

/** The reference: each bucket computed from every known point, the plainest way. */
function expectedBuckets(type: ResourceType, points: readonly Point[], from: number, to: number, size: number, now: number): Bucket[] {
  const boolean = type === 'binary_sensor' || type === 'switch';
  const first = from - (((from % size) + size) % size);
  const buckets: Bucket[] = [];
  for (let start = first; start < to; start += size) {
    const end = start + size;
    const inside = points.filter((point) => point.at >= start && point.at < end);
    const before = points.filter((point) => point.at < start).at(-1);
    if (boolean) {
      if (!before && inside.length === 0) continue;
      let state = before?.state;
      let since = start;
      let trueMs = 0;
      for (const point of inside) {
        if (state === true) trueMs += Math.max(0, Math.min(point.at, now) - Math.min(since, now));
        since = point.at;
        state = point.state;
      }
      if (state === true) trueMs += Math.max(0, Math.min(end, now) - Math.min(since, now));
      buckets.push({ start: new Date(start).toISOString(), count: inside.length, last: state!, trueSeconds: trueMs / 1000 });
      continue;
    }
    if (inside.length === 0) continue;
    const bucket: Bucket = { start: new Date(start).toISOString(), count: inside.length, last: inside.at(-1)!.state };
    const numbers = inside.map((point) => point.state).filter((state): state is number => typeof state === 'number');
    if (type === 'sensor' && numbers.length > 0) {
      bucket.min = Math.min(...numbers);
      bucket.max = Math.max(...numbers);
      bucket.mean = numbers.reduce((sum, value) => sum + value, 0) / numbers.length;
    }
    buckets.push(bucket);
  }
  return buckets;
}

const T0 = Date.parse('2026-11-20T12:00:00.000Z');
const clock = new ManualClock(new Date(T0));
let app: TestApp;
let caller: TestAccount;

beforeAll(async () => {
  app = await TestApp.start({ clock, env: { HISTORY_RETENTION_DAYS: '30', HISTORY_ROLLUP_DAYS: '400' } });
  // The clock moves 400 days on: the key must outlive it.
  caller = await app.account(undefined, { expiresInDays: 1000 });
});

afterAll(async () => app?.close());

/** Runs housekeeping until it caught up; returns how many day partitions it dropped (PostgreSQL). */
async function housekeeping(): Promise<number> {
  let dropped = 0;
  for (let run = 0; run < 50; run++) {
    const report = await app.context.services.historyHousekeeping.run(undefined, 60_000);
    dropped += report.partitionsDropped;
    if (report.done && report.sweptAll) return dropped;
  }
  throw new Error('housekeeping did not catch up in 50 runs');
}

async function create(type: ResourceType, state: State): Promise<{ id: string; updatedAt: string }> {
  const response = await app.request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'h', type, state } });
  expect(response.status, response.body).toBe(201);
  return response.json as { id: string; updatedAt: string };
}

async function backfill(id: string, points: readonly Point[]): Promise<void> {
  for (let start = 0; start < points.length; start += 10_000) {
    const body = { points: points.slice(start, start + 10_000).map((point) => ({ at: new Date(point.at).toISOString(), state: point.state })) };
    const response = await app.request({ method: 'POST', url: `/api/v1/resources/${id}/history`, key: caller.key, body });
    expect(response.status, response.body).toBe(200);
  }
}

async function buckets(id: string, bucket: BucketName, from: number, to: number): Promise<Bucket[]> {
  const url = `/api/v1/resources/${id}/history?bucket=${bucket}&from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
  const response = await app.request({ method: 'GET', url, key: caller.key });
  expect(response.status, response.body).toBe(200);
  return (response.json as { data: Bucket[] }).data;
}

const stateOf: Record<ResourceType, fc.Arbitrary<State>> = {
  // Quarters: every sum of them is exact, so a mean is the same however the sum is grouped.
  sensor: fc.oneof(
    { weight: 9, arbitrary: fc.integer({ min: -4000, max: 4000 }).map((value) => value / 4) },
    { weight: 1, arbitrary: fc.constantFrom('off', 'n/a') },
  ),
  binary_sensor: fc.boolean(),
  switch: fc.boolean(),
  text: fc.string({ minLength: 0, maxLength: 8 }),
};

/** Points at distinct times within the three days before T0, some on bucket edges. */
const pointsOf = (type: ResourceType) =>
  fc
    .uniqueArray(
      fc.oneof(
        fc.integer({ min: T0 - 3 * DAY, max: T0 - 1 }),
        // On an edge of every bucket length: a minute's start.
        fc.integer({ min: (T0 - 3 * DAY) / 60_000, max: T0 / 60_000 - 1 }).map((minute) => minute * 60_000),
      ),
      { minLength: 1, maxLength: 150 },
    )
    .chain((times) => fc.tuple(fc.constant(times.sort((a, b) => a - b)), fc.array(stateOf[type], { minLength: times.length, maxLength: times.length })))
    .map(([times, states]) => times.map((at, index) => ({ at, state: states[index]! })));

const rangeOf = fc
  .tuple(fc.integer({ min: T0 - 4 * DAY, max: T0 + HOUR }), fc.integer({ min: 1, max: 4 * DAY }))
  .map(([from, length]) => ({ from, to: from + length }));

describe('buckets against the points they are made of', () => {
  for (const type of ['sensor', 'switch', 'text'] as const) {
    it(`${type}: from the points, from hourly aggregates, after a stale backfill, each exactly as the points say`, async () => {
      await fc.assert(
        fc.asyncProperty(
          pointsOf(type),
          stateOf[type],
          fc.array(fc.tuple(fc.constantFrom(...(Object.keys(SIZES) as BucketName[])), rangeOf), { minLength: 3, maxLength: 3 }),
          async (points, initial, reads) => {
            clock.advance(T0 - clock.now().getTime());
            const resource = await create(type, initial);
            await backfill(resource.id, points);
            const known = [...points, { at: T0, state: initial }];
            const check = async (label: string) => {
              const now = clock.now().getTime();
              for (const [bucket, { from, to }] of reads) {
                const size = SIZES[bucket];
                if (Math.ceil((to - (from - (((from % size) + size) % size))) / size) > 10_000) continue;
                expect(
                  await buckets(resource.id, bucket, from, to),
                  `${label}: ${bucket} ${new Date(from).toISOString()}..${new Date(to).toISOString()}`,
                ).toEqual(expectedBuckets(type, known, from, to, size, now));
              }
            };
            await check('from the points');
            // Two hours on: the hours up to T0's are aggregated, the backfilled ones rebuilt from stale.
            clock.advance(2 * HOUR);
            await housekeeping();
            await check('from the aggregates');
            // A backfill into aggregated hours: replaced and new points, the hours stale until rebuilt.
            const shifted = points.slice(0, 10).map((point, index) => ({ at: index % 2 === 0 ? point.at : point.at - 1, state: point.state }));
            const more = [...new Map(shifted.map((point) => [point.at, point])).values()];
            const merged = new Map(known.map((point) => [point.at, point]));
            for (const point of more) merged.set(point.at, point);
            known.splice(0, known.length, ...[...merged.values()].sort((a, b) => a.at - b.at));
            await backfill(
              resource.id,
              more.filter((point) => point.at < Date.parse(resource.updatedAt)),
            );
            await check('with stale hours');
            await housekeeping();
            await check('rebuilt');
          },
        ),
        { numRuns: 8 },
      );
    });
  }
});

describe('retention', () => {
  it('keeps raw points 30 days and hourly aggregates 400, each read from what is kept', async () => {
    // Ten days on (noon), before anything is written there: PostgreSQL makes that day's partition.
    const start = T0 + 10 * DAY;
    clock.advance(start - clock.now().getTime());
    await housekeeping();
    const sensor = await create('sensor', 0);
    const points = Array.from({ length: 22 }, (_, index) => ({ at: start - 11 * HOUR + index * 30 * 60_000 - 60_000, state: index }));
    await backfill(sensor.id, points);
    await housekeeping();
    const known = [...points, { at: start, state: 0 }];
    // 31 days later: the raw points are gone, the hourly aggregates serve hours and days.
    clock.advance(31 * DAY);
    const dropped = await housekeeping();
    // PostgreSQL drops the day's partition whole.
    expect(dropped > 0).toBe(app.context.storage.backend === 'postgres');
    const now = clock.now().getTime();
    const from = start - DAY;
    const page = await app.request({ method: 'GET', url: `/api/v1/resources/${sensor.id}/history?from=${new Date(from).toISOString()}`, key: caller.key });
    expect(page.json).toEqual({ data: [], cursor: null, hasMore: false });
    expect(await buckets(sensor.id, '1h', from, start + HOUR)).toEqual(expectedBuckets('sensor', known, from, start + HOUR, HOUR, now));
    expect(await buckets(sensor.id, '1d', from, start + HOUR)).toEqual(expectedBuckets('sensor', known, from, start + HOUR, DAY, now));
    expect(await buckets(sensor.id, '5m', from, start + HOUR)).toEqual([]);
    const rows = await app.context.storage.db
      .selectFrom('history_points')
      .select('at')
      .where('at', '<', now - 30 * DAY)
      .execute();
    expect(rows).toEqual([]);
    // A point exactly at the edge of the raw retention is still read; one just before is not.
    const kept = await create('sensor', 0);
    const edge = now - 30 * DAY;
    await backfill(kept.id, [{ at: edge + 1, state: 7 }]);
    const refused = await app.request({
      method: 'POST',
      url: `/api/v1/resources/${kept.id}/history`,
      key: caller.key,
      body: { points: [{ at: new Date(edge - 1).toISOString(), state: 8 }] },
    });
    expect(refused.status).toBe(400);
    const edgePage = await app.request({
      method: 'GET',
      url: `/api/v1/resources/${kept.id}/history?from=${new Date(edge - DAY).toISOString()}`,
      key: caller.key,
    });
    expect((edgePage.json as { data: unknown[] }).data).toEqual([
      { at: new Date(edge + 1).toISOString(), state: 7 },
      { at: new Date(now).toISOString(), state: 0 },
    ]);
    // 400 days on: the aggregates are gone too.
    clock.advance(370 * DAY);
    await housekeeping();
    expect(await buckets(sensor.id, '1d', from, start + HOUR)).toEqual([]);
  });
});
