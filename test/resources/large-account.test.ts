// A large account (100,000 resources) beside a small one (1,000) on the same server: every list
// answer is complete and correct (totals, deep and last pages, each filter, GETs) while the server
// is freshly started, after it has warmed up, after writes and deletes, and after a restart. Memory
// answers once the account is read (storage until then), on both backends: on PostgreSQL the reads
// after the first are larger (SHARED_LATER_CHUNK), so this reads 100,000 both ways. The accounts are written with bulk SQL (not 100,000 requests) and their kept counts made
// by the migration's backfill, so that is checked too.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { countResources } from '../../src/storage/migrations/0010_resource_counts.js';
import type { ResourceReadModel } from '../../src/areas/resources/read-model.js';
import { ON_POSTGRES, TestApp, testDatabase, type TestAccount } from '../support/app.js';

const LARGE = 100_000;
const SMALL = 1_000;

/** What the test expects an account to hold, in creation order. */
interface Expected {
  account: TestAccount;
  resources: Array<{ id: string; type: string; tags: string[] }>;
}

/**
 * `count` resources written straight into the tables: the i-th (from 0) is a switch when i is a
 * multiple of 100 (else a sensor), tagged `tenth` when a multiple of 10 and `rare` when i % 1000 is 7.
 */
async function seed(db: Kysely<any>, account: TestAccount, count: number): Promise<Expected> {
  const prefix = account.accountId.slice(-8);
  const { event_seq: base } = await db.selectFrom('accounts').select('event_seq').where('id', '=', account.accountId).executeTakeFirstOrThrow();
  await sql`
    with recursive n(i) as (select 0 union all select i + 1 from n where i < ${count - 1})
    insert into resources (id, account_id, name, type, state, attributes, tags, version, created_seq, created_at, updated_at)
    select 'res_' || cast(${prefix} as text) || '_' || cast(i as text), cast(${account.accountId} as text), 'Sensor ' || cast(i as text),
      case when i % 100 = 0 then 'switch' else 'sensor' end,
      case when i % 100 = 0 then 'true' else cast(i as text) end,
      '{"unit_of_measurement":"°C"}',
      case when i % 10 = 0 then '["tenth"]' when i % 1000 = 7 then '["rare"]' else '[]' end,
      1, cast(${Number(base)} as integer) + i + 1, '2026-11-24T00:00:00.000Z', '2026-11-24T00:00:00.000Z'
    from n`.execute(db);
  for (const tag of ['tenth', 'rare']) {
    await sql`
      insert into resource_tags (resource_id, account_id, tag, created_seq)
      select id, account_id, ${tag}, created_seq from resources where account_id = ${account.accountId} and tags = ${JSON.stringify([tag])}`.execute(db);
  }
  await db
    .updateTable('accounts')
    .set({ event_seq: Number(base) + count })
    .where('id', '=', account.accountId)
    .execute();
  const resources = Array.from({ length: count }, (_, i) => ({
    id: `res_${prefix}_${i}`,
    type: i % 100 === 0 ? 'switch' : 'sensor',
    tags: i % 10 === 0 ? ['tenth'] : i % 1000 === 7 ? ['rare'] : [],
  }));
  return { account, resources };
}

interface ListCase {
  type?: string;
  tags?: string[];
  limit: number;
  /** From the end when negative (the last page). */
  offset: number;
}

/** The lists checked: each filter, first, deep and last pages. */
function listCases(size: number): ListCase[] {
  const deep = Math.floor(size * 0.9);
  return [
    { limit: 50, offset: 0 },
    { limit: 50, offset: deep },
    { limit: 7, offset: -3 },
    { type: 'switch', limit: 50, offset: 0 },
    { type: 'switch', limit: 20, offset: -5 },
    { type: 'sensor', limit: 50, offset: deep - 1000 },
    { tags: ['tenth'], limit: 50, offset: 0 },
    { tags: ['tenth'], limit: 10, offset: -4 },
    { tags: ['rare'], limit: 500, offset: 0 },
    { type: 'switch', tags: ['tenth'], limit: 10, offset: -2 },
    { type: 'sensor', tags: ['tenth'], limit: 10, offset: 3 },
    { tags: ['tenth', 'rare'], limit: 10, offset: 0 },
    { type: 'text', limit: 10, offset: 0 },
  ];
}

async function expectComplete(app: TestApp, expected: Expected): Promise<void> {
  const { account, resources } = expected;
  const checks = listCases(resources.length).map(async ({ type, tags = [], limit, offset }) => {
    const matching = resources.filter((resource) => (type === undefined || resource.type === type) && tags.every((tag) => resource.tags.includes(tag)));
    const start = offset < 0 ? Math.max(0, matching.length + offset) : offset;
    const query = new URLSearchParams({ limit: String(limit), offset: String(start) });
    if (type) query.set('type', type);
    for (const tag of tags) query.append('tag', tag);
    const response = await app.request({ url: `/api/v1/resources?${query}`, key: account.key });
    const what = `${query} on ${resources.length}`;
    expect(response.status, what).toBe(200);
    const page = matching.slice(start, start + limit);
    expect(response.json, what).toMatchObject({ limit, offset: start, total: matching.length, hasMore: start + page.length < matching.length });
    expect(
      response.json.data.map((resource: { id: string; type: string; tags: string[] }) => resource),
      what,
    ).toEqual(page.map(({ id, type: itsType, tags: itsTags }) => expect.objectContaining({ id, type: itsType, tags: itsTags })));
  });
  const gets = [0, 1, Math.floor(resources.length / 2), resources.length - 1].map(async (index) => {
    const resource = resources[index]!;
    const response = await app.request({ url: `/api/v1/resources/${resource.id}`, key: account.key });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject(resource);
  });
  await Promise.all([...checks, ...gets]);
}

