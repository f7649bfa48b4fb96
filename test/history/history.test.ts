// A resource's history through the HTTP server (api-decisions §13), on the backend the suite runs
// on: which writes record a point, pages of points, backfill and its refusals, several resources
// at once, the query's refusals, scopes, and a deleted resource's history removed. Buckets against
// their points: aggregates.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { TestApp, type TestAccount } from '../support/app.js';

type Json = Record<string, unknown>;
interface Page {
  data: Array<{ at: string; state: unknown }>;
  cursor: string | null;
  hasMore: boolean;
}

const T0 = Date.parse('2026-11-20T12:00:00.000Z');
const clock = new ManualClock(new Date(T0));
let app: TestApp;

beforeAll(async () => {
  app = await TestApp.start({ clock });
  await app.listenForRequests();
});

afterAll(async () => app?.close());

const iso = (ms: number) => new Date(ms).toISOString();

async function create(caller: TestAccount, body: Json): Promise<Json> {
  const response = await app.request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'r', ...body } });
  expect(response.status, response.body).toBe(201);
  return response.json as Json;
}

async function patch(caller: TestAccount, id: unknown, body: Json): Promise<void> {
  const response = await app.request({ method: 'PATCH', url: `/api/v1/resources/${id}`, key: caller.key, body });
  expect(response.status, response.body).toBe(200);
}

async function points(caller: TestAccount, id: unknown, query = ''): Promise<Page> {
  const response = await app.request({ method: 'GET', url: `/api/v1/resources/${id}/history${query}`, key: caller.key });
  expect(response.status, response.body).toBe(200);
  return response.json as Page;
}

