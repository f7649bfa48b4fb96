import { describe, expect, it } from 'vitest';
import { ManualClock, TestApp, useTestApp, type TestResponse } from '../support/app.js';

const DAY_MS = 86_400_000;

interface UsageDay {
  date: string;
  requests: number;
  errors: number;
  eventsCreated: number;
  webhookDeliveries: number;
}

function utcDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}

function expectZero(day: UsageDay): void {
  expect(day).toMatchObject({ requests: 0, errors: 0, eventsCreated: 0, webhookDeliveries: 0 });
}

// The periodic flush is pushed far out (an hour, below setInterval's 2^31-1 ms ceiling), so
// only GET /api/v1/usage and shutdown write the counters during these tests.
const NO_PERIODIC_FLUSH = { USAGE_FLUSH_INTERVAL_MS: '3600000' };

describe('GET /api/v1/usage', () => {
  const app = useTestApp({ env: NO_PERIODIC_FLUSH });

  function usage(key: string, query = ''): Promise<TestResponse> {
    return app().request({ url: `/api/v1/usage${query}`, key });
  }

  it('needs usage:read (403) and a credential (401)', async () => {
    const noScope = await app().account(['keys:manage']);
    const forbidden = await usage(noScope.key);
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.error.code).toBe('insufficient_scope');
    expect(forbidden.headers['www-authenticate']).toBe('Bearer realm="devdata", error="insufficient_scope", scope="usage:read"');

    const anonymous = await app().request({ url: '/api/v1/usage' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.error.code).toBe('unauthorized');
  });

  it('returns 30 days by default, oldest first, ending today', async () => {
    const caller = await app().account(['usage:read']);
    const response = await usage(caller.key);
    expect(response.status).toBe(200);
    expect(Object.keys(response.json).sort()).toEqual(['data', 'totals']);
    const days: UsageDay[] = response.json.data;
    expect(days).toHaveLength(30);
    for (const day of days) {
      expect(Object.keys(day).sort()).toEqual(['date', 'errors', 'eventsCreated', 'requests', 'webhookDeliveries']);
      expect(day.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    const today = new Date();
    expect(days.at(-1)?.date).toBe(utcDate(today));
    expect(days[0]?.date).toBe(utcDate(new Date(today.getTime() - 29 * DAY_MS)));
    for (let index = 1; index < days.length; index++) {
      expect(Date.parse(days[index]!.date) - Date.parse(days[index - 1]!.date)).toBe(DAY_MS);
    }
    // A new account has used nothing before this request.
    days.forEach(expectZero);
    expect(response.json.totals).toEqual({ requests: 0, errors: 0, eventsCreated: 0, webhookDeliveries: 0 });
  });

  it.each([1, 7, 90])('returns exactly days=%i entries', async (count) => {
    const caller = await app().account(['usage:read']);
    const response = await usage(caller.key, `?days=${count}`);
    expect(response.status).toBe(200);
    expect(response.json.data).toHaveLength(count);
    expect(response.json.data.at(-1).date).toBe(utcDate(new Date()));
  });

  it.each(['0', '91', '-1', '1.5', 'abc'])('rejects days=%s with 400', async (value) => {
    const caller = await app().account(['usage:read']);
    const response = await usage(caller.key, `?days=${value}`);
    expect(response.status).toBe(400);
    expect(response.json.error.code).toBe('invalid_request');
    expect(response.json.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/days' })]));
  });

  it('counts successful and failing requests, buffered until read', async () => {
    const caller = await app().account();
    const successes = 3;
    const failures = 2;
    for (let i = 0; i < successes; i++) {
      expect((await app().request({ url: '/api/v1/auth/me', key: caller.key })).status).toBe(200);
    }
    for (let i = 0; i < failures; i++) {
      expect((await app().request({ method: 'DELETE', url: '/api/v1/keys/key_unknown', key: caller.key })).status).toBe(404);
    }
    // Requests without a valid credential belong to no account and are not counted.
    expect((await app().request({ url: '/api/v1/auth/me' })).status).toBe(401);
    expect((await app().request({ url: '/api/v1/auth/me', key: 'ddk_unknown' })).status).toBe(401);
    // Let any response hooks still in flight finish.
    await new Promise((resolve) => setImmediate(resolve));

    // Counting wrote nothing yet: no per-request storage write.
    const { db } = app().context.storage;
    const before = await db.selectFrom('usage_daily').selectAll().where('account_id', '=', caller.accountId).execute();
    expect(before).toEqual([]);

    const response = await usage(caller.key, '?days=3');
    expect(response.status).toBe(200);
    const today: UsageDay = response.json.data.at(-1);
    expect(today).toEqual({ date: utcDate(new Date()), requests: successes + failures, errors: failures, eventsCreated: 0, webhookDeliveries: 0 });
    expectZero(response.json.data[0]);
    expectZero(response.json.data[1]);
    expect(response.json.totals).toEqual({ requests: successes + failures, errors: failures, eventsCreated: 0, webhookDeliveries: 0 });

    // GET /usage flushed first, so the row is now stored.
    const after = await db.selectFrom('usage_daily').selectAll().where('account_id', '=', caller.accountId).execute();
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ day: utcDate(new Date()) });
    expect(Number(after[0]!.requests)).toBe(successes + failures);
    expect(Number(after[0]!.errors)).toBe(failures);

    // The usage read itself is counted from then on, and a 400 counts as an error.
    const limited = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'x', scopes: ['nope:nope'] } });
    expect(limited.status).toBe(400);
    await new Promise((resolve) => setImmediate(resolve));
    const again = await usage(caller.key, '?days=1');
    expect(again.json.data).toHaveLength(1);
    expect(again.json.data[0]).toMatchObject({ requests: successes + failures + 2, errors: failures + 1 });
    expect(again.json.totals).toMatchObject({ requests: successes + failures + 2, errors: failures + 1 });
  });

  it("keeps each account's counts apart, across all of its keys", async () => {
    const a = await app().account();
    const b = await app().account();
    const second = await app().request({ method: 'POST', url: '/api/v1/keys', key: a.key, body: { name: 'second', scopes: ['resources:read'] } });
    expect(second.status).toBe(201);
    await app().request({ url: '/api/v1/auth/me', key: second.json.key });
    await app().request({ url: '/api/v1/keys', key: second.json.key }); // 403: lacks keys:manage
    await new Promise((resolve) => setImmediate(resolve));

    const usageA = await usage(a.key, '?days=1');
    expect(usageA.json.data[0]).toMatchObject({ requests: 3, errors: 1 });
    const usageB = await usage(b.key, '?days=1');
    expect(usageB.json.data[0]).toMatchObject({ requests: 0, errors: 0 });
  });
});