/** The app's resource read model: accounts kept in memory once read. */
const readModelOf = (app: TestApp): ResourceReadModel => app.context.services.resourceReads.views;

describe('a large account beside a small one', () => {
  let databaseUrl: string;
  let dropDatabase: () => Promise<void>;
  let directory: string | undefined;
  let app: TestApp;
  let large: Expected;
  let small: Expected;

  beforeAll(async () => {
    if (ON_POSTGRES) {
      ({ url: databaseUrl, drop: dropDatabase } = await testDatabase());
    } else {
      // A file, so that a second app on it is the same service restarted.
      directory = mkdtempSync(join(tmpdir(), 'devdata-large-'));
      databaseUrl = `sqlite:${join(directory, 'devdata.db')}`;
      dropDatabase = async () => {};
    }
    const writer = await TestApp.start({ env: { DATABASE_URL: databaseUrl } });
    const db = writer.context.storage.db as Kysely<any>;
    large = await seed(db, await writer.account(), LARGE);
    small = await seed(db, await writer.account(), SMALL);
    // The counts as migration 0010 makes them from existing rows.
    await db.deleteFrom('resource_counts').execute();
    await countResources(db);
    // What autovacuum does after that many inserts; the planner needs it to use the indexes.
    if (ON_POSTGRES) await sql`analyze`.execute(db);
    await writer.close();
  }, 300_000);

  afterAll(async () => {
    await app?.close();
    await dropDatabase();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  async function restart(): Promise<void> {
    await app?.close();
    app = await TestApp.start({ env: { DATABASE_URL: databaseUrl } });
  }

  it('answers completely from the first reads of a freshly started server', async () => {
    await restart();
    // The first request starts reading the account; until that is done, storage answers, and a
    // page of the whole account starts at the position the creation order read first gives.
    expect((await app.request({ url: '/api/v1/resources?limit=1', key: large.account.key })).status).toBe(200);
    expect(readModelOf(app).held(large.account.accountId)).toBeUndefined();
    expect(
      readModelOf(app)
        .reading(large.account.accountId)
        ?.creationSeqAt(LARGE - 1),
    ).toBeDefined();
    await Promise.all([expectComplete(app, large), expectComplete(app, small)]);
  });

  it('keeps the large account in memory once read, and answers the same from there', async () => {
    await vi.waitFor(() => expect(readModelOf(app).held(large.account.accountId)).toBeDefined(), { timeout: 30_000, interval: 50 });
    expect(readModelOf(app).held(small.account.accountId)).toBeDefined();
    await Promise.all([expectComplete(app, large), expectComplete(app, small)]);
  });

  it('stays complete after creates, tag changes and deletes, and after a restart', async () => {
    for (const expected of [large, small]) {
      const { account, resources } = expected;
      const key = account.key;
      const created = await app.request({
        method: 'POST',
        url: '/api/v1/resources',
        key,
        body: { name: 'New', type: 'switch', state: false, tags: ['tenth', 'rare'] },
      });
      expect(created.status).toBe(201);
      resources.push({ id: created.json.id, type: 'switch', tags: ['tenth', 'rare'] });
      // A resource gains `tenth`, another loses it, one goes from the middle and the last before the new one.
      const gains = resources[3]!;
      const loses = resources[20]!;
      for (const [resource, tags] of [
        [gains, ['rare', 'tenth']],
        [loses, []],
      ] as const) {
        const patched = await app.request({ method: 'PATCH', url: `/api/v1/resources/${resource.id}`, key, body: { tags } });
        expect(patched.status).toBe(200);
        resource.tags = [...tags];
      }
      for (const index of [resources.length - 2, Math.floor(resources.length / 2)]) {
        const removed = await app.request({ method: 'DELETE', url: `/api/v1/resources/${resources[index]!.id}`, key });
        expect(removed.status).toBe(204);
        resources.splice(index, 1);
      }
    }
    await Promise.all([expectComplete(app, large), expectComplete(app, small)]);
    await restart();
    // The first read starts reading the large account into memory; writes made while it reads must
    // reach what it keeps.
    const { key } = large.account;
    expect((await app.request({ url: '/api/v1/resources?limit=1', key })).json.total).toBe(large.resources.length);
    const patched = await app.request({ method: 'PATCH', url: `/api/v1/resources/${large.resources[5]!.id}`, key, body: { tags: ['rare'] } });
    expect(patched.status).toBe(200);
    large.resources[5]!.tags = ['rare'];
    expect((await app.request({ method: 'DELETE', url: `/api/v1/resources/${large.resources[LARGE - 10]!.id}`, key })).status).toBe(204);
    large.resources.splice(LARGE - 10, 1);
    await Promise.all([expectComplete(app, large), expectComplete(app, small)]);
    await vi.waitFor(() => expect(readModelOf(app).held(large.account.accountId)).toBeDefined(), { timeout: 30_000, interval: 50 });
    await Promise.all([expectComplete(app, large), expectComplete(app, small)]);
  });
});
