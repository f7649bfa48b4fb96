// The findings of issue #36 that commit 8295bca fixed, each as a test through the real HTTP server
// that failed before it (docs/decisions.md, "Standing authority"; ../shared/api-decisions.md §10):
// 1. a webhook repointed by an OAuth token stops when that token's connection is revoked;
// 2. a schedule stops with the credential that made it (a revoked connection, a revoked or an
//    expired key): no due run happens, it reads as disabled with the reason, and enabling it again
//    with a live key makes it run again;
// 3. a confidential app's client credentials end with the key that registered it (revoked or expired);
// 4. per account at most 100 active keys, 50 apps and 200 schedules, also under concurrent creates;
// 5. the scheduler takes due runs round-robin by account: one account's 150 due runs do not hold
//    up another account's single one.
// The smaller findings (rate allowance per account, rotate-secret's scope, IPv6 webhook targets,
// CORS on the matched route) have their own tests; test/authority/matrix.test.ts walks every end of
// a credential against every kind of standing object.
import { describe, expect, it, vi } from 'vitest';
import { ManualClock, useTestApp, type TestAccount, type TestApp } from '../support/app.js';
import { expectError } from '../support/expect.js';
import { until } from '../support/wait.js';
import { allEvents, schedulerPassed } from '../schedules/support.js';
import { basic, expectOAuthError, grantedConnection, REDIRECT_URI, registerApp, revokeConnection, tokenRequest } from '../oauth/support.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** A request that must succeed; its body. */
async function ok(app: TestApp, method: string, url: string, key: string, body?: unknown): Promise<any> {
  const response = await app.request({ method, url, key, body });
  expect(response.status, `${method} ${url}: ${response.body}`).toBeLessThan(300);
  return response.json;
}

/** The account's audit records of this type about this target. */
async function auditAbout(app: TestApp, owner: TestAccount, type: string, targetId: string): Promise<any[]> {
  const records = (await ok(app, 'GET', `/api/v1/audit?type=${type}`, owner.key)).data as any[];
  return records.filter((record) => record.target?.id === targetId);
}

/** A key of the owner's account made through the API. */
function newKey(app: TestApp, owner: TestAccount, scopes: string[], expiresInDays?: number): Promise<{ id: string; key: string; expiresAt: string }> {
  return ok(app, 'POST', '/api/v1/keys', owner.key, { name: 'finding', scopes, ...(expiresInDays ? { expiresInDays } : {}) });
}

/**
 * Waits for a whole pass of the scheduler that began after this call: the first pass to end may
 * have been under way already (with the clock as it was), the one after it was not.
 */
async function aWholeSchedulerPass(app: TestApp): Promise<void> {
  await schedulerPassed(app);
  await schedulerPassed(app);
}

