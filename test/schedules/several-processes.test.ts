// Schedules with several server processes on one database: two apps sharing a SQLite file (or,
// with TEST_DATABASE_URL=postgres://…, one PostgreSQL schema) and one ManualClock make each
// scheduled time run exactly once; and a run missed while no server was up is made at start-up.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, ON_POSTGRES, TestApp, sharedDatabase, type TestAccount } from '../support/app.js';
import { allEvents, executedEvents, schedulerPassed, type EventBody } from './support.js';

const MINUTE = 60_000;

function runKeys(executed: EventBody[]): string[] {
  return executed.map((event) => `${event.data.schedule.id}@${event.data.scheduledFor}`);
}

/**
 * Two apps of one Node.js thread on one SQLite file: while one holds the write lock (a group
 * commit ends on a later turn of the event loop), a write of the other waits in SQLite's busy
 * handler, which blocks that very thread, so the lock cannot be let go: the write fails after the
 * 5 s busy timeout, and a look with five due runs blocked the thread for 25 s. Two processes wait
 * for each other; two apps in one thread are better told at once, and the look that loses tries
 * again a second later, as it does when the other app made the run first.
 */
async function failBusyAtOnce(app: TestApp): Promise<void> {
  if (!ON_POSTGRES) await sql`pragma busy_timeout = 0`.execute(app.context.storage.db);
}

/** Only the scheduler writes in the background: no counter flush, pruning or housekeeping beside the test's own writes. */
const SCHEDULER_ONLY = { USAGE_FLUSH_INTERVAL_MS: '86400000', PRUNE_INTERVAL_MS: '86400000', RETENTION_INTERVAL_MS: '86400000' };

async function create(app: TestApp, caller: TestAccount, body: Record<string, unknown>): Promise<Record<string, any>> {
  const response = await app.request({ method: 'POST', url: '/api/v1/schedules', key: caller.key, body });
  expect(response.status, response.body).toBe(201);
  return response.json;
}

describe('two apps on one database', () => {
  const clock = new ManualClock(new Date('2030-03-04T10:00:30.000Z'));
  let database: { url: string; drop: () => Promise<void> };
  let first: TestApp;
  let second: TestApp;
  let caller: TestAccount;

  beforeAll(async () => {
    database = await sharedDatabase();
    first = await TestApp.start({ clock, env: { ...SCHEDULER_ONLY, DATABASE_URL: database.url } });
    second = await TestApp.start({ clock, env: { ...SCHEDULER_ONLY, DATABASE_URL: database.url } });
    for (const app of [first, second]) await failBusyAtOnce(app);
    caller = await first.account();
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await database?.drop();
  });

  it('runs every scheduled time exactly once, whichever app claims it', async () => {
    const sensor = await first.request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'Counter', type: 'sensor', state: 0 } });
    expect(sensor.status).toBe(201);
    const start = clock.now().getTime();
    const schedules = [
      ...(await Promise.all(
        [1, 2, 3, 4].map((n) =>
          create(first, caller, { name: `Tick ${n}`, cron: '* * * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: { n } } }),
        ),
      )),
      await create(second, caller, { name: 'Counter', cron: '* * * * *', action: { type: 'set_state', resourceId: sensor.json.id, state: 'ran' } }),
      await create(second, caller, {
        name: 'Once A',
        at: new Date(start + 90_000).toISOString(),
        action: { type: 'publish_event', eventType: 'custom.once', data: {} },
      }),
      await create(first, caller, {
        name: 'Once B',
        at: new Date(start + 150_000).toISOString(),
        action: { type: 'publish_event', eventType: 'custom.once', data: {} },
      }),
    ];
    // Minute by minute: 5 cron runs each minute, plus the one-shots in the second and third.
    const expected = [5, 5 + 5 + 1, 5 + 5 + 1 + 5 + 1];
    for (const [index, total] of expected.entries()) {
      const mark = Math.floor(start / MINUTE) * MINUTE + (index + 1) * MINUTE;
      clock.advance(mark + 100 - clock.now().getTime());
      await executedEvents(index % 2 === 0 ? first : second, caller.key, total);
      // Both apps look again, each a whole look begun once the runs were made: nothing more may run.
      await Promise.all([first, second].map((app) => schedulerPassed(app)));
      const executed = await allEvents(first, caller.key, 'schedule.executed');
      expect(executed).toHaveLength(total);
      expect(new Set(runKeys(executed)).size).toBe(total);
    }

    const events = await allEvents(second, caller.key);
    // Event ids are dense: no run was half made and rolled back visibly.
    expect(events.map((event) => event.id)).toEqual(events.map((_, index) => index + 1));
    const executed = events.filter((event) => event.type === 'schedule.executed');
    expect(executed.every((event) => event.data.outcome === 'succeeded')).toBe(true);
    expect(events.filter((event) => event.type === 'custom.tick')).toHaveLength(12);
    expect(events.filter((event) => event.type === 'custom.once')).toHaveLength(2);
    expect(events.filter((event) => event.type === 'resource.updated')).toHaveLength(3);
    const counter = await second.request({ url: `/api/v1/resources/${sensor.json.id}`, key: caller.key });
    expect(counter.json).toMatchObject({ state: 'ran', version: 4 });
    for (const oneShot of schedules.filter((schedule) => schedule.at !== null)) {
      const after = await first.request({ url: `/api/v1/schedules/${oneShot.id}`, key: caller.key });
      expect(after.json).toMatchObject({ enabled: false, nextRunAt: null });
    }
    for (const schedule of schedules) {
      expect((await second.request({ method: 'DELETE', url: `/api/v1/schedules/${schedule.id}`, key: caller.key })).status).toBe(204);
    }
    // Several scheduled minutes, each waiting on both apps' real one-second scheduler passes: ~10 s
    // alone, several times that beside the rest of the suite on two cores.
  }, 120_000);

  // Two processes asking at the very same moment: on PostgreSQL the claims truly race. (Two apps
  // in one process on one SQLite file would only block each other's synchronous driver calls.)
  it.runIf(ON_POSTGRES)('lets exactly one of two simultaneous looks claim each due run', async () => {
    const start = clock.now().getTime();
    const schedules = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        create(first, caller, { name: `Race ${n}`, cron: '*/5 * * * *', action: { type: 'publish_event', eventType: 'custom.race', data: { n } } }),
      ),
    );
    const before = (await allEvents(first, caller.key, 'schedule.executed')).length;
    for (let round = 1; round <= 3; round++) {
      clock.advance(Math.floor(start / (5 * MINUTE)) * 5 * MINUTE + round * 5 * MINUTE - clock.now().getTime());
      const results = await Promise.all([
        first.context.services.schedules.runDue(),
        second.context.services.schedules.runDue(),
        first.context.services.schedules.runDue(),
        second.context.services.schedules.runDue(),
      ]);
      // Whatever the background loops took, the looks made here never ran a time twice.
      const made = results.flat().map((execution) => `${execution.scheduleId}@${execution.scheduledFor}`);
      expect(new Set(made).size).toBe(made.length);
      await executedEvents(first, caller.key, before + round * 6);
      await Promise.all([first, second].map((app) => schedulerPassed(app)));
      const executed = (await allEvents(first, caller.key, 'schedule.executed')).slice(before);
      expect(executed).toHaveLength(round * 6);
      expect(new Set(runKeys(executed)).size).toBe(round * 6);
    }
    for (const schedule of schedules) await first.request({ method: 'DELETE', url: `/api/v1/schedules/${schedule.id}`, key: caller.key });
  });
});

