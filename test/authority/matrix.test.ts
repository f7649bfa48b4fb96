// Standing authority (docs/decisions.md, "Standing authority"): every way a credential ends, walked
// against every kind of object that acts later on the account's behalf. On PostgreSQL two apps share
// one schema and one ManualClock, as two processes would: the objects are made through the first,
// the credential is ended through the second, both are asked afterwards, and each runs its own
// scheduler, dispatcher and sweep. SQLite is one process by design (two servers on one file in one
// Node.js thread would wait on each other's open group commit), so there both roles are one app.
//
// For each end: a credential is made, a webhook and an every-minute schedule are made with it and
// shown to act (a delivery arrives, a run happens), the credential ends, and then on both apps
// each object reads as disabled with the end's reason and an audit record, and acts no more: an
// event published afterwards reaches no receiver, the next minute brings no run. What the ended
// credential granted (a connection's tokens, an app's client credentials) stops as well. Every
// request goes over a real socket to the listening servers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, ON_POSTGRES, TestApp, sharedDatabase, type TestAccount } from '../support/app.js';
import { until } from '../support/wait.js';
import { allEvents, schedulerPassed } from '../schedules/support.js';
import { Receiver } from '../webhooks/support.js';
import { basic, grantedConnection, registerApp, revokeConnection, tokenRequest } from '../oauth/support.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const OBJECT_SCOPES = ['webhooks:manage', 'events:read', 'events:write', 'schedules:manage'];

type Reason = 'credential_revoked' | 'credential_expired';

interface Ending {
  /** The bearer secret that makes the standing objects. */
  secret: string;
  /** Ends the credential (through the second app, or by moving the clock). */
  end: () => Promise<void>;
  /** After the end: what the credential granted no longer works. */
  grantStopped?: () => Promise<void>;
}

interface CredentialEnd {
  name: string;
  reason: Reason;
  make: () => Promise<Ending>;
}

const clock = new ManualClock(new Date('2031-01-06T10:00:30.000Z'));
const receiver = new Receiver();
let database: { url: string; drop: () => Promise<void> };
let first: TestApp;
let second: TestApp;
let owner: TestAccount;
let firstBase: string;
let cells = 0;

async function ok(app: TestApp, method: string, url: string, key: string, body?: unknown): Promise<any> {
  const response = await app.request({ method, url, key, body });
  expect(response.status, `${method} ${url}: ${response.body}`).toBeLessThan(300);
  return response.json;
}

/** A key of the owner's account, made through the API. */
async function newKey(scopes: string[], expiresInDays?: number): Promise<{ id: string; key: string }> {
  return ok(first, 'POST', '/api/v1/keys', owner.key, { name: `matrix ${++cells}`, scopes, ...(expiresInDays ? { expiresInDays } : {}) });
}

/** A confidential app registered with `registeringKey`, and a client-credentials token of it. */
async function clientCredentials(registeringKey: string): Promise<{ appId: string; authorization: string; access: string }> {
  const registered = await registerApp(first, registeringKey, { type: 'confidential', scopes: OBJECT_SCOPES });
  const authorization = basic(registered.clientId, registered.clientSecret as string);
  const token = await tokenRequest(first, { grant_type: 'client_credentials' }, { authorization });
  expect(token.status, token.body).toBe(200);
  return { appId: registered.id, authorization, access: token.json.access_token };
}

/** On both apps: a request with this token is refused. */
async function refusedEverywhere(token: string): Promise<void> {
  for (const app of [first, second]) expect((await app.request({ url: '/api/v1/auth/me', key: token })).status).toBe(401);
}

async function connectionStopped(access: string, clientId: string, refresh: string): Promise<void> {
  await refusedEverywhere(access);
  const refreshed = await tokenRequest(second, { grant_type: 'refresh_token', client_id: clientId, refresh_token: refresh });
  expect(refreshed.json?.error).toBe('invalid_grant');
}

async function clientCredentialsStopped(access: string, authorization: string): Promise<void> {
  await refusedEverywhere(access);
  const again = await tokenRequest(second, { grant_type: 'client_credentials' }, { authorization });
  expect(again.json?.error).toBe('invalid_client');
}

/** The end of an app's client credentials is recorded once, with its reason (by the sweep, for an expiry). */
async function clientCredentialsEndAudited(appId: string, reason: Reason): Promise<void> {
  const recorded = async () =>
    (await ok(second, 'GET', '/api/v1/audit?type=app.client_credentials_ended', owner.key)).data.filter((record: any) => record.target.id === appId);
  await until(async () => (await recorded()).length > 0, `app.client_credentials_ended of ${appId}`);
  expect(await recorded()).toEqual([expect.objectContaining({ actor: { kind: 'system' }, data: expect.objectContaining({ reason }) })]);
}