describe('issue #36: standing authority ends with its credential', () => {
  const clock = new ManualClock(new Date('2030-01-07T09:00:30.000Z'));
  const app = useTestApp({ clock, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });

  describe('1. a webhook taken over by another credential stops with it', () => {
    const webhookOf = (owner: TestAccount) =>
      ok(app(), 'POST', '/api/v1/webhooks', owner.key, { name: 'owner hook', url: 'http://127.0.0.1:9/owner', events: ['custom.*'] });
    const patchWith = async (token: string, id: string, body: unknown) => {
      const response = await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${id}`, key: token, body });
      expect(response.status, response.body).toBe(200);
    };

    it('a token that changed its url and events becomes its authorizer: revoking the connection disables it, audited', async () => {
      const owner = await app().account();
      const hook = await webhookOf(owner);
      const granted = await grantedConnection(app(), owner.key, owner.key, ['webhooks:manage', 'events:read']);
      await patchWith(granted.access, hook.id, { url: 'http://127.0.0.1:9/taken-over', events: ['custom.taken'] });

      await revokeConnection(app(), granted);
      expect(await ok(app(), 'GET', `/api/v1/webhooks/${hook.id}`, owner.key)).toMatchObject({
        url: 'http://127.0.0.1:9/taken-over',
        enabled: false,
        disabledReason: 'credential_revoked',
      });
      expect(await auditAbout(app(), owner, 'webhook.disabled', hook.id)).toEqual([
        expect.objectContaining({ actor: { kind: 'system' }, data: expect.objectContaining({ reason: 'credential_revoked' }) }),
      ]);
    });

    it('a token that only renamed it does not: revoking the connection leaves it enabled', async () => {
      const owner = await app().account();
      const hook = await webhookOf(owner);
      const granted = await grantedConnection(app(), owner.key, owner.key, ['webhooks:manage', 'events:read']);
      await patchWith(granted.access, hook.id, { name: 'renamed by the app' });

      await revokeConnection(app(), granted);
      expect(await ok(app(), 'GET', `/api/v1/webhooks/${hook.id}`, owner.key)).toMatchObject({
        name: 'renamed by the app',
        enabled: true,
        disabledReason: null,
      });
    });
  });

  describe('2. schedules stop with their creator', () => {
    const scopes = ['schedules:manage', 'resources:write'];

    /** An account with a lamp that is off. */
    async function ownerWithLamp(): Promise<{ owner: TestAccount; lampId: string }> {
      const owner = await app().account();
      const lamp = await ok(app(), 'POST', '/api/v1/resources', owner.key, { name: 'Lamp', type: 'switch', state: false });
      return { owner, lampId: lamp.id };
    }

    /** An every-minute schedule made with `secret` that switches the lamp on. */
    async function lampSchedule(secret: string, lampId: string): Promise<string> {
      const body = { name: 'lamp on', cron: '* * * * *', action: { type: 'set_state', resourceId: lampId, state: true } };
      return (await ok(app(), 'POST', '/api/v1/schedules', secret, body)).id;
    }

    const runsOf = async (owner: TestAccount, scheduleId: string) =>
      (await allEvents(app(), owner.key, 'schedule.executed')).filter((event) => event.data.schedule.id === scheduleId);
    const lampState = async (owner: TestAccount, lampId: string) => (await ok(app(), 'GET', `/api/v1/resources/${lampId}`, owner.key)).state;

    /** It reads as disabled with the reason, with a schedule.disabled record by the system. */
    async function expectCutOff(owner: TestAccount, scheduleId: string, reason: string): Promise<void> {
      expect(await ok(app(), 'GET', `/api/v1/schedules/${scheduleId}`, owner.key)).toMatchObject({ enabled: false, disabledReason: reason, nextRunAt: null });
      expect(await auditAbout(app(), owner, 'schedule.disabled', scheduleId)).toEqual([
        expect.objectContaining({ actor: { kind: 'system' }, data: expect.objectContaining({ reason }) }),
      ]);
    }

    /** The next minute comes and the scheduler looks: no run, the lamp stays off. */
    async function noRunNextMinute(owner: TestAccount, scheduleId: string, lampId: string): Promise<void> {
      clock.advance(MINUTE);
      await aWholeSchedulerPass(app());
      expect(await runsOf(owner, scheduleId)).toEqual([]);
      expect(await lampState(owner, lampId)).toBe(false);
    }

    it("an OAuth token's schedule: revoking the connection disables it at once, and it runs no more", async () => {
      const { owner, lampId } = await ownerWithLamp();
      const granted = await grantedConnection(app(), owner.key, owner.key, scopes);
      const scheduleId = await lampSchedule(granted.access, lampId);

      await revokeConnection(app(), granted);
      await expectCutOff(owner, scheduleId, 'credential_revoked');
      await noRunNextMinute(owner, scheduleId, lampId);
    });

    it("an API key's schedule: revoking the key disables it at once, and it runs no more", async () => {
      const { owner, lampId } = await ownerWithLamp();
      const key = await newKey(app(), owner, scopes);
      const scheduleId = await lampSchedule(key.key, lampId);

      expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${key.id}`, key: owner.key })).status).toBe(204);
      await expectCutOff(owner, scheduleId, 'credential_revoked');
      await noRunNextMinute(owner, scheduleId, lampId);
    });

    it("an expired key's schedule makes no due run and is disabled as expired; enabled again with a live key, it runs", async () => {
      const { owner, lampId } = await ownerWithLamp();
      const key = await newKey(app(), owner, scopes, 1);
      const scheduleId = await lampSchedule(key.key, lampId);

      // Its next run comes after the key's end: the run re-checks the key and cuts the schedule off instead.
      clock.advance(DAY + MINUTE);
      await aWholeSchedulerPass(app());
      expect(await runsOf(owner, scheduleId)).toEqual([]);
      expect(await lampState(owner, lampId)).toBe(false);
      await expectCutOff(owner, scheduleId, 'credential_expired');

      const enabled = await ok(app(), 'PATCH', `/api/v1/schedules/${scheduleId}`, owner.key, { enabled: true });
      expect(enabled).toMatchObject({ enabled: true, disabledReason: null, nextRunAt: expect.any(String) });
      clock.advance(MINUTE);
      await until(async () => (await runsOf(owner, scheduleId)).length === 1, 'the run of the schedule enabled again');
      expect(await lampState(owner, lampId)).toBe(true);
      expect((await app().request({ method: 'DELETE', url: `/api/v1/schedules/${scheduleId}`, key: owner.key })).status).toBe(204);
    });
  });

  describe("3. a confidential app's client credentials end with the key that registered it", () => {
    const scopes = ['resources:read', 'resources:write'];

    /** A confidential app registered with a new one-day key of the owner's, and its Basic authorization. */
    async function appOfOneDayKey(owner: TestAccount) {
      const key = await newKey(app(), owner, ['apps:manage', ...scopes], 1);
      const registered = await registerApp(app(), key.key, { type: 'confidential', scopes });
      return { key, appId: registered.id, authorization: basic(registered.clientId, registered.clientSecret as string) };
    }
    const clientCredentials = (authorization: string) => tokenRequest(app(), { grant_type: 'client_credentials' }, { authorization });
    const createResource = (token: string) =>
      app().request({ method: 'POST', url: '/api/v1/resources', key: token, body: { name: 'made by the app', type: 'switch', state: false } });

    async function workingToken(authorization: string): Promise<string> {
      const token = await clientCredentials(authorization);
      expect(token.status, token.body).toBe(200);
      expect((await createResource(token.json.access_token)).status).toBe(201);
      return token.json.access_token;
    }

    it('the key revoked: its token gets 401, client_credentials invalid_client, audited', async () => {
      const owner = await app().account();
      const { key, appId, authorization } = await appOfOneDayKey(owner);
      const token = await workingToken(authorization);

      expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${key.id}`, key: owner.key })).status).toBe(204);
      expect((await createResource(token)).status).toBe(401);
      expectOAuthError(await clientCredentials(authorization), 401, 'invalid_client');
      expect(await auditAbout(app(), owner, 'app.client_credentials_ended', appId)).toEqual([
        expect.objectContaining({ actor: { kind: 'system' }, data: { reason: 'credential_revoked', key: key.id } }),
      ]);
    });

    it('the key expired: its token (still within its own lifetime) gets 401, client_credentials invalid_client', async () => {
      const owner = await app().account();
      const { key, authorization } = await appOfOneDayKey(owner);
      // Five minutes before the key's end the app gets a token (valid 15 minutes); six minutes later the key has ended.
      clock.advance(Date.parse(key.expiresAt) - 5 * MINUTE - clock.now().getTime());
      const token = await workingToken(authorization);

      clock.advance(6 * MINUTE);
      expect((await createResource(token)).status).toBe(401);
      expectOAuthError(await clientCredentials(authorization), 401, 'invalid_client');
    });
  });
});

describe('issue #36: per-account caps', () => {
  const app = useTestApp();

  it('100 active API keys, the first one counted: the 101st is refused (409) and not made; a revocation makes room', async () => {
    const owner = await app().account();
    const create = (n: number) =>
      app().request({ method: 'POST', url: '/api/v1/keys', key: owner.key, body: { name: `key ${n}`, scopes: ['resources:read'] } });
    let last = '';
    for (let n = 2; n <= 100; n++) {
      const response = await create(n);
      expect(response.status, response.body).toBe(201);
      last = response.json.id;
    }
    const refused = await create(101);
    expectError(refused, 409, 'conflict');
    expect(refused.json.error.message).toMatch(/\b100\b/);
    expect((await ok(app(), 'GET', '/api/v1/keys', owner.key)).data).toHaveLength(100);

    expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${last}`, key: owner.key })).status).toBe(204);
    expect((await create(102)).status).toBe(201);
    expectError(await create(103), 409, 'conflict');
    expect((await ok(app(), 'GET', '/api/v1/keys', owner.key)).data).toHaveLength(100);
  });

  it('50 apps: the 51st is refused (409) and not made; a deletion makes room', async () => {
    const owner = await app().account();
    const create = (n: number) =>
      app().request({
        method: 'POST',
        url: '/api/v1/apps',
        key: owner.key,
        body: { name: `app ${n}`, type: 'public', redirectUris: [REDIRECT_URI], scopes: ['resources:read'] },
      });
    let last = '';
    for (let n = 1; n <= 50; n++) {
      const response = await create(n);
      expect(response.status, response.body).toBe(201);
      last = response.json.id;
    }
    const refused = await create(51);
    expectError(refused, 409, 'conflict');
    expect(refused.json.error.message).toMatch(/\b50\b/);
    expect((await ok(app(), 'GET', '/api/v1/apps', owner.key)).data).toHaveLength(50);

    expect((await app().request({ method: 'DELETE', url: `/api/v1/apps/${last}`, key: owner.key })).status).toBe(204);
    expect((await create(52)).status).toBe(201);
    expectError(await create(53), 409, 'conflict');
  });

  it('200 schedules, held under concurrent creates: at 195, ten at once make exactly five', async () => {
    const owner = await app().account();
    // Disabled, so no scheduler ever runs them.
    const body = (n: number) => ({ name: `cap ${n}`, cron: '0 0 1 1 *', enabled: false, action: { type: 'publish_event', eventType: 'custom.cap', data: {} } });
    const create = (n: number) => app().request({ method: 'POST', url: '/api/v1/schedules', key: owner.key, body: body(n) });
    for (let n = 1; n <= 195; n++) {
      const response = await create(n);
      expect(response.status, response.body).toBe(201);
    }
    const racing = await Promise.all(Array.from({ length: 10 }, (_, i) => create(196 + i)));
    const statuses = racing.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(5);
    expect(statuses.filter((status) => status === 409)).toHaveLength(5);
    const refused = racing.find((response) => response.status === 409);
    if (refused) {
      expectError(refused, 409, 'conflict');
      expect(refused.json.error.message).toMatch(/\b200\b/);
    }
    const list = (await ok(app(), 'GET', '/api/v1/schedules', owner.key)).data as Array<{ id: string }>;
    expect(list).toHaveLength(200);

    expectError(await create(206), 409, 'conflict');
    expect((await app().request({ method: 'DELETE', url: `/api/v1/schedules/${list[0]?.id}`, key: owner.key })).status).toBe(204);
    expect((await create(207)).status).toBe(201);
  });
});

