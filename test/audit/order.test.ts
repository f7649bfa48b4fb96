// GET /api/v1/audit?order=desc: newest first, paged with the same `after=<cursor>` loop as oldest
// first, through the HTTP server (on PostgreSQL too with TEST_DATABASE_URL).
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp, type TestAccount } from '../support/app.js';
import { expectError } from '../support/expect.js';

interface Page {
  data: Array<{ id: string; type: string }>;
  cursor: number;
  hasMore: boolean;
}

describe('GET /api/v1/audit?order=desc', () => {
  const app = useTestApp();
  let caller: TestAccount;

  const read = async (query: string): Promise<Page> => {
    const response = await app().request({ url: `/api/v1/audit?${query}`, key: caller.key });
    expect(response.status, response.body).toBe(200);
    return response.json;
  };

  /** Every record, page by page, with `after=<cursor>` until no page follows. */
  const readAll = async (query: string, limit: number): Promise<string[]> => {
    const ids: string[] = [];
    let after = 0;
    for (let pages = 0; pages < 100; pages++) {
      const page = await read(`${query}&limit=${limit}&after=${after}`);
      ids.push(...page.data.map((record) => record.id));
      if (!page.hasMore) return ids;
      after = page.cursor;
    }
    throw new Error('paging did not end');
  };

  beforeAll(async () => {
    // An account with some history: keys made, renamed and revoked, a webhook-free app.
    caller = await app().account();
    for (const name of ['one', 'two', 'three', 'four']) {
      const key = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name, scopes: [] } });
      if (name === 'two') await app().request({ method: 'PATCH', url: `/api/v1/keys/${key.json.id}`, key: caller.key, body: { name: 'second' } });
      if (name !== 'four') await app().request({ method: 'DELETE', url: `/api/v1/keys/${key.json.id}`, key: caller.key });
    }
  });

  it('reads newest first from the newest record; the next page is after=<cursor>, as oldest first', async () => {
    const oldestFirst = (await read('order=asc&limit=1000')).data.map((record) => record.id);
    expect(oldestFirst.length).toBeGreaterThan(8);
    const newest = await read('order=desc&limit=3');
    expect(newest.data.map((record) => record.id)).toEqual(oldestFirst.slice(-3).reverse());
    expect(newest.hasMore).toBe(true);
    const next = await read(`order=desc&limit=3&after=${newest.cursor}`);
    expect(next.data.map((record) => record.id)).toEqual(oldestFirst.slice(-6, -3).reverse());
    expect(next.cursor).toBeLessThan(newest.cursor);
    // The default is oldest first, as before.
    expect((await read('limit=1000')).data.map((record) => record.id)).toEqual(oldestFirst);
  });

  it('ends at the oldest record: the last page has no more, and reading past it is empty with the cursor kept', async () => {
    const all = await read('order=desc&limit=1000');
    expect(all.hasMore).toBe(false);
    const past = await read(`order=desc&after=${all.cursor}`);
    expect(past).toEqual({ data: [], cursor: all.cursor, hasMore: false });
    expect(all.data.at(-1)?.type).toBe('account.created');
  });

  it('keeps its pages steady while records are added: they are newer than the cursor, and a new read from 0 shows them first', async () => {
    const first = await read('order=desc&limit=2');
    const added = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'meanwhile', scopes: [] } });
    expect(added.status).toBe(201);
    const second = await read(`order=desc&limit=2&after=${first.cursor}`);
    const now = (await read('order=desc&limit=1000')).data;
    expect(now[0]).toMatchObject({ type: 'key.created' });
    // After the new record come the first page and then exactly the second: nothing slipped in.
    expect(now.slice(1, 5).map((record) => record.id)).toEqual([...first.data, ...second.data].map((record) => record.id));
  });

  it('pages to the same records as oldest first, reversed, for any page size and type filter (generated)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 7 }),
        fc.constantFrom('', 'key.*', 'key.created', 'key.updated', 'key.revoked', 'account.*', 'app.*'),
        async (limit, type) => {
          const filter = type ? `&type=${encodeURIComponent(type)}` : '';
          const ascending = await readAll(`order=asc${filter}`, limit);
          const descending = await readAll(`order=desc${filter}`, limit);
          expect(descending).toEqual([...ascending].reverse());
          expect(new Set(descending).size).toBe(descending.length);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('refuses an order it does not know (400), naming the parameter', async () => {
    const response = await app().request({ url: '/api/v1/audit?order=newest', key: caller.key });
    expectError(response, 400, 'invalid_request');
    expect(JSON.stringify(response.json.error.details)).toContain('order');
  });
});
