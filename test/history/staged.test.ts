// The points of live writes are staged in the write's own transaction and moved into their series
// (storage/history-staged.ts): every second by the background task, before any read (every other
// history test reads right after writing), and, after a restart, whatever a stopped server left
// staged. Through the real server on the suite's backend.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedDatabase, TestApp } from '../support/app.js';
import { until } from '../support/wait.js';

type Json = Record<string, unknown>;
let database: { url: string; drop: () => Promise<void> };

beforeAll(async () => {
  // SQLite: a file, which outlives the first server.
  database = await sharedDatabase();
});

afterAll(async () => database?.drop());

async function staged(app: TestApp): Promise<number> {
  const row = await app.context.storage.db
    .selectFrom('history_staged')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function pointsInSeries(app: TestApp, resourceId: string): Promise<number> {
  const row = await app.context.storage.db
    .selectFrom('history_points')
    .innerJoin('history_series', 'history_series.key', 'history_points.series')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('history_series.resource_id', '=', resourceId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('staged points', () => {
  it('are moved into their series by the background task, nothing left staged', async () => {
    const app = await TestApp.start({ env: { DATABASE_URL: database.url } });
    try {
      await app.listenForRequests();
      const caller = await app.account();
      const created = await app.request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'm', type: 'sensor', state: 0 } });
      expect(created.status).toBe(201);
      const id = (created.json as Json).id as string;
      for (let state = 1; state <= 5; state++) {
        expect((await app.request({ method: 'PATCH', url: `/api/v1/resources/${id}`, key: caller.key, body: { state } })).status).toBe(200);
      }
      // No read of history here: only the task moves them.
      await until(async () => (await staged(app)) === 0 && (await pointsInSeries(app, id)) >= 1, 'the staged points moved', 10_000);
      const points = await app.request({ method: 'GET', url: `/api/v1/resources/${id}/history`, key: caller.key });
      expect((points.json as { data: unknown[] }).data).toHaveLength(6);
      expect(await pointsInSeries(app, id)).toBe(6);
    } finally {
      await app.close();
    }
  });

  it('left staged by a server that stopped are read after a restart: the later of two at one time, none of a resource gone', async () => {
    const first = await TestApp.start({ env: { DATABASE_URL: database.url } });
    const caller = await first.account();
    const created = await first.request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'r', type: 'sensor', state: 0 } });
    const id = (created.json as Json).id as string;
    const createdAt = Date.parse((created.json as Json).updatedAt as string);
    // As a server leaves them when it stops between a write and the next move.
    await first.context.storage.db
      .insertInto('history_staged')
      .values([
        { resource_id: id, at: createdAt - 2000, value: 1, text: null },
        { resource_id: id, at: createdAt - 1000, value: 2, text: null },
        { resource_id: id, at: createdAt - 1000, value: 3, text: null },
        { resource_id: 'res_gone', at: createdAt - 1000, value: 4, text: null },
      ])
      .execute();
    await first.close();

    const second = await TestApp.start({ env: { DATABASE_URL: database.url } });
    try {
      const from = new Date(createdAt - 60_000).toISOString();
      const read = await second.request({ method: 'GET', url: `/api/v1/resources/${id}/history?from=${from}`, key: caller.key });
      expect(read.status, read.body).toBe(200);
      expect((read.json as { data: unknown[] }).data).toEqual([
        { at: new Date(createdAt - 2000).toISOString(), state: 1 },
        { at: new Date(createdAt - 1000).toISOString(), state: 3 },
        { at: new Date(createdAt).toISOString(), state: 0 },
      ]);
      expect(await staged(second)).toBe(0);
    } finally {
      await second.close();
    }
  });
});
