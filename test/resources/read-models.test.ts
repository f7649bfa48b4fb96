// The in-memory read models through the real server (src/areas/resources/read-model.ts,
// src/areas/events/recent.ts): after a mixed workload of creates, edits, deletes and custom events,
// sequential and concurrent, every resource, list and event page one app serves from memory is
// byte for byte what a second app reads from storage; on SQLite the first app is shown to answer
// with the tables gone (so from memory), and a write made by another app on the same file (as
// another process would) is seen.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../support/random.js';
import { ON_POSTGRES, TestApp, sharedDatabase, type TestAccount, type TestResponse } from '../support/app.js';
import { sleep } from '../support/wait.js';
import { EXTERNAL_WRITE_CHECK_MS } from '../../src/storage/external-writes.js';

const TYPES = ['sensor', 'binary_sensor', 'switch', 'text'] as const;
const TAGS = ['kitchen', 'hall', 'floor-1', 'floor-2', 'ünïcödé "quoted"'];

function stateFor(type: (typeof TYPES)[number], n: number): unknown {
  if (type === 'sensor') return n % 3 === 0 ? `reading ${n}` : n / 7;
  if (type === 'text') return `text\n${n} \u2028 "${n}"`;
  return n % 2 === 0;
}

/** The reads compared: every resource, lists with each kind of filter, and event pages. */
function readUrls(resourceIds: string[], newest: number): string[] {
  const lists = [
    '/api/v1/resources?limit=500',
    '/api/v1/resources?limit=7&offset=3',
    '/api/v1/resources?limit=5&offset=1000',
    '/api/v1/resources?type=sensor',
    '/api/v1/resources?type=switch&tag=hall',
    '/api/v1/resources?tag=kitchen&tag=floor-1',
    `/api/v1/resources?tag=${encodeURIComponent(TAGS[4]!)}`,
  ];
  const pages = [0, 1, Math.floor(newest / 2), newest - 3, newest, newest + 5].flatMap((after) => [
    `/api/v1/events?after=${after}`,
    `/api/v1/events?after=${after}&limit=4`,
    `/api/v1/events?after=${after}&type=custom.*&limit=3`,
    `/api/v1/events?after=${after}&type=resource.deleted`,
  ]);
  return [...resourceIds.map((id) => `/api/v1/resources/${id}`), `/api/v1/resources/res_${'x'.repeat(22)}`, ...lists, ...pages];
}

async function responsesOf(app: TestApp, key: string, urls: string[]): Promise<Array<Pick<TestResponse, 'status' | 'body'> & { url: string; etag: unknown }>> {
  const responses = [];
  for (const url of urls) {
    const response = await app.request({ url, key });
    // The error body carries the request's own id; everything else must match to the byte.
    const body = response.status >= 400 ? JSON.stringify({ ...response.json.error, requestId: undefined }) : response.body;
    responses.push({ url, status: response.status, etag: response.headers.etag, body });
  }
  return responses;
}

