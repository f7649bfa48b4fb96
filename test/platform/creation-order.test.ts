// Keys, apps, webhooks and schedules list in creation order even when made in the same millisecond
// (their timestamps tie and their ids are random), and migration 0009 numbers rows made before it
// in the order they used to list in.
import { type Kysely, Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { ManualClock, useTestApp } from '../support/app.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { openStorage } from '../../src/storage/database.js';

describe('creation order within one millisecond', () => {
  // The clock never moves: every record of this file is made at the same instant.
  const app = useTestApp({ clock: new ManualClock(new Date('2030-01-01T00:00:00.000Z')), env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const names = ['one', 'two', 'three', 'four', 'five', 'six'];

  const bodies: Record<string, (name: string) => Record<string, unknown>> = {
    '/api/v1/keys': (name) => ({ name, scopes: ['resources:read'] }),
    '/api/v1/apps': (name) => ({ name, type: 'public', redirectUris: ['https://app.example.com/callback'], scopes: ['resources:read'] }),
    '/api/v1/webhooks': (name) => ({ name, url: 'https://hooks.example.com/in', events: ['resource.created'] }),
    '/api/v1/schedules': (name) => ({ name, cron: '0 * * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: {} } }),
  };

  for (const [url, body] of Object.entries(bodies)) {
    it(`GET ${url} lists what was made, in the order it was made`, async () => {
      const caller = await app().account();
      const made: string[] = [];
      for (const name of names) {
        const created = await app().request({ method: 'POST', url, key: caller.key, body: body(name) });
        expect(created.status, created.body).toBe(201);
        made.push(created.json.id);
      }
      const list = await app().request({ url, key: caller.key });
      expect(list.status).toBe(200);
      const listed = (list.json.data as Array<{ id: string; createdAt: string }>).filter((item) => made.includes(item.id));
      expect(new Set(listed.map((item) => item.createdAt)).size).toBe(1);
      expect(listed.map((item) => item.id)).toEqual(made);
    });
  }
});

describe('migration 0009', () => {
  it('numbers existing rows per account by their old listing order: time, then id', async () => {
    const storage = openStorage('sqlite::memory:');
    const db = storage.db as unknown as Kysely<any>;
    try {
      const provider = { getMigrations: async () => migrations };
      expect((await new Migrator({ db, provider }).migrateTo('0008_connection_expiry')).error).toBeUndefined();
      const at = (second: number) => `2030-01-01T00:00:0${second}.000Z`;
      await db
        .insertInto('accounts')
        .values([
          { id: 'acc_a', name: 'a', created_at: at(0) },
          { id: 'acc_b', name: 'b', created_at: at(0) },
        ])
        .execute();
      const key = (id: string, accountId: string, createdAt: string) => ({
        id,
        account_id: accountId,
        name: id,
        key_hash: `hash_${id}`,
        scopes: '[]',
        created_at: createdAt,
        expires_at: '2031-01-01T00:00:00.000Z',
      });
      await db
        .insertInto('api_keys')
        .values([key('key_c', 'acc_a', at(1)), key('key_b', 'acc_a', at(1)), key('key_a', 'acc_a', at(2)), key('key_z', 'acc_b', at(0))])
        .execute();
      expect((await new Migrator({ db, provider }).migrateToLatest()).error).toBeUndefined();
      const rows = await sql<{ id: string; created_seq: number }>`select id, created_seq from api_keys order by account_id, created_seq`.execute(db);
      expect(rows.rows).toEqual([
        { id: 'key_b', created_seq: 1 },
        { id: 'key_c', created_seq: 2 },
        { id: 'key_a', created_seq: 3 },
        { id: 'key_z', created_seq: 1 },
      ]);
    } finally {
      await storage.close();
    }
  });
});