describe('issue #36: the scheduler takes due runs round-robin by account', () => {
  const clock = new ManualClock(new Date('2030-01-07T09:00:30.000Z'));
  const app = useTestApp({ clock });
  const oneShot = (n: number, at: string) => ({ name: `one-shot ${n}`, at, action: { type: 'publish_event', eventType: 'custom.fair', data: { n } } });

  it("one account's 150 runs due first do not hold up another account's single run: it is in the first pass of 100", async () => {
    const busy = await app().account();
    const quiet = await app().account();
    for (let n = 1; n <= 150; n++) await ok(app(), 'POST', '/api/v1/schedules', busy.key, oneShot(n, '2030-01-07T09:01:00.000Z'));
    // Due 30 seconds after all of those: by the time alone, the last of 151.
    const single = await ok(app(), 'POST', '/api/v1/schedules', quiet.key, oneShot(0, '2030-01-07T09:01:30.000Z'));

    // The background scheduler looks every second (SCHEDULER_INTERVAL_MS, not configurable) through
    // services.schedules.runDue: held off here, so the passes are exactly the two made below. A pass
    // already under way read the clock before it moved and finds nothing due.
    const schedules = app().context.services.schedules;
    const runDue = schedules.runDue.bind(schedules);
    const background = vi.spyOn(schedules, 'runDue').mockResolvedValue([]);
    try {
      clock.advance(75_000);
      const first = await runDue(100);
      expect(first).toHaveLength(100);
      expect(first.map((run) => run.scheduleId)).toContain(single.id);
      const second = await runDue(100);
      expect(second).toHaveLength(51);
      expect(second.map((run) => run.scheduleId)).not.toContain(single.id);
    } finally {
      background.mockRestore();
    }
    expect(await ok(app(), 'GET', `/api/v1/schedules/${single.id}`, quiet.key)).toMatchObject({ enabled: false, lastRunAt: clock.now().toISOString() });
    expect(await allEvents(app(), quiet.key, 'schedule.executed')).toHaveLength(1);
    expect(await allEvents(app(), busy.key, 'schedule.executed')).toHaveLength(150);
  });
});
