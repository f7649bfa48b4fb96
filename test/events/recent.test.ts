// The in-memory recent events (src/areas/events/recent.ts): what it holds, and when it declines to
// answer so that storage does. The HTTP tests in events.test.ts and read-models.test.ts check the
// pages it serves against storage through the real server.
import { describe, expect, it, vi } from 'vitest';
import { InMemoryRecentEvents, RECENT_EVENTS_PER_ACCOUNT } from '../../src/areas/events/recent.js';
import type { Event } from '../../src/areas/events/event.js';
import { PACKED_CHUNK_MAX } from '../../src/platform/json-body.js';
import { ExternalWrites, EXTERNAL_WRITE_CHECK_MS } from '../../src/storage/external-writes.js';

const event = (id: number, type = 'custom.tick'): Event => ({ id, type, data: { n: id }, createdAt: '2026-11-23T10:00:00.000Z' });
const events = (from: number, to: number, type?: string) => Array.from({ length: to - from + 1 }, (_, index) => event(from + index, type));
const ids = (page: { events: Array<{ id: number }> } | undefined) => page?.events.map((entry) => entry.id);
/** An event whose JSON is too large to share a chunk: it gets a buffer of its own, and weighs exactly its bytes. */
const alone = (id: number): Event => ({ id, type: 'custom.alone', data: { text: 'x'.repeat(PACKED_CHUNK_MAX / 4) }, createdAt: '2026-11-23T10:00:00.000Z' });
const alones = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => alone(from + index));
type Weighed = { runs: { peek(id: string): { weight: number } | undefined } };
const weightOf = (recent: InMemoryRecentEvents, accountId = 'acc_1') => (recent as unknown as Weighed).runs.peek(accountId)?.weight;

