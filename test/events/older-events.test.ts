// Pages from older cursors, beyond the recent events in memory: served from chunks of
// consecutive events read once and kept, on both backends (several processes:
// test/multiprocess). A page from any cursor, with or without a type filter, holds exactly the
// events after it, in order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_CHUNK, InMemoryOlderEvents, type EventEntry } from '../../src/areas/events/older.js';
import { TestApp, type TestAccount } from '../support/app.js';

const TYPES = ['custom.a', 'custom.b', 'custom.c.x'];

describe('InMemoryOlderEvents', () => {
  /** A log of `count` events; `reads` records each storage read. */
  function log(count: number) {
    const state = { count, reads: [] as Array<[number, number]> };
    const entry = (id: number): EventEntry => ({ id, type: TYPES[id % 3]!, json: Buffer.from(`{"id":${id}}`) });
    const load = async (_accountId: string, from: number, upTo: number) => {
      state.reads.push([from, upTo]);
      return Array.from({ length: Math.max(0, Math.min(upTo, state.count) - from + 1) }, (_, index) => entry(from + index));
    };
    return { state, load };
  }
  const ids = (page: { events: Array<{ id: number }> }) => page.events.map((event) => event.id);

  it('reads a chunk once and answers from it after, across chunk boundaries', async () => {
    const storage = log(1_000);
    const model = new InMemoryOlderEvents(storage.load);
    expect(ids(await model.after('acc', 150, 100, undefined, 1_000))).toEqual(Array.from({ length: 100 }, (_, index) => 151 + index));
    expect(storage.state.reads).toEqual([
      [101, 200],
      [201, 300],
    ]);
    expect(ids(await model.after('acc', 120, 50, undefined, 1_000))).toEqual(Array.from({ length: 50 }, (_, index) => 121 + index));
    expect(storage.state.reads).toHaveLength(2);
  });

  it('reads the chunk at the head, not yet complete, every time and keeps nothing of it', async () => {
    const storage = log(950);
    const model = new InMemoryOlderEvents(storage.load);
    expect(ids(await model.after('acc', 940, 100, undefined, 950))).toEqual(Array.from({ length: 10 }, (_, index) => 941 + index));
    storage.state.count = 1_000;
    expect(ids(await model.after('acc', 940, 100, undefined, 1_000))).toEqual(Array.from({ length: 60 }, (_, index) => 941 + index));
    expect(storage.state.reads).toEqual([
      [901, 950],
      [901, 1_000],
    ]);
  });

  it('filters by type and stops after a few chunk reads, saying where storage goes on', async () => {
    const storage = log(2_000);
    const model = new InMemoryOlderEvents(storage.load);
    const page = await model.after('acc', 0, 1_000, { value: 'custom.a', prefix: false }, 2_000);
    expect(page.events.every((event) => (event as EventEntry).type === 'custom.a')).toBe(true);
    expect(page.continueAfter).toBe(4 * EVENT_CHUNK);
    expect(ids(page)).toEqual(Array.from({ length: 400 }, (_, index) => index + 1).filter((id) => id % 3 === 0));
  });

  it('forgets the least recently used chunks past its budget', async () => {
    const storage = log(1_000);
    const model = new InMemoryOlderEvents(storage.load, 3 * (100 * (8 + 64) + 64));
    for (const after of [0, 100, 200, 300, 0]) await model.after('acc', after, 100, undefined, 1_000);
    // The fourth chunk pushed the first out, so it was read again.
    expect(storage.state.reads.map(([from]) => from)).toEqual([1, 101, 201, 301, 1]);
  });
});

describe('pages from any cursor through the real server', () => {
  let app: TestApp;
  let account: TestAccount;
  const published: Array<{ id: number; type: string }> = [];

  beforeAll(async () => {
    app = await TestApp.start();
    account = await app.account();
    for (let start = 0; start < 2_600; start += 200) {
      const events = await app.context.writes.transaction(account.accountId, async (write) => {
        const appended = [];
        for (let index = start; index < start + 200; index++) appended.push(await write.append(TYPES[index % 3]!, { index }));
        return appended;
      });
      published.push(...events.map(({ id, type }) => ({ id, type })));
    }
  }, 60_000);

  afterAll(async () => {
    await app?.close();
  });

  it('answers every cursor and filter with exactly the events after it', async () => {
    const cursors = [0, 1, 99, 100, 101, 250, 777, 1_234, 1_599, 1_600, 1_650, 2_000, 2_499, 2_550, 2_599, 2_600];
    for (const type of [undefined, 'custom.a', 'custom.c.*']) {
      for (const after of cursors) {
        for (const limit of [1, 100, 1_000]) {
          const query = `/api/v1/events?after=${after}&limit=${limit}${type ? `&type=${type}` : ''}`;
          // Twice: the first read fills chunks, the second is answered from them.
          for (let round = 0; round < 2; round++) {
            const response = await app.request({ url: query, key: account.key });
            expect(response.status, query).toBe(200);
            const matching = published.filter(
              (event) => event.id > after && (!type || (type.endsWith('.*') ? event.type.startsWith(type.slice(0, -1)) : event.type === type)),
            );
            const expected = matching.slice(0, limit);
            expect(
              response.json.data.map((event: { id: number; type: string }) => [event.id, event.type]),
              query,
            ).toEqual(expected.map((event) => [event.id, event.type]));
            expect(response.json.hasMore, query).toBe(matching.length > limit);
            expect(response.json.cursor, query).toBe(expected.at(-1)?.id ?? Math.max(2_600, after));
          }
        }
      }
    }
  });
});