describe('usage across days', () => {
  it('files requests under the UTC day they happened and totals the window', async () => {
    const clock = new ManualClock(new Date('2026-05-10T23:59:00.000Z'));
    const t = await TestApp.start({ clock, env: NO_PERIODIC_FLUSH });
    try {
      const caller = await t.account();
      await t.request({ url: '/api/v1/auth/me', key: caller.key });
      await t.request({ method: 'DELETE', url: '/api/v1/keys/key_unknown', key: caller.key });
      clock.advance(2 * 60_000); // 2026-05-11T00:01Z
      await t.request({ url: '/api/v1/auth/me', key: caller.key });
      await new Promise((resolve) => setImmediate(resolve));

      const response = await t.request({ url: '/api/v1/usage?days=3', key: caller.key });
      expect(response.status).toBe(200);
      expect(response.json.data).toEqual([
        { date: '2026-05-09', requests: 0, errors: 0, eventsCreated: 0, webhookDeliveries: 0 },
        { date: '2026-05-10', requests: 2, errors: 1, eventsCreated: 0, webhookDeliveries: 0 },
        { date: '2026-05-11', requests: 1, errors: 0, eventsCreated: 0, webhookDeliveries: 0 },
      ]);
      expect(response.json.totals).toEqual({ requests: 3, errors: 1, eventsCreated: 0, webhookDeliveries: 0 });

      const todayOnly = await t.request({ url: '/api/v1/usage?days=1', key: caller.key });
      expect(todayOnly.json.data).toEqual([{ date: '2026-05-11', requests: 2, errors: 0, eventsCreated: 0, webhookDeliveries: 0 }]);
      expect(todayOnly.json.totals).toEqual({ requests: 2, errors: 0, eventsCreated: 0, webhookDeliveries: 0 });
    } finally {
      await t.close();
    }
  });
});