describe('InMemoryRecentEvents', () => {
  it('answers only from the first event it saw on, with the API JSON of each event', () => {
    const recent = new InMemoryRecentEvents(10_000);
    expect(recent.after('acc_1', 0, 10, undefined)).toBeUndefined();
    recent.committed('acc_1', events(5, 9));
    // Event 4 and before were committed before this process saw any: storage answers.
    expect(recent.after('acc_1', 3, 10, undefined)).toBeUndefined();
    const page = recent.after('acc_1', 4, 10, undefined);
    expect(page?.newest).toBe(9);
    expect(ids(page)).toEqual([5, 6, 7, 8, 9]);
    expect(JSON.parse(page!.events[0]!.json.toString())).toEqual(event(5));
    expect(Object.keys(JSON.parse(page!.events[0]!.json.toString()))).toEqual(['id', 'type', 'data', 'createdAt']);
    expect(ids(recent.after('acc_1', 7, 1, undefined))).toEqual([8]);
    expect(recent.after('acc_1', 9, 10, undefined)).toEqual({ newest: 9, events: [] });
    expect(recent.after('acc_1', 50, 10, undefined)).toEqual({ newest: 9, events: [] });
    expect(recent.after('acc_2', 0, 10, undefined)).toBeUndefined();
  });

  it('filters by exact type and by prefix', () => {
    const recent = new InMemoryRecentEvents(10_000);
    recent.committed('acc_1', [event(1, 'resource.created'), event(2, 'custom.a'), event(3, 'resource.updated'), event(4, 'custom.b.c')]);
    expect(ids(recent.after('acc_1', 0, 10, { value: 'custom.', prefix: true }))).toEqual([2, 4]);
    expect(ids(recent.after('acc_1', 0, 10, { value: 'resource.updated', prefix: false }))).toEqual([3]);
    expect(ids(recent.after('acc_1', 2, 1, { value: 'custom.', prefix: true }))).toEqual([4]);
  });

  it("does not take its own commit for the newest when another process's later commit was noticed before it got here", async () => {
    // Two servers on one SQLite file (schedules/several-processes.test.ts found it): this one commits
    // event 4, the other commits 5 and 6, a read here notices that (and drops everything), and only
    // then does event 4's after-commit bookkeeping arrive.
    let dataVersion = 1;
    const afterCheckInterval = () => new Promise((resolvePromise) => setTimeout(resolvePromise, EXTERNAL_WRITE_CHECK_MS + 1));
    const recent = new InMemoryRecentEvents(10_000, { externalWrites: new ExternalWrites(() => dataVersion) });
    recent.committed('acc_1', events(1, 3), recent.mark());
    expect(recent.newest('acc_1')).toBe(3);
    const mark = recent.mark();
    dataVersion++;
    await afterCheckInterval();
    expect(recent.newest('acc_1')).toBeUndefined();
    recent.committed('acc_1', [event(4)], mark);
    expect(recent.newest('acc_1')).toBeUndefined();
    expect(recent.after('acc_1', 3, 10, undefined)).toBeUndefined();
    // This process's next commit comes after everything noticed: a run from it is trusted again.
    await afterCheckInterval();
    recent.committed('acc_1', [event(7)], recent.mark());
    expect(recent.newest('acc_1')).toBe(7);
    expect(ids(recent.after('acc_1', 6, 10, undefined))).toEqual([7]);
  });

  it('starts a new run at a gap, so what it holds stays consecutive, and joins the two when a late announcement fills it', () => {
    const recent = new InMemoryRecentEvents(10_000);
    recent.committed('acc_1', events(1, 3));
    // Event 4's commit is announced after event 5's.
    recent.committed('acc_1', [event(5)]);
    expect(recent.after('acc_1', 3, 10, undefined)).toBeUndefined();
    expect(ids(recent.after('acc_1', 4, 10, undefined))).toEqual([5]);
    recent.committed('acc_1', [event(4)]);
    expect(ids(recent.after('acc_1', 0, 10, undefined))).toEqual([1, 2, 3, 4, 5]);
    recent.committed('acc_1', [event(5), event(6)]);
    expect(ids(recent.after('acc_1', 0, 10, undefined))).toEqual([1, 2, 3, 4, 5, 6]);
    // Two late ones (7 and 8 after 9), in order: joined once both are in.
    recent.committed('acc_1', [event(9)]);
    recent.committed('acc_1', [event(7)]);
    expect(recent.after('acc_1', 6, 10, undefined)).toBeUndefined();
    expect(ids(recent.after('acc_1', 8, 10, undefined))).toEqual([9]);
    recent.committed('acc_1', [event(8)]);
    expect(ids(recent.after('acc_1', 0, 20, undefined))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // A gap that never fills (another process's commit, 10): the new run answers from 11 on; a second
    // gap drops the run before the first, which can no longer join.
    recent.committed('acc_1', events(11, 12));
    expect(ids(recent.after('acc_1', 10, 10, undefined))).toEqual([11, 12]);
    recent.committed('acc_1', [event(14)]);
    recent.committed('acc_1', [event(10)]);
    recent.committed('acc_1', [event(13)]);
    expect(ids(recent.after('acc_1', 10, 10, undefined))).toEqual([11, 12, 13, 14]);
    expect(recent.after('acc_1', 9, 10, undefined)).toBeUndefined();
  });

  it('counts the run kept before a gap in what the account weighs', () => {
    /** The same events announced in order, for comparison (each in a buffer of its own, so weights add up exactly). */
    const inOrder = (count: number) => {
      const recent = new InMemoryRecentEvents(10_000);
      recent.committed('acc_1', alones(1, count));
      return weightOf(recent)!;
    };
    const recent = new InMemoryRecentEvents(10_000);
    recent.committed('acc_1', alones(1, 15));
    recent.committed('acc_1', [alone(17)]);
    // The new run holds one event, and the fifteen before the gap are still counted.
    expect(weightOf(recent)).toBe(inOrder(17) - (inOrder(16) - inOrder(15)));
    recent.committed('acc_1', [alone(16)]);
    expect(ids(recent.after('acc_1', 0, 100, undefined))).toHaveLength(17);
    expect(weightOf(recent)).toBe(inOrder(17));
    // A second gap leaves the first run behind: only the run before the newest gap is counted.
    recent.committed('acc_1', [alone(19)]);
    recent.committed('acc_1', [alone(21)]);
    expect(weightOf(recent)).toBe(inOrder(21) - inOrder(20) + inOrder(19) - inOrder(18));
  });

  it('packs small events into shared chunks, and weighs at least the chunks it keeps alive, at most two chunks more than its events', () => {
    const recent = new InMemoryRecentEvents(10_000);
    // Three times the capacity: the oldest chunks are dropped as their events are.
    for (let id = 1; id <= RECENT_EVENTS_PER_ACCOUNT * 3; id++) recent.committed('acc_1', [event(id)]);
    const held = recent.after('acc_1', RECENT_EVENTS_PER_ACCOUNT * 2, 10_000, undefined)?.events ?? [];
    expect(held).toHaveLength(RECENT_EVENTS_PER_ACCOUNT);
    const bytes = held.reduce((total, entry) => total + entry.json.length + 64, 0);
    const chunks = new Set(held.map((entry) => entry.json.buffer));
    const pinned = [...chunks].reduce((total, chunk) => total + chunk.byteLength, 0) + 64 * held.length;
    // A thousand events of about 110 bytes in as many 64 KiB chunks as they fill and one more, not a thousand buffers.
    expect(chunks.size).toBeLessThanOrEqual(Math.ceil(bytes / PACKED_CHUNK_MAX) + 1);
    expect(weightOf(recent)).toBeGreaterThanOrEqual(pinned);
    expect(weightOf(recent)).toBeLessThanOrEqual(bytes + 2 * PACKED_CHUNK_MAX);
  });

  it(`keeps the newest ${RECENT_EVENTS_PER_ACCOUNT} events of an account, or fewer when retention is lower`, () => {
    const recent = new InMemoryRecentEvents(10_000);
    const newest = RECENT_EVENTS_PER_ACCOUNT * 2 + 17;
    for (let id = 1; id <= newest; id++) recent.committed('acc_1', [event(id)]);
    const oldestHeld = newest - RECENT_EVENTS_PER_ACCOUNT + 1;
    expect(recent.after('acc_1', oldestHeld - 2, 10, undefined)).toBeUndefined();
    expect(ids(recent.after('acc_1', oldestHeld - 1, 3, undefined))).toEqual([oldestHeld, oldestHeld + 1, oldestHeld + 2]);
    expect(recent.after('acc_1', oldestHeld - 1, 5000, undefined)?.events).toHaveLength(RECENT_EVENTS_PER_ACCOUNT);

    const short = new InMemoryRecentEvents(5);
    short.committed('acc_1', events(1, 20));
    expect(short.after('acc_1', 14, 10, undefined)).toBeUndefined();
    expect(ids(short.after('acc_1', 15, 10, undefined))).toEqual([16, 17, 18, 19, 20]);
  });

  it('forgets the least recently used accounts past its memory budget', () => {
    const big = alone;
    // Two events of about 16.5 KB an account: the cache counts 80,000 of 90,000, so two accounts fit and a third does not.
    const recent = new InMemoryRecentEvents(10_000, { budget: 90_000 });
    recent.committed('acc_1', [big(1), big(2)]);
    recent.committed('acc_2', [big(1), big(2)]);
    expect(recent.after('acc_1', 0, 10, undefined)).toBeDefined();
    recent.committed('acc_3', [big(1), big(2)]);
    // acc_1 was read last, so acc_2 went.
    expect(recent.after('acc_2', 0, 10, undefined)).toBeUndefined();
    expect(ids(recent.after('acc_1', 0, 10, undefined))).toEqual([1, 2]);
    expect(ids(recent.after('acc_3', 0, 10, undefined))).toEqual([1, 2]);
  });

  it('counts what a run weighs as it grows one commit at a time, and stays within its budget', () => {
    const sized = (id: number): Event => ({ id, type: 'custom.sized', data: { text: 'x'.repeat(200) }, createdAt: '2026-11-23T10:00:00.000Z' });
    const budget = 100_000;
    const recent = new InMemoryRecentEvents(10_000, { budget });
    // Three accounts of 100 events (about 34 KB each), one commit at a time, in turns: the three
    // weigh more than the budget, so the least recently written one is forgotten.
    for (let id = 1; id <= 100; id++) for (const account of ['acc_1', 'acc_2', 'acc_3']) recent.committed(account, [sized(id)]);
    let bytes = 0;
    const whole: string[] = [];
    for (const account of ['acc_1', 'acc_2', 'acc_3']) {
      const page = recent.after(account, 0, 1_000, undefined);
      if (page) whole.push(account);
      const held = recent.after(account, 99, 1, undefined) ? (recent.after(account, 0, 1_000, undefined)?.events ?? []) : [];
      bytes += held.reduce((total, entry) => total + entry.json.length + 64, 0);
    }
    expect(bytes).toBeLessThanOrEqual(budget);
    expect(whole).not.toContain('acc_1');
    expect(whole).toContain('acc_3');
  });
});

describe('InMemoryRecentEvents shared by several processes (PostgreSQL)', () => {
  const sharedLog = () => {
    const log = { newest: 0, asked: 0 };
    const newestId = async () => {
      log.asked++;
      return log.newest;
    };
    return { log, others: { newestId } };
  };

  it("answers until it hears of another process's commit past its run, then leaves the page to storage", () => {
    const { log, others } = sharedLog();
    const recent = new InMemoryRecentEvents(10_000, { others });
    recent.committed('acc_1', events(1, 10));
    // The newest id its own commits reached, for pages of older events too.
    expect(recent.newest('acc_1')).toBe(10);
    expect(recent.after('acc_1', 5, 100, undefined)).toEqual({ newest: 10, events: expect.any(Array) });
    expect(ids(recent.after('acc_1', 5, 100, undefined))).toEqual([6, 7, 8, 9, 10]);
    // Its own notification: nothing new.
    recent.heard('acc_1', 10);
    expect(ids(recent.after('acc_1', 8, 100, undefined))).toEqual([9, 10]);
    // Another process committed 11 and 12: storage is asked for the newest id too.
    recent.heard('acc_1', 12);
    expect(recent.after('acc_1', 5, 100, undefined)).toBeUndefined();
    expect(recent.newest('acc_1')).toBeUndefined();
    // This process's next commit is 13: a new run starts there, past what was heard of.
    recent.committed('acc_1', events(13, 14));
    expect(recent.after('acc_1', 5, 100, undefined)).toBeUndefined();
    expect(ids(recent.after('acc_1', 12, 100, undefined))).toEqual([13, 14]);
    // Another process committed 15 and 16; what was heard of passes to the run that starts at 17.
    recent.heard('acc_1', 16);
    expect(recent.after('acc_1', 12, 100, undefined)).toBeUndefined();
    recent.committed('acc_1', events(17, 17));
    expect(ids(recent.after('acc_1', 16, 100, undefined))).toEqual([17]);
    recent.heard('acc_1', 18);
    expect(recent.after('acc_1', 16, 100, undefined)).toBeUndefined();
    expect(log.asked).toBe(0);
  });

  it('keeps nothing while notifications may be missed, and confirms the newest id with storage once in a while', async () => {
    const { log, others } = sharedLog();
    // Long enough that no pause of a busy machine before the first read below makes a confirmation due.
    const confirmMs = 500;
    const recent = new InMemoryRecentEvents(10_000, { others, confirmMs });
    recent.committed('acc_1', events(1, 3));
    recent.lost();
    expect(recent.after('acc_1', 0, 10, undefined)).toBeUndefined();
    expect(recent.newest('acc_1')).toBeUndefined();
    // A commit of this process while blind is not kept either.
    const mark = recent.mark();
    recent.committed('acc_1', events(4, 4), mark);
    expect(recent.after('acc_1', 3, 10, undefined)).toBeUndefined();
    recent.regained();
    recent.committed('acc_1', events(5, 6));
    expect(ids(recent.after('acc_1', 4, 10, undefined))).toEqual([5, 6]);
    // A commit whose notification never came: found by the confirmation.
    log.newest = 7;
    await new Promise((resolve) => setTimeout(resolve, confirmMs + 10));
    expect(ids(recent.after('acc_1', 4, 10, undefined))).toEqual([5, 6]);
    await vi.waitFor(() => expect(recent.after('acc_1', 4, 10, undefined)).toBeUndefined());
    expect(log.asked).toBe(1);
  });
});