describe('in-memory read models', () => {
  let database: { url: string; drop: () => Promise<void> };
  let served: TestApp;
  let caller: TestAccount;
  const resourceIds: string[] = [];
  const random = seededRandom(20261123);

  beforeAll(async () => {
    database = await sharedDatabase();
    served = await TestApp.start({ env: { DATABASE_URL: database.url } });
    caller = await served.account();
  });

  afterAll(async () => {
    await served?.close();
    await database?.drop();
  });

  async function call(method: string, url: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse> {
    return served.request({ method, url, key: caller.key, body, headers });
  }

  /** One random change; `concurrent` ones may meet a change made meanwhile (412, or 404 once deleted). */
  async function someChange(step: number, concurrent = false): Promise<void> {
    const allowed = (status: number) => status === 200 || status === 204 || (concurrent && (status === 404 || status === 412));
    const choice = random(10);
    if (choice < 3 || resourceIds.length < 5) {
      const type = TYPES[random(TYPES.length)]!;
      const tags = TAGS.filter(() => random(3) === 0);
      const created = await call('POST', '/api/v1/resources', {
        name: `Resource ${step}`,
        type,
        state: stateFor(type, step),
        tags,
        attributes: { step, nested: { list: [step, null] } },
      });
      expect(created.status, created.body).toBe(201);
      resourceIds.push(created.json.id);
      return;
    }
    const id = resourceIds[random(resourceIds.length)]!;
    if (choice < 7) {
      const current = await call('GET', `/api/v1/resources/${id}`);
      expect(allowed(current.status), current.body).toBe(true);
      if (current.status !== 200) return;
      const type = current.json.type as (typeof TYPES)[number];
      const change = [{ state: stateFor(type, step) }, { name: `Renamed ${step}` }, { tags: TAGS.filter(() => random(2) === 0) }, { attributes: { step } }][
        random(4)
      ];
      const updated = await call('PATCH', `/api/v1/resources/${id}`, change, { 'if-match': current.headers.etag as string });
      expect(allowed(updated.status), updated.body).toBe(true);
    } else if (choice < 8) {
      const deleted = await call('DELETE', `/api/v1/resources/${id}`);
      expect(allowed(deleted.status), deleted.body).toBe(true);
      if (resourceIds.includes(id)) resourceIds.splice(resourceIds.indexOf(id), 1);
    } else {
      expect((await call('POST', '/api/v1/events', { type: `custom.step.${step % 3}`, data: { step } })).status).toBe(201);
    }
  }

  it('serves from memory exactly what storage holds, after sequential and concurrent changes', async () => {
    // Reads before, between and after the changes, so the copies are made early and then followed.
    await call('GET', '/api/v1/resources');
    for (let step = 0; step < 60; step++) {
      await someChange(step);
      if (step % 10 === 0) await call('GET', '/api/v1/events?after=0&limit=1');
    }
    await Promise.all(Array.from({ length: 40 }, (_, index) => (index % 4 === 0 ? call('GET', '/api/v1/resources?limit=3') : someChange(100 + index, true))));
    for (let step = 200; step < 220; step++) await someChange(step);

    const newest = (await call('GET', '/api/v1/events?after=0&limit=1000')).json.cursor as number;
    expect(newest).toBeGreaterThan(80);
    const urls = readUrls([...resourceIds], newest);
    const fromMemory = await responsesOf(served, caller.key, urls);
    const fresh = await TestApp.start({ env: { DATABASE_URL: database.url } });
    try {
      const fromStorage = await responsesOf(fresh, caller.key, urls);
      expect(fromMemory).toEqual(fromStorage);
    } finally {
      await fresh.close();
    }
    // Only the made-up resource id is not found.
    expect(fromMemory.filter((response) => response.status !== 200).map((response) => response.url)).toEqual([`/api/v1/resources/res_${'x'.repeat(22)}`]);
  });

  it.skipIf(ON_POSTGRES)('answers resources and recent events from memory on SQLite: with their tables gone', async () => {
    // The second app of the test above wrote to the file: this one notices at its next read and
    // drops its copies; its own next commit starts its recent events again.
    await call('GET', '/api/v1/events?after=0&limit=1');
    const marker = await call('POST', '/api/v1/events', { type: 'custom.marker', data: {} });
    expect(marker.status).toBe(201);
    const memoryUrls = readUrls([...resourceIds], marker.json.id).filter((url) => {
      const after = /after=(\d+)/.exec(url);
      return !after || Number(after[1]) >= marker.json.id - 1;
    });
    const before = await responsesOf(served, caller.key, memoryUrls);
    // Renamed on the app's own connection: to the app this is its own write, so its copies stay.
    const { db } = served.context.storage;
    await sql`alter table resources rename to resources_hidden`.execute(db);
    await sql`alter table events rename to events_hidden`.execute(db);
    try {
      expect(await responsesOf(served, caller.key, memoryUrls)).toEqual(before);
      // What does read storage fails meanwhile: older events, and the snapshot.
      expect((await call('GET', `/api/v1/events?after=${marker.json.id - 2}`)).status).toBe(500);
      expect((await call('GET', '/api/v1/integrations/home-assistant/snapshot')).status).toBe(500);
    } finally {
      await sql`alter table resources_hidden rename to resources`.execute(db);
      await sql`alter table events_hidden rename to events`.execute(db);
    }
    expect((await call('GET', `/api/v1/events?after=${marker.json.id - 2}`)).status).toBe(200);
  });

  it.skipIf(ON_POSTGRES)('sees what another process wrote to the same SQLite file', async () => {
    const id = resourceIds[0]!;
    const seen = await call('GET', `/api/v1/resources/${id}`);
    const newest = (await call('GET', '/api/v1/events?after=0&limit=1000')).json.cursor as number;
    const other = await TestApp.start({ env: { DATABASE_URL: database.url } });
    try {
      const write = (method: string, url: string, body: unknown, headers?: Record<string, string>) =>
        other.request({ method, url, key: caller.key, body, headers });
      const changed = await write('PATCH', `/api/v1/resources/${id}`, { name: 'Changed elsewhere' });
      expect(changed.status, changed.body).toBe(200);
      const created = await write('POST', '/api/v1/resources', { name: 'Made elsewhere', type: 'switch', state: true });
      expect(created.status, created.body).toBe(201);
      const published = await write('POST', '/api/v1/events', { type: 'custom.elsewhere', data: {} });
      expect(published.status).toBe(201);

      // With no write of its own in between, this process notices through the file's data version.
      await sleep(EXTERNAL_WRITE_CHECK_MS + 1);
      expect((await call('GET', `/api/v1/resources/${id}`)).json).toEqual(changed.json);
      expect((await call('GET', `/api/v1/resources/${created.json.id}`)).json).toEqual(created.json);
      expect((await call('GET', '/api/v1/resources?limit=500')).json.data.at(-1)).toEqual(created.json);
      const page = await call('GET', `/api/v1/events?after=${newest}`);
      expect(page.json.data.map((event: { type: string }) => event.type)).toEqual(['resource.updated', 'resource.created', 'custom.elsewhere']);
      expect(page.json.data[2]).toEqual(published.json);

      // A write here, with no read before it, starts from what the other process wrote last.
      const changedAgain = await write('PATCH', `/api/v1/resources/${id}`, { name: 'Changed elsewhere again' });
      expect(changedAgain.status).toBe(200);
      const mine = await call(
        'PATCH',
        `/api/v1/resources/${id}`,
        { state: stateFor(seen.json.type, 999) },
        { 'if-match': changedAgain.headers.etag as string },
      );
      expect(mine.status, mine.body).toBe(200);
      expect(mine.json).toMatchObject({ name: 'Changed elsewhere again', version: seen.json.version + 3 });
      expect((await call('GET', `/api/v1/resources/${id}`)).json).toEqual(mine.json);
    } finally {
      await other.close();
    }
  });
});
