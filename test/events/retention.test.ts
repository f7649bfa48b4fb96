// Retention works in small steps: events past the window are deleted a batch at a time with a
// turn of the event loop between batches, so requests and streams are served while it runs, and
// a shutdown stops it between batches (the next run goes on from there). On both backends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestApp, type TestAccount } from '../support/app.js';

const RETENTION = 100;

describe('retention in small steps', () => {
  let app: TestApp;
  let account: TestAccount;

  beforeAll(async () => {
    app = await TestApp.start({ env: { EVENT_RETENTION: String(RETENTION), RETENTION_INTERVAL_MS: '86400000' } });
    account = await app.account();
  });

  afterAll(async () => {
    await app?.close();
  });

  const storedIds = async () =>
    (await app.context.storage.db.selectFrom('events').select('id').where('account_id', '=', account.accountId).orderBy('id').execute()).map((row) =>
      Number(row.id),
    );

  /** `count` custom events, a few hundred to a transaction. */
  async function publish(count: number): Promise<void> {
    const { events } = app.context.services;
    for (let start = 0; start < count; start += 250) {
      await events.transact(account.accountId, async (writer) => {
        for (let index = start; index < Math.min(start + 250, count); index++) await writer.append('custom.load', { index });
      });
    }
  }

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
});