const ENDS: CredentialEnd[] = [
  {
    name: 'an API key revoked',
    reason: 'credential_revoked',
    make: async () => {
      const key = await newKey(OBJECT_SCOPES);
      return { secret: key.key, end: async () => void (await ok(second, 'DELETE', `/api/v1/keys/${key.id}`, owner.key)) };
    },
  },
  {
    name: 'an API key expired',
    reason: 'credential_expired',
    make: async () => {
      const key = await newKey(OBJECT_SCOPES, 1);
      return { secret: key.key, end: async () => clock.advance(DAY), grantStopped: () => refusedEverywhere(key.key) };
    },
  },
  {
    name: 'an OAuth connection revoked (RFC 7009)',
    reason: 'credential_revoked',
    make: async () => {
      const granted = await grantedConnection(first, owner.key, owner.key, OBJECT_SCOPES);
      return {
        secret: granted.access,
        end: () => revokeConnection(second, granted),
        grantStopped: () => connectionStopped(granted.access, granted.clientId, granted.refresh),
      };
    },
  },
  {
    name: 'an OAuth connection reaching 30 days',
    reason: 'credential_expired',
    make: async () => {
      const granted = await grantedConnection(first, owner.key, owner.key, OBJECT_SCOPES);
      return {
        secret: granted.access,
        end: async () => clock.advance(30 * DAY),
        grantStopped: () => connectionStopped(granted.access, granted.clientId, granted.refresh),
      };
    },
  },
  {
    name: "an OAuth connection's approving key revoked",
    reason: 'credential_revoked',
    make: async () => {
      const approving = await newKey(OBJECT_SCOPES);
      const granted = await grantedConnection(first, owner.key, approving.key, OBJECT_SCOPES);
      return {
        secret: granted.access,
        end: async () => void (await ok(second, 'DELETE', `/api/v1/keys/${approving.id}`, owner.key)),
        grantStopped: () => connectionStopped(granted.access, granted.clientId, granted.refresh),
      };
    },
  },
  {
    name: "an OAuth connection's approving key expired",
    reason: 'credential_expired',
    make: async () => {
      const approving = await newKey(OBJECT_SCOPES, 1);
      const granted = await grantedConnection(first, owner.key, approving.key, OBJECT_SCOPES);
      return {
        secret: granted.access,
        end: async () => clock.advance(DAY),
        grantStopped: () => connectionStopped(granted.access, granted.clientId, granted.refresh),
      };
    },
  },
  {
    name: "a confidential app's registering key revoked",
    reason: 'credential_revoked',
    make: async () => {
      const registering = await newKey([...OBJECT_SCOPES, 'apps:manage']);
      const app = await clientCredentials(registering.key);
      return {
        secret: app.access,
        end: async () => void (await ok(second, 'DELETE', `/api/v1/keys/${registering.id}`, owner.key)),
        grantStopped: async () => {
          await clientCredentialsStopped(app.access, app.authorization);
          await clientCredentialsEndAudited(app.appId, 'credential_revoked');
        },
      };
    },
  },
  {
    name: "a confidential app's registering key expired",
    reason: 'credential_expired',
    make: async () => {
      const registering = await newKey([...OBJECT_SCOPES, 'apps:manage'], 1);
      const app = await clientCredentials(registering.key);
      return {
        secret: app.access,
        end: async () => clock.advance(DAY),
        grantStopped: async () => {
          await clientCredentialsStopped(app.access, app.authorization);
          await clientCredentialsEndAudited(app.appId, 'credential_expired');
        },
      };
    },
  },
  {
    name: 'a confidential app deleted',
    reason: 'credential_revoked',
    make: async () => {
      const app = await clientCredentials(owner.key);
      return {
        secret: app.access,
        end: async () => void (await ok(second, 'DELETE', `/api/v1/apps/${app.appId}`, owner.key)),
        grantStopped: () => clientCredentialsStopped(app.access, app.authorization),
      };
    },
  },
];

/** Publishes a custom event with the owner's key, which lives through the whole file. */
async function publish(marker: string): Promise<number> {
  return (await ok(first, 'POST', '/api/v1/events', owner.key, { type: 'custom.matrix', data: { marker } })).id;
}

const deliveredTo = (path: string, eventId: number) => receiver.on(path).filter((entry) => (JSON.parse(entry.rawBody) as { id: number }).id === eventId).length;

/** This schedule's runs, from the account's schedule.executed events. */
async function runsOf(scheduleId: string): Promise<number> {
  return (await allEvents(first, owner.key, 'schedule.executed')).filter((event) => event.data.schedule.id === scheduleId).length;
}

async function bothSchedulersPassed(): Promise<void> {
  await schedulerPassed(first);
  await schedulerPassed(second);
}