describe('what records a point', () => {
  it('every creation and every update that sends a state, the same one too; nothing else', async () => {
    clock.advance(T0 - clock.now().getTime());
    const caller = await app.account();
    const sensor = await create(caller, { type: 'sensor', state: 20 });
    clock.advance(1000);
    await patch(caller, sensor.id, { state: 20 });
    clock.advance(1000);
    await patch(caller, sensor.id, { name: 'renamed', attributes: { unit: '°C' } });
    clock.advance(1000);
    const batch = await app.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: caller.key,
      body: {
        operations: [
          { op: 'update', id: sensor.id, state: 'n/a' },
          { op: 'create', name: 'lamp', type: 'switch', state: true },
        ],
      },
    });
    expect(batch.status, batch.body).toBe(200);
    const lamp = (batch.json as { results: Array<{ resource?: Json }> }).results[1]!.resource!;
    clock.advance(1000);
    const schedule = await app.request({
      method: 'POST',
      url: '/api/v1/schedules',
      key: caller.key,
      body: { name: 'off', cron: '0 0 1 1 *', action: { type: 'set_state', resourceId: lamp.id, state: false } },
    });
    expect(schedule.status, schedule.body).toBe(201);
    const run = await app.request({ method: 'POST', url: `/api/v1/schedules/${(schedule.json as Json).id}/run`, key: caller.key });
    expect(run.status, run.body).toBeLessThan(300);
    clock.advance(1000);
    // A publication records nothing.
    expect((await app.request({ method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.x', data: {} } })).status).toBe(201);

    expect((await points(caller, sensor.id, `?to=${iso(T0 + 60_000)}`)).data).toEqual([
      { at: iso(T0), state: 20 },
      { at: iso(T0 + 1000), state: 20 },
      { at: iso(T0 + 3000), state: 'n/a' },
    ]);
    expect((await points(caller, lamp.id, `?to=${iso(T0 + 60_000)}`)).data).toEqual([
      { at: iso(T0 + 3000), state: true },
      { at: iso(T0 + 4000), state: false },
    ]);
  });

  it('keeps one point per millisecond: the last of the states written in it, as the resource holds it', async () => {
    const caller = await app.account();
    const dial = await create(caller, { type: 'sensor', state: 0 });
    clock.advance(1000);
    // At once, in the same millisecond: on PostgreSQL they take the account's turn together.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        app.request({ method: 'PATCH', url: `/api/v1/resources/${dial.id}`, key: caller.key, body: { state: index + 1 } }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
    const resource = (await app.request({ method: 'GET', url: `/api/v1/resources/${dial.id}`, key: caller.key })).json as Json;
    const now = clock.now().getTime();
    expect((await points(caller, dial.id, `?from=${iso(now)}&to=${iso(now + 1)}`)).data).toEqual([{ at: iso(now), state: resource.state }]);
  });
});

describe('pages of points', () => {
  it('pages forward and backward with the cursor, from ≤ at < to', async () => {
    const caller = await app.account();
    const start = clock.now().getTime();
    const sensor = await create(caller, { type: 'sensor', state: 0 });
    for (let index = 1; index <= 24; index++) {
      clock.advance(60_000);
      await patch(caller, sensor.id, { state: index });
    }
    const all = Array.from({ length: 25 }, (_, index) => ({ at: iso(start + index * 60_000), state: index }));
    const from = iso(start + 60_000);
    const to = iso(start + 24 * 60_000);
    const seen: unknown[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 3; page++) {
      const got: Page = await points(caller, sensor.id, `?from=${from}&to=${to}&limit=10${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...got.data);
      cursor = got.cursor;
      expect(got.hasMore).toBe(page < 2);
    }
    expect(seen).toEqual(all.slice(1, 24));
    const newest = await points(caller, sensor.id, `?from=${from}&to=${to}&limit=5&order=desc`);
    expect(newest.data).toEqual(all.slice(19, 24).reverse());
    const older = await points(caller, sensor.id, `?from=${from}&to=${to}&limit=5&order=desc&cursor=${newest.cursor}`);
    expect(older.data).toEqual(all.slice(14, 19).reverse());
    // By default the last day, oldest first.
    expect((await points(caller, sensor.id)).data).toEqual(all);
    expect(await points(caller, sensor.id, `?from=${iso(start - 10_000)}&to=${iso(start)}`)).toEqual({ data: [], cursor: null, hasMore: false });
  });

  it('refuses a range, a bucket or paging it cannot answer (400), and a resource that does not exist (404)', async () => {
    const caller = await app.account();
    const sensor = await create(caller, { type: 'sensor', state: 0 });
    const url = `/api/v1/resources/${sensor.id}/history`;
    for (const query of [
      `?from=${iso(T0)}&to=${iso(T0)}`,
      '?from=yesterday',
      '?bucket=2m',
      `?bucket=1m&from=${iso(T0 - 30 * 86_400_000)}&to=${iso(T0)}`,
      '?bucket=1h&limit=10',
      '?bucket=1h&cursor=2026-11-20T12:00:00.000Z',
      '?limit=0',
      '?limit=10001',
      '?order=newest',
    ]) {
      const response = await app.request({ method: 'GET', url: `${url}${query}`, key: caller.key });
      expect(response.status, `${query}: ${response.body}`).toBe(400);
      expect((response.json as { error: { code: string } }).error.code).toBe('invalid_request');
    }
    for (const missing of ['/api/v1/resources/res_none/history', `/api/v1/history?resource=${sensor.id}&resource=res_none`]) {
      const response = await app.request({ method: 'GET', url: missing, key: caller.key });
      expect(response.status, response.body).toBe(404);
    }
    const other = await app.account();
    expect((await app.request({ method: 'GET', url, key: other.key })).status).toBe(404);
  });
});

describe('backfill', () => {
  it('stores readings taken earlier without an event or a version change, replacing a point at the same time', async () => {
    const caller = await app.account();
    const sensor = await create(caller, { type: 'sensor', state: 5 });
    const created = Date.parse(sensor.updatedAt as string);
    clock.advance(60_000);
    const events = async () => ((await app.request({ method: 'GET', url: '/api/v1/events?type=custom.none', key: caller.key })).json as Json).cursor;
    const before = await events();
    const body = {
      points: [
        { at: iso(created - 2000), state: 1 },
        { at: iso(created - 1000), state: 'offline' },
        { at: iso(created), state: 4 },
      ],
    };
    const response = await app.request({ method: 'POST', url: `/api/v1/resources/${sensor.id}/history`, key: caller.key, body });
    expect(response.status, response.body).toBe(200);
    expect(response.json).toEqual({ inserted: 2, replaced: 1 });
    expect(await events()).toBe(before);
    expect(((await app.request({ method: 'GET', url: `/api/v1/resources/${sensor.id}`, key: caller.key })).json as Json).version).toBe(1);
    expect((await points(caller, sensor.id)).data).toEqual(body.points);
  });

  it('refuses every point that cannot be stored, naming each, and stores none', async () => {
    const caller = await app.account();
    const lamp = await create(caller, { type: 'switch', state: false });
    const updated = Date.parse(lamp.updatedAt as string);
    const url = `/api/v1/resources/${lamp.id}/history`;
    const cases: Array<[unknown, string]> = [
      [{ at: iso(updated + 1), state: true }, '/points/1/at'],
      [{ at: iso(updated - 31 * 86_400_000), state: true }, '/points/1/at'],
      [{ at: iso(updated - 5000), state: 'on' }, '/points/1/state'],
      [{ at: iso(updated - 1000), state: true }, '/points/1/at'],
    ];
    for (const [point, path] of cases) {
      const response = await app.request({ method: 'POST', url, key: caller.key, body: { points: [{ at: iso(updated - 1000), state: true }, point] } });
      expect(response.status, response.body).toBe(400);
      const error = (response.json as { error: { code: string; details: Array<{ path: string }> } }).error;
      expect(error.code).toBe('invalid_request');
      expect(error.details.map((detail) => detail.path)).toContain(path);
    }
    for (const body of [{ points: [] }, { points: [{ at: iso(updated), state: true, extra: 1 }] }, { points: [{ at: 'now', state: true }] }, {}]) {
      expect((await app.request({ method: 'POST', url, key: caller.key, body })).status).toBe(400);
    }
    expect((await points(caller, lamp.id)).data).toEqual([{ at: iso(updated), state: false }]);
  });

  it('needs resources:write; reading needs resources:read', async () => {
    const caller = await app.account();
    const sensor = await create(caller, { type: 'sensor', state: 1 });
    // Keys of the caller's own account, with one scope each.
    const ownReader = await app.request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'r', scopes: ['resources:read'] } });
    const ownOther = await app.request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'e', scopes: ['events:read'] } });
    const readKey = (ownReader.json as { key: string }).key;
    const otherKey = (ownOther.json as { key: string }).key;
    const at = iso(Date.parse(sensor.updatedAt as string) - 1000);
    const backfill = await app.request({ method: 'POST', url: `/api/v1/resources/${sensor.id}/history`, key: readKey, body: { points: [{ at, state: 2 }] } });
    expect(backfill.status).toBe(403);
    expect((await app.request({ method: 'GET', url: `/api/v1/resources/${sensor.id}/history`, key: readKey })).status).toBe(200);
    expect((await app.request({ method: 'GET', url: `/api/v1/resources/${sensor.id}/history`, key: otherKey })).status).toBe(403);
    expect((await app.request({ method: 'GET', url: `/api/v1/history?resource=${sensor.id}`, key: otherKey })).status).toBe(403);
  });
});

describe('several resources at once', () => {
  it('answers each resource named, in order, as its own history would', async () => {
    const caller = await app.account();
    const a = await create(caller, { type: 'sensor', state: 1 });
    const b = await create(caller, { type: 'switch', state: true });
    clock.advance(30 * 60_000);
    await patch(caller, a.id, { state: 3 });
    await patch(caller, b.id, { state: false });
    const range = `from=${iso(T0 - 86_400_000)}&to=${iso(clock.now().getTime() + 1)}`;
    const many = await app.request({ method: 'GET', url: `/api/v1/history?resource=${b.id}&resource=${a.id}&${range}`, key: caller.key });
    expect(many.status, many.body).toBe(200);
    expect(many.json).toEqual({
      data: [
        { resourceId: b.id, ...(await points(caller, b.id, `?${range}`)) },
        { resourceId: a.id, ...(await points(caller, a.id, `?${range}`)) },
      ],
    });
    const buckets = await app.request({ method: 'GET', url: `/api/v1/history?resource=${a.id}&resource=${b.id}&bucket=1d&${range}`, key: caller.key });
    const own = async (id: unknown) =>
      ((await app.request({ method: 'GET', url: `/api/v1/resources/${id}/history?bucket=1d&${range}`, key: caller.key })).json as Json).data;
    expect(buckets.json).toEqual({
      bucket: '1d',
      data: [
        { resourceId: a.id, data: await own(a.id) },
        { resourceId: b.id, data: await own(b.id) },
      ],
    });
    // At most 10,000 points and 50,000 buckets in one answer, however many resources it names.
    const twenty = Array.from({ length: 20 }, () => `resource=${a.id}`).join('&');
    const split = await app.request({ method: 'GET', url: `/api/v1/history?${twenty}`, key: caller.key });
    expect(split.status, split.body).toBe(200);
    expect((await app.request({ method: 'GET', url: `/api/v1/history?${twenty}&limit=501`, key: caller.key })).status).toBe(400);
    expect((await app.request({ method: 'GET', url: `/api/v1/history?${twenty}&bucket=1m&from=${iso(T0 - 2 * 86_400_000)}`, key: caller.key })).status).toBe(
      400,
    );
    const tooMany = Array.from({ length: 51 }, () => `resource=${a.id}`).join('&');
    expect((await app.request({ method: 'GET', url: `/api/v1/history?${tooMany}`, key: caller.key })).status).toBe(400);
    expect((await app.request({ method: 'GET', url: '/api/v1/history', key: caller.key })).status).toBe(400);
  });
});

describe('capabilities', () => {
  it('state what is recorded, how long it is kept, the buckets and the limits', async () => {
    const caller = await app.account();
    const response = await app.request({ method: 'GET', url: '/api/v1/capabilities', key: caller.key });
    const features = (response.json as { features: Record<string, Json> }).features;
    expect(features.history).toMatchObject({
      recording: true,
      retentionDays: 30,
      rollupDays: 400,
      buckets: [
        { name: '1m', seconds: 60 },
        { name: '5m', seconds: 300 },
        { name: '15m', seconds: 900 },
        { name: '1h', seconds: 3600 },
        { name: '6h', seconds: 21600 },
        { name: '1d', seconds: 86400 },
      ],
      maxBuckets: 10_000,
      maxPointsPerPage: 10_000,
      maxBackfillPoints: 10_000,
      maxResourcesPerRequest: 50,
    });
    expect((response.json as { limits: Json }).limits).toMatchObject({ historyRetentionDays: 30, historyRollupDays: 400 });
  });
});

describe('a deleted resource', () => {
  it('has no history, and housekeeping removes its points and aggregates', async () => {
    const caller = await app.account();
    const sensor = await create(caller, { type: 'sensor', state: 1 });
    const updated = Date.parse(sensor.updatedAt as string);
    const body = { points: Array.from({ length: 2500 }, (_, index) => ({ at: iso(updated - (index + 1) * 1000), state: index })) };
    expect((await app.request({ method: 'POST', url: `/api/v1/resources/${sensor.id}/history`, key: caller.key, body })).status).toBe(200);
    const { db } = app.context.storage;
    const series = await db
      .selectFrom('history_series')
      .select('key')
      .where('resource_id', '=', sensor.id as string)
      .executeTakeFirstOrThrow();
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('history_points')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('series', '=', series.key)
            .executeTakeFirstOrThrow()
        ).n,
      );
    expect(await count()).toBe(2501);
    expect((await app.request({ method: 'DELETE', url: `/api/v1/resources/${sensor.id}`, key: caller.key })).status).toBe(204);
    expect((await app.request({ method: 'GET', url: `/api/v1/resources/${sensor.id}/history`, key: caller.key })).status).toBe(404);
    for (let run = 0; run < 10 && !(await app.context.services.historyHousekeeping.run(undefined, 60_000)).done; run++);
    expect(await count()).toBe(0);
    expect(await db.selectFrom('history_series').select('key').where('key', '=', series.key).execute()).toEqual([]);
  });
});
