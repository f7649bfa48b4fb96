// The webhook tools of api-decisions §14 through the real server and a real loopback receiver: a
// test delivery (also while paused), a replay of a range of the log, a recover of what failed
// since a time, the delivery history filtered and paged, each with its refusals.
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { sleep, until } from '../support/wait.js';
import { Receiver, type Received } from './support.js';

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_SCHEDULE: '0,0.1,0.1,0.1,0.1',
  WEBHOOK_TIMEOUT_MS: '3000',
  WEBHOOK_LEASE_SECONDS: '10',
  EVENT_RETENTION: '50',
  RETENTION_INTERVAL_MS: '100',
};

interface Delivery {
  id: string;
  eventId: number;
  eventType: string;
  status: 'pending' | 'succeeded' | 'failed';
  test: boolean;
  replay: boolean;
  attempts: Array<{ responseStatus: number | null; requestHeaders: Record<string, string>; responseBody: string | null }>;
}

describe('webhook tools', () => {
  const app = useTestApp({ env: ENV });
  const receiver = new Receiver();
  beforeAll(async () => {
    await receiver.start();
  });
  afterAll(async () => {
    await receiver.close();
  });

  let counter = 0;
  const unique = (kind: string) => `/${kind}?n=${++counter}`;
  const onPath = (path: string) => receiver.received.filter((entry) => entry.path === path);

  async function createHook(key: string, path: string, body: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
    const response = await app().request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key,
      body: { name: 'tools', url: receiver.url(path), events: ['custom.*'], ...body },
    });
    expect(response.status, response.body).toBe(201);
    return response.json;
  }

  async function publish(key: string, type: string): Promise<number> {
    const response = await app().request({ method: 'POST', url: '/api/v1/events', key, body: { type, data: {} } });
    expect(response.status, response.body).toBe(201);
    return response.json.id;
  }

  async function deliveries(key: string, hookId: string, query = ''): Promise<Delivery[]> {
    const response = await app().request({ url: `/api/v1/webhooks/${hookId}/deliveries${query}`, key });
    expect(response.status, response.body).toBe(200);
    return response.json.data;
  }

  const post = (key: string, url: string, body?: unknown, headers?: Record<string, string>) => app().request({ method: 'POST', url, key, body, headers });
  const eventIds = (received: Received[]) => received.map((entry) => Number(entry.headers['x-service-event-id']));

  describe('POST …/test', () => {
    it('sends a signed webhook.test delivery with event id 0, listed with test: true, even while paused', async () => {
      const full = await app().account();
      const path = unique('ok');
      const hook = await createHook(full.key, path, { enabled: false });
      const response = await post(full.key, `/api/v1/webhooks/${hook.id}/test`);
      expect(response.status, response.body).toBe(202);
      expect(Object.keys(response.json)).toEqual(['deliveryId']);
      await until(() => onPath(path).length === 1, 'the test delivery');
      const [received] = onPath(path);
      const body = JSON.parse(received!.rawBody);
      expect(Object.keys(body)).toEqual(['id', 'type', 'data', 'createdAt']);
      expect(body).toMatchObject({ id: 0, type: 'webhook.test', data: { webhookId: hook.id } });
      expect(received!.headers['x-service-event-id']).toBe('0');
      expect(received!.headers['x-service-delivery-id']).toBe(response.json.deliveryId);
      expect(received!.headers['x-service-replay']).toBeUndefined();
      const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(received!.headers[name])]));
      expect(new StandardWebhook(hook.secret).verify(received!.rawBody, headers)).toEqual(body);
      await until(async () => (await deliveries(full.key, hook.id))[0]?.status === 'succeeded', 'the test to be recorded');
      const [listed] = await deliveries(full.key, hook.id);
      expect(listed).toMatchObject({ id: response.json.deliveryId, eventId: 0, eventType: 'webhook.test', test: true, replay: false });
      // Paused: the account's events still wait.
      await publish(full.key, 'custom.waiting');
      await sleep(300);
      expect(onPath(path)).toHaveLength(1);
    });

    it("needs webhooks:manage, answers 404 for another account's webhook, and replays with the same Idempotency-Key", async () => {
      const owner = await app().account();
      const hook = await createHook(owner.key, unique('ok'));
      const reader = await app().account(['events:read']);
      expect((await post(reader.key, `/api/v1/webhooks/${hook.id}/test`)).status).toBe(403);
      const other = await app().account();
      const foreign = await post(other.key, `/api/v1/webhooks/${hook.id}/test`);
      expect(foreign.status).toBe(404);
      expect(foreign.json.error.code).toBe('not_found');
      const headers = { 'idempotency-key': `test-${hook.id}` };
      const first = await post(owner.key, `/api/v1/webhooks/${hook.id}/test`, undefined, headers);
      const second = await post(owner.key, `/api/v1/webhooks/${hook.id}/test`, undefined, headers);
      expect(first.status).toBe(202);
      expect(second.status).toBe(202);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.json).toEqual(first.json);
      expect((await deliveries(owner.key, hook.id)).filter((delivery) => delivery.test)).toHaveLength(1);
    });
  });

  describe('POST …/replay', () => {
    it('queues a new delivery of each matching retained event in (after, until], marked X-Service-Replay', async () => {
      const caller = await app().account();
      const path = unique('ok');
      const hook = await createHook(caller.key, path, { events: ['custom.a'] });
      const ids = [];
      for (const type of ['custom.a', 'custom.b', 'custom.a', 'custom.a', 'custom.b']) ids.push(await publish(caller.key, type));
      const matching = [ids[0]!, ids[2]!, ids[3]!];
      await until(() => onPath(path).length === 3, 'the live deliveries');
      const live = onPath(path);

      const replay = await post(caller.key, `/api/v1/webhooks/${hook.id}/replay`, { after: 0 });
      expect(replay.status, replay.body).toBe(202);
      expect(replay.json).toEqual({ queued: 3, skipped: 0 });
      await until(() => onPath(path).length === 6, 'the replayed deliveries');
      const replayed = onPath(path).slice(3);
      expect(eventIds(replayed).sort((a, b) => a - b)).toEqual(matching);
      for (const entry of replayed) {
        expect(entry.headers['x-service-replay']).toBe('true');
        const original = live.find((other) => other.headers['x-service-event-id'] === entry.headers['x-service-event-id'])!;
        expect(entry.rawBody).toBe(original.rawBody);
        expect(entry.headers['x-service-delivery-id']).not.toBe(original.headers['x-service-delivery-id']);
      }
      const bounded = await post(caller.key, `/api/v1/webhooks/${hook.id}/replay`, { after: ids[0]!, until: ids[2]! });
      expect(bounded.json).toEqual({ queued: 1, skipped: 0 });
      await until(() => onPath(path).length === 7, 'the bounded replay');
      expect(eventIds(onPath(path).slice(6))).toEqual([ids[2]]);
      await until(async () => (await deliveries(caller.key, hook.id, '?status=pending')).length === 0, 'every delivery to finish');
      const listed = await deliveries(caller.key, hook.id);
      expect(listed.filter((delivery) => delivery.replay)).toHaveLength(4);
      expect(listed.filter((delivery) => !delivery.replay)).toHaveLength(3);
    });

    it('counts what the full queue leaves out as skipped', async () => {
      const caller = await app().account();
      const path = unique('ok');
      const hook = await createHook(caller.key, path, { enabled: false });
      // 990 deliveries wait while it is paused; the queue holds 1,000.
      const operations = Array.from({ length: 990 }, (_, index) => ({ op: 'publish', type: 'custom.load', data: { index } }));
      const batch = await post(caller.key, '/api/v1/batch', { operations });
      expect(batch.status, batch.body).toBe(200);
      const replay = await post(caller.key, `/api/v1/webhooks/${hook.id}/replay`, { after: 950 });
      expect(replay.status, replay.body).toBe(202);
      expect(replay.json).toEqual({ queued: 10, skipped: 30 });
      const replayed = await deliveries(caller.key, hook.id, '?status=pending&limit=20');
      expect(
        replayed
          .filter((delivery) => delivery.replay)
          .map((delivery) => delivery.eventId)
          .sort((a, b) => a - b),
      ).toEqual(Array.from({ length: 10 }, (_, index) => 951 + index));
      const full = await post(caller.key, `/api/v1/webhooks/${hook.id}/test`);
      expect(full.status).toBe(409);
      expect(path).toMatch(/^\/ok/);
    });

    it('refuses an expired cursor (410), until before after (400), a missing scope (403) and unknown fields (400)', async () => {
      const caller = await app().account();
      const hook = await createHook(caller.key, unique('ok'));
      const batch = await post(caller.key, '/api/v1/batch', {
        operations: Array.from({ length: 60 }, () => ({ op: 'publish', type: 'custom.old', data: {} })),
      });
      expect(batch.status).toBe(200);
      const expired = await post(caller.key, `/api/v1/webhooks/${hook.id}/replay`, { after: 0 });
      expect(expired.status).toBe(410);
      expect(expired.json.error.code).toBe('cursor_expired');
      expect(expired.json.error.details[0].oldestCursor).toBe(10);
      const backwards = await post(caller.key, `/api/v1/webhooks/${hook.id}/replay`, { after: 30, until: 20 });
      expect(backwards.status).toBe(400);
      expect(backwards.json.error.details[0].path).toBe('/until');
      expect((await post(caller.key, `/api/v1/webhooks/${hook.id}/replay`, { after: 30, from: 2 })).status).toBe(400);
      expect((await post(caller.key, `/api/v1/webhooks/${hook.id}/replay`, { after: -1 })).status).toBe(400);
      expect((await post(caller.key, `/api/v1/webhooks/${hook.id}/replay`, {})).status).toBe(400);
      const manageOnly = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'manage', scopes: ['webhooks:manage'] } });
      const refused = await post(manageOnly.json.key, `/api/v1/webhooks/${hook.id}/replay`, { after: 30 });
      expect(refused.status).toBe(403);
      expect(refused.json.error.code).toBe('insufficient_scope');
    });
  });

  describe('POST …/recover', () => {
    it('sends again every delivery that ended failed since a time, once the receiver is back', async () => {
      const caller = await app().account();
      const name = `recover-${++counter}`;
      const path = `/down/${name}`;
      receiver.down.add(name);
      const hook = await createHook(caller.key, path);
      const before = new Date(Date.now() - 1000).toISOString();
      const ids = [await publish(caller.key, 'custom.one'), await publish(caller.key, 'custom.two')];
      await until(async () => (await deliveries(caller.key, hook.id, '?status=failed')).length === 2, 'both to fail');
      expect(onPath(path)).toHaveLength(10);
      receiver.down.delete(name);

      const future = await post(caller.key, `/api/v1/webhooks/${hook.id}/recover`, { since: new Date(Date.now() + 60_000).toISOString() });
      expect(future.json).toEqual({ queued: 0 });
      const recover = await post(caller.key, `/api/v1/webhooks/${hook.id}/recover`, { since: before });
      expect(recover.status, recover.body).toBe(202);
      expect(recover.json).toEqual({ queued: 2 });
      await until(() => onPath(path).length === 12, 'the recovered deliveries');
      const recovered = onPath(path).slice(10);
      expect(eventIds(recovered).sort((a, b) => a - b)).toEqual(ids);
      expect(recovered.every((entry) => entry.headers['x-service-replay'] === 'true')).toBe(true);
      await until(async () => (await deliveries(caller.key, hook.id, '?status=succeeded')).length === 2, 'the recovered to succeed');
      const succeeded = await deliveries(caller.key, hook.id, '?status=succeeded');
      expect(succeeded.every((delivery) => delivery.replay && delivery.attempts[0]!.responseBody === 'up')).toBe(true);

      expect((await post(caller.key, `/api/v1/webhooks/${hook.id}/recover`, { since: 'yesterday' })).status).toBe(400);
      expect((await post(caller.key, `/api/v1/webhooks/${hook.id}/recover`, {})).status).toBe(400);
    });
  });

  it('each tool answers 401 without a key, 403 without webhooks:manage, 404 for an unknown or foreign webhook', async () => {
    const owner = await app().account();
    const hook = await createHook(owner.key, unique('ok'), { enabled: false });
    const reader = await app().account(['events:read']);
    const stranger = await app().account();
    const tools: Array<[string, unknown]> = [
      ['test', undefined],
      ['replay', { after: 0 }],
      ['recover', { since: '2026-01-01T00:00:00.000Z' }],
      ['deliveries/dlv_none/retry', undefined],
    ];
    for (const [tool, body] of tools) {
      const unauthenticated = await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/${tool}`, body });
      expect(unauthenticated.status, tool).toBe(401);
      const forbidden = await post(reader.key, `/api/v1/webhooks/${hook.id}/${tool}`, body);
      expect([forbidden.status, forbidden.json.error.code], tool).toEqual([403, 'insufficient_scope']);
      for (const [key, id] of [
        [owner.key, 'wh_unknown'],
        [stranger.key, hook.id],
      ] as const) {
        const missing = await post(key, `/api/v1/webhooks/${id}/${tool}`, body);
        expect([missing.status, missing.json.error.code], `${tool} ${id}`).toEqual([404, 'not_found']);
      }
    }
  });

  describe('GET …/deliveries', () => {
    it('filters by status and pages with limit and before, newest first', async () => {
      const caller = await app().account();
      const ok = await createHook(caller.key, unique('ok'));
      for (let index = 0; index < 5; index++) await publish(caller.key, 'custom.page');
      await until(async () => (await deliveries(caller.key, ok.id, '?status=succeeded')).length === 5, 'five deliveries');
      const all = await deliveries(caller.key, ok.id);
      expect(all.map((delivery) => delivery.eventId)).toEqual([...all.map((delivery) => delivery.eventId)].sort((a, b) => b - a));
      const first = await deliveries(caller.key, ok.id, '?limit=2');
      const second = await deliveries(caller.key, ok.id, `?limit=2&before=${first[1]!.id}`);
      const third = await deliveries(caller.key, ok.id, `?limit=2&before=${second[1]!.id}`);
      expect([...first, ...second, ...third].map((delivery) => delivery.id)).toEqual(all.map((delivery) => delivery.id));
      expect(third).toHaveLength(1);
      expect(await deliveries(caller.key, ok.id, '?status=failed')).toEqual([]);
      const [third3] = third;
      expect((await deliveries(caller.key, ok.id, `?eventId=${third3!.eventId}`)).map((delivery) => delivery.id)).toEqual([third3!.id]);
      expect(await deliveries(caller.key, ok.id, '?eventId=999999')).toEqual([]);
      for (const query of ['?status=done', '?limit=0', '?limit=501', '?before=dlv_nothing', '?other=1', '?eventId=-1', '?eventId=x']) {
        const refused = await app().request({ url: `/api/v1/webhooks/${ok.id}/deliveries${query}`, key: caller.key });
        expect(refused.status, query).toBe(400);
        expect(refused.json.error.code).toBe('invalid_request');
      }
    });
  });
});
