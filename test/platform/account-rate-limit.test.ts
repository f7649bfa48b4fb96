// The rate allowance is counted per credential and per account (../shared/api-decisions.md §10;
// docs/decisions.md: "Authentication and rate limits"), so minting keys does not multiply it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, ConfigError, loadConfig } from '../../src/config.js';
import { issueKey } from '../../src/operator.js';
import { ManualClock, ON_POSTGRES, TestApp, sharedDatabase, testConfig, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';
import { until } from '../support/wait.js';

function limitHeaders(response: TestResponse): { limit: string; remaining: string; reset: string } {
  const value = (name: string) => String(response.headers[name]);
  return { limit: value('ratelimit-limit'), remaining: value('ratelimit-remaining'), reset: value('ratelimit-reset') };
}

describe('the account allowance (RATE_LIMIT_PER_MINUTE=5, RATE_LIMIT_ACCOUNT_PER_MINUTE=8)', () => {
  // Windows are aligned to the clock minute: at :10 each window has 50 s left.
  const clock = new ManualClock(new Date('2026-01-01T00:00:10.000Z'));
  let t: TestApp;
  let keyA: string;
  let keyB: string;
  let keyC: string;
  let stranger: string;
  const me = (key: string) => t.request({ url: '/api/v1/auth/me', key });

  beforeAll(async () => {
    t = await TestApp.start({ env: { RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_ACCOUNT_PER_MINUTE: '8' }, clock });
    const owner = await t.account();
    keyA = owner.key;
    keyB = (await issueKey(t.context, { accountId: owner.accountId, name: 'B' })).key;
    keyC = (await issueKey(t.context, { accountId: owner.accountId, name: 'C' })).key;
    stranger = (await t.account()).key;
  });
  afterAll(async () => {
    await t.close();
  });

  it('lets a second key of the account through only what the account has left, and names the binding limit', async () => {
    // Key A binds while the account has more left than A: the credential's limit is reported.
    for (const remaining of [4, 3, 2, 1, 0]) {
      const response = await me(keyA);
      expect(response.status, response.body).toBe(200);
      expect(limitHeaders(response)).toEqual({ limit: '5', remaining: String(remaining), reset: '50' });
    }
    const spentA = await me(keyA);
    expectError(spentA, 429, 'rate_limited');
    expect(limitHeaders(spentA)).toEqual({ limit: '5', remaining: '0', reset: '50' });

    // Key B's own allowance is fresh (4 left after each), but the account has 3 left: it binds.
    for (const remaining of [2, 1, 0]) {
      const response = await me(keyB);
      expect(response.status, response.body).toBe(200);
      expect(limitHeaders(response)).toEqual({ limit: '8', remaining: String(remaining), reset: '50' });
    }
    const spentB = await me(keyB);
    expectError(spentB, 429, 'rate_limited');
    expect(limitHeaders(spentB)).toEqual({ limit: '8', remaining: '0', reset: '50' });
    expect(spentB.headers['retry-after']).toBe('50');
    expect(spentB.json.error.message).toContain('account');

    // A third key, never used, is refused too; /health still reads the account's count.
    expectError(await me(keyC), 429, 'rate_limited');
    const health = await t.request({ url: '/health', key: keyC });
    expect(health.status).toBe(200);
    expect(limitHeaders(health)).toEqual({ limit: '8', remaining: '0', reset: '50' });
  });

  it('leaves a key of another account unaffected', async () => {
    const response = await me(stranger);
    expect(response.status, response.body).toBe(200);
    expect(limitHeaders(response)).toEqual({ limit: '5', remaining: '4', reset: '50' });
  });

  it('starts both counts afresh in the next window', async () => {
    clock.advance(60_000);
    const response = await me(keyC);
    expect(response.status, response.body).toBe(200);
    expect(limitHeaders(response)).toEqual({ limit: '5', remaining: '4', reset: '50' });
  });

  it("does not spend the account's allowance on requests a key's own allowance refused", async () => {
    clock.advance(60_000);
    for (let index = 0; index < 5; index++) expect((await me(keyA)).status).toBe(200);
    // A client retrying its 429s at once must not starve the account's other keys.
    for (let index = 0; index < 10; index++) expectError(await me(keyA), 429, 'rate_limited');
    for (const remaining of [2, 1, 0]) {
      const response = await me(keyB);
      expect(response.status, response.body).toBe(200);
      expect(limitHeaders(response).remaining).toBe(String(remaining));
    }
    expectError(await me(keyB), 429, 'rate_limited');
  });
});

// Two instances on one PostgreSQL database, as two processes: the account's count is shared like a
// credential's, exact under 1,000 a window and merged every 100 ms above (decisions: "Rate limits on PostgreSQL").
describe.skipIf(!ON_POSTGRES)('the account allowance across two instances on PostgreSQL', () => {
  const clock = new ManualClock(new Date('2026-01-01T00:00:10.000Z'));
  let database: { url: string; drop: () => Promise<void> };
  const apps: TestApp[] = [];

  beforeAll(async () => {
    database = await sharedDatabase();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await database?.drop();
  });

  async function twoInstances(env: Record<string, string>): Promise<[TestApp, TestApp, string, string, string]> {
    const [first, second] = [
      await TestApp.start({ env: { ...env, DATABASE_URL: database.url }, clock }),
      await TestApp.start({ env: { ...env, DATABASE_URL: database.url }, clock }),
    ];
    apps.push(first, second);
    const owner = await first.account();
    const other = await issueKey(first.context, { accountId: owner.accountId, name: 'other' });
    return [first, second, owner.key, other.key, owner.accountId];
  }
  const me = (app: TestApp, key: string) => app.request({ url: '/api/v1/auth/me', key });

  it('counts exactly, hit by hit, under 1,000 a window', async () => {
    const [first, second, keyA, keyB] = await twoInstances({ RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_ACCOUNT_PER_MINUTE: '8' });
    for (let index = 0; index < 5; index++) expect((await me(first, keyA)).status).toBe(200);
    for (const remaining of [2, 1, 0]) expect(limitHeaders(await me(second, keyB)).remaining).toBe(String(remaining));
    expectError(await me(second, keyB), 429, 'rate_limited');
  });

  it('counts in memory and merges from 1,000 a window', async () => {
    clock.advance(60_000);
    const [first, second, keyA, keyB, accountId] = await twoInstances({ RATE_LIMIT_PER_MINUTE: '100000', RATE_LIMIT_ACCOUNT_PER_MINUTE: '1000' });
    for (let index = 0; index < 600; index++) expect((await me(first, keyA)).status).toBe(200);
    // The first instance's counts reach storage at its next merge; the second reads them at its first hit.
    await until(async () => {
      const windows = await first.context.storage.db.selectFrom('rate_limit_windows').select('count').where('key', '=', `account:${accountId}`).execute();
      return windows.some((window) => Number(window.count) >= 600);
    }, "the first instance's 600 hits merged into storage");
    let admitted = 0;
    while (admitted < 1000 && (await me(second, keyB)).status === 200) admitted++;
    expect(admitted).toBe(400);
  });
});

describe('RATE_LIMIT_ACCOUNT_PER_MINUTE', () => {
  it('is ten times the credential allowance unless set, following RATE_LIMIT_PER_MINUTE', () => {
    expect(CONFIG_VARIABLES).toContain('RATE_LIMIT_ACCOUNT_PER_MINUTE');
    expect(loadConfig({})).toMatchObject({ rateLimitPerMinute: 600, rateLimitAccountPerMinute: 6000 });
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '7' }).rateLimitAccountPerMinute).toBe(70);
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '7', RATE_LIMIT_ACCOUNT_PER_MINUTE: '3' }).rateLimitAccountPerMinute).toBe(3);
    // The suite's own allowance leaves every other test file's accounts far from the account limit.
    expect(testConfig().rateLimitAccountPerMinute).toBe(1_000_000);
  });

  it('must be an integer of at least 1', () => {
    for (const value of ['0', '-5', '2.5', 'many']) {
      expect(() => loadConfig({ RATE_LIMIT_ACCOUNT_PER_MINUTE: value }), value).toThrow(ConfigError);
    }
  });
});
