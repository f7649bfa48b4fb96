// Retention works in small steps: events past the window are deleted a batch at a time with a
// turn of the event loop between batches, so requests and streams are served while it runs, and
// a shutdown stops it between batches (the next run goes on from there). On both backends.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TestApp, type TestAccount } from '../support/app.js';

const RETENTION = 100;

async function storedIdsOf(app: TestApp, accountId: string): Promise<number[]> {
  const rows = await app.context.storage.db.selectFrom('events').select('id').where('account_id', '=', accountId).orderBy('id').execute();
  return rows.map((row) => Number(row.id));
}

/** `count` custom events, a few hundred to a transaction. */
async function publishTo(app: TestApp, accountId: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 250) {
    await app.context.writes.transaction(accountId, async (write) => {
      for (let index = start; index < Math.min(start + 250, count); index++) await write.append('custom.load', { index });
    });
  }
}

describe('retention in small steps', () => {
  let app: TestApp;
  let account: TestAccount;

  beforeAll(async () => {
    app = await TestApp.start({ env: { EVENT_RETENTION: String(RETENTION), RETENTION_INTERVAL_MS: '86400000', PRUNE_INTERVAL_MS: '86400000' } });
    account = await app.account();
  });

  afterAll(async () => {
    await app?.close();
  });

  const storedIds = (accountId = account.accountId) => storedIdsOf(app, accountId);
  const publish = (count: number, accountId = account.accountId) => publishTo(app, accountId, count);

  it('deletes past the window in batches, yielding to the event loop between them', async () => {
    await publish(2_100);
    let turns = 0;
    let counting = true;
    const countTurns = () => {
      if (!counting) return;
      turns++;
      setImmediate(countTurns);
    };
    countTurns();
    const served = app.request({ url: '/api/v1/events?after=2050&limit=5', key: account.key });
    const deleted = await app.context.services.events.prune({ batch: 100 });
    counting = false;
    expect(deleted).toBe(2_000);
    // On SQLite (synchronous statements) one statement for everything would leave no turn between;
    // twenty batches leave at least twenty. (PostgreSQL's round trips leave turns either way.)
    expect(turns).toBeGreaterThanOrEqual(20);
    expect((await served).status).toBe(200);
    const ids = await storedIds();
    expect(ids[0]).toBe(2_001);
    expect(ids).toHaveLength(RETENTION);
  });

  it('stops between batches when its signal is aborted, and the next run goes on', async () => {
    await publish(500);
    const stopping = new AbortController();
    const firstRun = app.context.services.events.prune({ batch: 100, signal: stopping.signal });
    stopping.abort();
    const deletedBeforeStop = await firstRun;
    expect(deletedBeforeStop).toBeLessThan(500);
    expect((await storedIds())[0]).toBe(2_001 + deletedBeforeStop);
    expect(deletedBeforeStop + (await app.context.services.events.prune({ batch: 100 }))).toBe(500);
    expect(await storedIds()).toEqual(Array.from({ length: RETENTION }, (_, index) => 2_501 + index));
  });

  it('prunes the accounts written since its last run, each to its window, and leaves the others to the sweep', async () => {
    const { events } = app.context.services;
    await events.pruneWritten();
    const [busy, quiet, small] = [await app.account(), await app.account(), await app.account()];
    await publish(350, busy.accountId);
    await publish(130, quiet.accountId);
    await publish(60, small.accountId);
    expect(await events.pruneWritten({ batch: 100 })).toBe(250 + 30);
    expect(await storedIds(busy.accountId)).toEqual(Array.from({ length: RETENTION }, (_, index) => 251 + index));
    expect(await storedIds(quiet.accountId)).toEqual(Array.from({ length: RETENTION }, (_, index) => 31 + index));
    expect(await storedIds(small.accountId)).toHaveLength(60);

    // A run stopped by shutdown forgets what it had not pruned: the quiet account is over its window
    // and no longer known as written. The next run prunes only what was written since (the busy
    // account's new excess); the sweep finds the quiet one.
    await publish(50, quiet.accountId);
    const stopped = new AbortController();
    stopped.abort();
    expect(await events.pruneWritten({ signal: stopped.signal })).toBe(0);
    await publish(40, busy.accountId);
    expect(await events.pruneWritten({ batch: 100 })).toBe(40);
    expect((await storedIds(busy.accountId))[0]).toBe(291);
    expect(await storedIds(quiet.accountId)).toHaveLength(RETENTION + 50);
    expect(await events.pruneWritten()).toBe(0);
    expect(await events.prune()).toBe(50);
    expect((await storedIds(quiet.accountId))[0]).toBe(81);
  });

  it('refuses a page read from storage that retention overtook, and only then reads the newest id again', async () => {
    const { events, eventReads: reads } = app.context.services;
    const reader = await app.account();
    await publish(250, reader.accountId);
    // A cursor of 150 was in the window while the newest id was 250; 50 more events and a prune later it is not.
    await publish(50, reader.accountId);
    await events.pruneWritten();
    const read = await reads.read(reader.accountId, { after: 150, upTo: 250, limit: 100 });
    expect(read[0]?.id).toBe(201);
    expect(await reads.expiredDuringRead(reader.accountId, 150, 250, read[0]?.id)).toBe(300);
    // A read that begins right after its cursor hid no deletion (the oldest ids go first): storage is not asked.
    const newestReads = vi.spyOn(reads, 'newestId');
    expect(await reads.expiredDuringRead(reader.accountId, 200, 300, 201)).toBeUndefined();
    expect(newestReads).not.toHaveBeenCalled();
    // One that begins later (a type filter, or nothing left) is judged by the newest id read again.
    expect(await reads.expiredDuringRead(reader.accountId, 200, 300, 250)).toBeUndefined();
    expect(await reads.expiredDuringRead(reader.accountId, 199, 300, 250)).toBe(300);
    expect(await reads.expiredDuringRead(reader.accountId, 199, 300, undefined)).toBe(300);
    // Nothing to read (the cursor at the newest id) is never refused here.
    expect(await reads.expiredDuringRead(reader.accountId, 300, 300, undefined)).toBeUndefined();
    expect(newestReads).toHaveBeenCalledTimes(3);
    newestReads.mockRestore();
  });

  /**
   * Makes the account's next read from storage lose the race with retention: just before it, `more`
   * events are written and pruned, so the window moves past a cursor that was checked inside it.
   */
  function raceNextStorageRead(accountId: string, more: number): void {
    const { events, eventReads: reads } = app.context.services;
    const read = reads.read.bind(reads);
    const spy = vi.spyOn(reads, 'read').mockImplementationOnce(async (forAccount, query) => {
      spy.mockRestore();
      await publish(more, accountId);
      await events.pruneWritten();
      return read(forAccount, query);
    });
  }

  it('answers 410 to a page whose cursor the window passed while it was read from storage, instead of skipping events', async () => {
    const { events, eventReads: reads } = app.context.services;
    const reader = await app.account(['events:read']);
    await publish(300, reader.accountId);
    // Memory holds the account's newest events; this page's storage path is taken as when it does not.
    const recent = (reads as unknown as { recent: { after: (...args: unknown[]) => unknown } }).recent;
    vi.spyOn(recent, 'after').mockReturnValueOnce(undefined);
    const older = (reads as unknown as { older: { after: (...args: unknown[]) => Promise<unknown> } }).older;
    const olderAfter = older.after.bind(older);
    vi.spyOn(older, 'after').mockImplementationOnce(async (...args: unknown[]) => {
      await publish(50, reader.accountId);
      await events.pruneWritten();
      return olderAfter(...args);
    });
    // 200 is the oldest cursor served when the page starts (newest 300); 50 events later it is 250.
    await expect(reads.pageJson(reader.accountId, { after: 200, limit: 10 })).rejects.toMatchObject({ code: 'cursor_expired' });
    vi.restoreAllMocks();
    const page = await app.request({ url: '/api/v1/events?after=250&limit=10', key: reader.key });
    expect(page.status).toBe(200);
    expect(page.json.data[0].id).toBe(251);
  });

  it('ends a stream whose replay the window passed, and its reconnect is answered 410', async () => {
    const base = await app.listen();
    const reader = await app.account(['events:read']);
    await publish(300, reader.accountId);
    raceNextStorageRead(reader.accountId, 50);
    // A stream that stayed open would fail this test in 10 s rather than hang it.
    const response = await fetch(`${base}/api/v1/events/stream?after=200`, {
      headers: { authorization: `Bearer ${reader.key}` },
      signal: AbortSignal.timeout(10_000),
    });
    expect(response.status).toBe(200);
    // The stream names its starting point, then ends without sending an event: none after 200 is left.
    const body = await response.text();
    expect(body).toContain('id: 200');
    expect(body).not.toContain('event:');
    const again = await fetch(`${base}/api/v1/events/stream`, { headers: { authorization: `Bearer ${reader.key}`, 'last-event-id': '200' } });
    expect(again.status).toBe(410);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe('cursor_expired');
  });
});

describe('pruning as the server runs', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await TestApp.start({ env: { EVENT_RETENTION: String(RETENTION), RETENTION_INTERVAL_MS: '86400000', PRUNE_INTERVAL_MS: '50' } });
  });

  afterAll(async () => {
    await app?.close();
  });

  it('deletes the events past the window of an account just written, without the sweep', async () => {
    const account = await app.account(['events:write']);
    for (let index = 0; index < 3; index++) {
      await publishTo(app, account.accountId, 150);
      const newest = (index + 1) * 150;
      await vi.waitFor(
        async () => expect(await storedIdsOf(app, account.accountId)).toEqual(Array.from({ length: RETENTION }, (_, at) => newest - RETENTION + 1 + at)),
        {
          timeout: 30_000,
          interval: 20,
        },
      );
    }
  });
});