beforeAll(async () => {
  await receiver.start();
  database = await sharedDatabase();
  // The sweep of expiries runs with retention: often here, so an expiry is found without waiting a minute.
  const env = { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', RETENTION_INTERVAL_MS: '200' };
  first = await TestApp.start({ clock, env });
  second = ON_POSTGRES ? await TestApp.start({ clock, env }) : first;
  owner = await first.account(undefined, { expiresInDays: 3650 });
  firstBase = await first.listenForRequests();
  if (second !== first) await second.listenForRequests();
});

afterAll(async () => {
  await first?.close();
  if (second !== first) await second?.close();
  await database?.drop();
  await receiver.close();
});

describe.each(ENDS)('$name', ({ reason, make }) => {
  const path = `/matrix-${Math.random().toString(36).slice(2)}`;
  let ending: Ending;
  let webhookId: string;
  let scheduleId: string;
  let runsBefore: number;
  let stream: Promise<'ended'>;

  beforeAll(async () => {
    ending = await make();
    // A stream opened with the credential on the first app, which does not end it (on PostgreSQL).
    const opened = await fetch(`${firstBase}/api/v1/events/stream`, { headers: { authorization: `Bearer ${ending.secret}` } });
    expect(opened.status).toBe(200);
    stream = opened.text().then(() => 'ended' as const);
    webhookId = (await ok(first, 'POST', '/api/v1/webhooks', ending.secret, { name: 'matrix', url: receiver.url(path), events: ['custom.*'] })).id;
    scheduleId = (
      await ok(first, 'POST', '/api/v1/schedules', ending.secret, {
        name: 'matrix',
        cron: '* * * * *',
        action: { type: 'publish_event', eventType: 'custom.tick', data: {} },
      })
    ).id;
    // Both act while the credential lives: a delivery arrives, the next minute brings a run.
    const before = await publish('before');
    await until(() => deliveredTo(path, before) === 1, 'the delivery made while the credential lives');
    clock.advance(MINUTE);
    await until(async () => (await runsOf(scheduleId)) === 1, 'the run made while the credential lives');
    runsBefore = 1;
    await ending.end();
  }, 60_000);

  it('the webhook is disabled with the reason on both apps, audited, and delivers nothing more', async () => {
    const after = await publish('after');
    for (const app of [first, second]) {
      await until(async () => (await ok(app, 'GET', `/api/v1/webhooks/${webhookId}`, owner.key)).disabledReason === reason, `the webhook's ${reason}`);
      expect(await ok(app, 'GET', `/api/v1/webhooks/${webhookId}`, owner.key)).toMatchObject({ enabled: false, disabledReason: reason });
    }
    const audit = await ok(second, 'GET', '/api/v1/audit?type=webhook.disabled', owner.key);
    expect(audit.data.filter((record: any) => record.target.id === webhookId)).toEqual([
      expect.objectContaining({ actor: { kind: 'system' }, data: expect.objectContaining({ reason }) }),
    ]);
    // A cut-off clears the queue: nothing of the event published after the end is pending or sent.
    const deliveries = await ok(first, 'GET', `/api/v1/webhooks/${webhookId}/deliveries`, owner.key);
    expect(deliveries.data.filter((delivery: any) => delivery.status === 'pending')).toEqual([]);
    expect(deliveredTo(path, after)).toBe(0);
  });

  it('the schedule is disabled with the reason on both apps, audited, and runs no more', async () => {
    for (const app of [first, second]) {
      await until(async () => (await ok(app, 'GET', `/api/v1/schedules/${scheduleId}`, owner.key)).disabledReason === reason, `the schedule's ${reason}`);
      expect(await ok(app, 'GET', `/api/v1/schedules/${scheduleId}`, owner.key)).toMatchObject({ enabled: false, disabledReason: reason, nextRunAt: null });
    }
    const audit = await ok(second, 'GET', '/api/v1/audit?type=schedule.disabled', owner.key);
    expect(audit.data.filter((record: any) => record.target.id === scheduleId)).toEqual([
      expect.objectContaining({ actor: { kind: 'system' }, data: expect.objectContaining({ reason }) }),
    ]);
    clock.advance(MINUTE);
    await bothSchedulersPassed();
    expect(await runsOf(scheduleId)).toBe(runsBefore);
  });

  // An expiry closes a stream at its next heartbeat (15 s), which this file does not wait for.
  it.runIf(reason === 'credential_revoked')('an event stream opened with it ends at once, in the process that did not revoke it too', async () => {
    const outcome = await Promise.race([stream, new Promise((resolve) => setTimeout(() => resolve('still open'), 5_000))]);
    expect(outcome).toBe('ended');
  });

  it('what the credential granted stops too', async () => {
    await (ending.grantStopped ?? (() => refusedEverywhere(ending.secret)))();
  });
});