describe('a run missed while no server was up', () => {
  const clock = new ManualClock(new Date('2030-03-04T10:00:30.000Z'));
  let database: { url: string; drop: () => Promise<void> };

  beforeAll(async () => {
    database = await sharedDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('is made once at start-up when under an hour late; an older one is skipped', async () => {
    const before = await TestApp.start({ clock, env: { DATABASE_URL: database.url } });
    const caller = await before.account();
    const action = { type: 'publish_event', eventType: 'custom.tick', data: {} };
    const everyTen = await create(before, caller, { name: 'Every ten', cron: '*/10 * * * *', action });
    const inTen = new Date(clock.now().getTime() + 10 * MINUTE);
    const daily = await create(before, caller, { name: 'Daily', cron: `${inTen.getUTCMinutes()} ${inTen.getUTCHours()} * * *`, action });
    const oneShot = await create(before, caller, { name: 'Once', at: new Date(clock.now().getTime() + 20 * MINUTE).toISOString(), action });
    await before.close();

    // The server is down for 75 minutes: the daily run is 65 minutes late, the one-shot 55, and the
    // ten-minute schedule missed seven times, the latest under ten minutes ago.
    clock.advance(75 * MINUTE);
    const after = await TestApp.start({ clock, env: { DATABASE_URL: database.url } });
    try {
      const executed = await executedEvents(after, caller.key, 2);
      await schedulerPassed(after);
      await schedulerPassed(after);
      expect(await allEvents(after, caller.key, 'schedule.executed')).toHaveLength(2);
      const latestTen = new Date(Math.floor(clock.now().getTime() / (10 * MINUTE)) * 10 * MINUTE).toISOString();
      const byName = Object.fromEntries(executed.map((event) => [event.data.schedule.name, event.data]));
      expect(byName['Every ten']).toMatchObject({ schedule: { id: everyTen.id }, scheduledFor: latestTen, outcome: 'succeeded' });
      expect(byName.Once).toMatchObject({ schedule: { id: oneShot.id }, scheduledFor: oneShot.at, outcome: 'succeeded' });
      expect(byName.Daily).toBeUndefined();
      const dailyNow = await after.request({ url: `/api/v1/schedules/${daily.id}`, key: caller.key });
      expect(dailyNow.json).toMatchObject({ enabled: true, lastRunAt: null, nextRunAt: new Date(Date.parse(daily.nextRunAt) + 86_400_000).toISOString() });
    } finally {
      await after.close();
    }
  });
});
