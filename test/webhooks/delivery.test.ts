// Webhook delivery to real HTTP receivers on loopback (WEBHOOK_ALLOW_PRIVATE_TARGETS on, as in
// development), spec "Webhook delivery" and docs/decisions.md: "Webhooks": the exact body and headers, signatures
// checked by an independent implementation (the stripe package) and by the receiver example in
// docs/decisions.md, retries on a fast schedule, failing, hanging, redirecting and slow receivers
// that never hold up the others, rotation, manual retry, pausing, the queue cap with its audit
// records and gap header, the history limit, and delivery stopping with its credential.
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Stripe from 'stripe';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/processes.js';
import { ManualClock, useTestApp, type TestAccount, type TestApp } from '../support/app.js';
import { sleep, until } from '../support/wait.js';
import { Receiver, type Received } from './support.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RETRY_SCHEDULE = [0, 0.2, 0.6, 0.3, 0.1];
const TIMEOUT_MS = 3000;
const BACKLOG = 100;
const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE.join(','),
  WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
  WEBHOOK_LEASE_SECONDS: '10',
  RETENTION_INTERVAL_MS: '200',
  SECRETS_KEY: Buffer.alloc(32, 3).toString('base64'),
};

const stripe = new Stripe('sk_test_devdata_webhook_tests');

interface Delivery {
  id: string;
  eventId: number;
  eventType: string;
  status: 'pending' | 'succeeded' | 'failed';
  test: boolean;
  replay: boolean;
  attempts: Array<{
    attempt: number;
    at: string;
    responseStatus: number | null;
    error: string | null;
    durationMs: number;
    requestHeaders: Record<string, string>;
    responseBody: string | null;
  }>;
  createdAt: string;
  completedAt: string | null;
  nextAttemptAt: string | null;
}

type Verify = (rawBody: string, header: string, secret: string, toleranceSeconds?: number) => boolean;

/** The receiver example of docs/decisions.md, as written there. */
async function docsVerify(dir: string): Promise<Verify> {
  const decisions = readFileSync(join(ROOT, 'docs', 'decisions.md'), 'utf8');
  const section = decisions.slice(decisions.indexOf('### Verifying a delivery'));
  const code = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  expect(code, 'the js example under "Verifying a delivery"').toBeDefined();
  const file = join(dir, 'verify.mjs');
  writeFileSync(file, code!);
  return ((await import(pathToFileURL(file).href)) as { verify: Verify }).verify;
}

function sign(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** Whether stripe.webhooks.constructEvent accepts the delivery with this secret. */
function stripeAccepts(received: Received, secret: string): boolean {
  try {
    stripe.webhooks.constructEvent(received.rawBody, String(received.headers['x-service-signature']), secret);
    return true;
  } catch {
    return false;
  }
}

function eventIdOf(received: Received): number {
  return Number(received.headers['x-service-event-id']);
}

describe('webhook delivery', () => {
  const app = useTestApp({ env: ENV });
  const receiver = new Receiver();
  let workDir: string;
  let verify: Verify;

  beforeAll(async () => {
    await receiver.start();
    workDir = mkdtempSync(join(tmpdir(), 'devdata-webhooks-'));
    verify = await docsVerify(workDir);
  });
  afterAll(async () => {
    // Hanging requests end first, so the app's shutdown does not wait for their timeout.
    await receiver.close();
    rmSync(workDir, { recursive: true, force: true });
  });

  async function createHook(key: string, path: string, body: Record<string, unknown> = {}): Promise<{ id: string; secret: string; url: string }> {
    const response = await app().request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key,
      body: { name: `to ${path}`, url: receiver.url(path), events: ['custom.*'], ...body },
    });
    expect(response.status, response.body).toBe(201);
    return response.json;
  }

  async function publish(
    key: string,
    type: string,
    data: Record<string, unknown> = {},
  ): Promise<{ id: number; type: string; data: unknown; createdAt: string }> {
    const response = await app().request({ method: 'POST', url: '/api/v1/events', key, body: { type, data } });
    expect(response.status, response.body).toBe(201);
    return response.json;
  }

  async function deliveries(key: string, hookId: string): Promise<Delivery[]> {
    const response = await app().request({ url: `/api/v1/webhooks/${hookId}/deliveries`, key });
    expect(response.status, response.body).toBe(200);
    expect(Object.keys(response.json)).toEqual(['data']);
    return response.json.data;
  }

  async function auditOf(key: string, type: string): Promise<Array<Record<string, any>>> {
    const response = await app().request({ url: `/api/v1/audit?type=${type}&limit=1000`, key });
    expect(response.status, response.body).toBe(200);
    return response.json.data;
  }

  /** A unique receiver path per test, so each test reads only its own requests. */
  let pathCounter = 0;
  const unique = (kind: string) => `/${kind}?n=${++pathCounter}`;
  const onPath = (path: string) => receiver.received.filter((entry) => entry.path === path);

  describe('what the receiver gets', () => {
    it('POSTs exactly {"id","type","data","createdAt"} with the decided headers, verifiable by stripe and by the docs example', async () => {
      const caller = await app().account();
      const path = unique('ok');
      const hook = await createHook(caller.key, path);
      const event = await publish(caller.key, 'custom.order_paid', { amount: 1250, currency: 'EUR', lines: [{ sku: 'é✓', qty: 2 }], note: null });
      await until(() => onPath(path).length === 1, 'the delivery');
      const received = onPath(path)[0]!;

      expect(received.method).toBe('POST');
      expect(received.rawBody).toBe(JSON.stringify({ id: event.id, type: event.type, data: event.data, createdAt: event.createdAt }));
      expect(Object.keys(JSON.parse(received.rawBody))).toEqual(['id', 'type', 'data', 'createdAt']);
      expect(received.headers['content-type']).toBe('application/json');
      expect(received.headers['user-agent']).toBe('devdata-webhooks/1.3.0');
      expect(received.headers['x-service-event-id']).toBe(String(event.id));
      expect(received.headers['x-service-event-id']).toMatch(/^\d+$/);
      expect(received.headers['x-service-delivery-id']).toMatch(/^dlv_[A-Za-z0-9_-]{22,}$/);
      expect(received.headers['x-service-event-gap']).toBeUndefined();
      const header = String(received.headers['x-service-signature']);
      expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      const timestamp = Number(/^t=(\d+)/.exec(header)![1]);
      expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(10);
      expect(header).toBe(sign(hook.secret, timestamp, received.rawBody));

      // An independent implementation accepts it, and refuses another secret or a changed body.
      const parsed = stripe.webhooks.constructEvent(received.rawBody, header, hook.secret) as unknown as Record<string, unknown>;
      expect(parsed).toEqual({ id: event.id, type: event.type, data: event.data, createdAt: event.createdAt });
      expect(() => stripe.webhooks.constructEvent(received.rawBody, header, 'whsec_other')).toThrow();
      expect(() => stripe.webhooks.constructEvent(received.rawBody.replace('1250', '1251'), header, hook.secret)).toThrow();

      // The copy-paste receiver of docs/decisions.md agrees, and rejects timestamps older than 5 minutes.
      expect(verify(received.rawBody, header, hook.secret)).toBe(true);
      expect(verify(Buffer.from(received.rawBody, 'utf8') as unknown as string, header, hook.secret)).toBe(true);
      expect(verify(received.rawBody, header, 'whsec_other')).toBe(false);
      expect(verify(`${received.rawBody} `, header, hook.secret)).toBe(false);
      const old = Math.floor(Date.now() / 1000) - 301;
      expect(verify(received.rawBody, sign(hook.secret, old, received.rawBody), hook.secret)).toBe(false);
      expect(verify(received.rawBody, sign(hook.secret, old + 10, received.rawBody), hook.secret)).toBe(true);
      expect(() => stripe.webhooks.constructEvent(received.rawBody, sign(hook.secret, old, received.rawBody), hook.secret)).toThrow();

      // Standard Webhooks' headers, verified by its own library and by Svix's, unchanged.
      expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(received.headers['webhook-id']).toBe(received.headers['x-service-delivery-id']);
      expect(received.headers['webhook-timestamp']).toBe(String(timestamp));
      expect(received.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      const otherSecret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
      const standardHeaders = {
        'webhook-id': String(received.headers['webhook-id']),
        'webhook-timestamp': String(received.headers['webhook-timestamp']),
        'webhook-signature': String(received.headers['webhook-signature']),
      };
      expect(new StandardWebhook(hook.secret).verify(received.rawBody, standardHeaders)).toEqual(parsed);
      // Svix's verifier returns nothing and throws on a failure.
      expect(() => new SvixWebhook(hook.secret).verify(received.rawBody, standardHeaders)).not.toThrow();
      const svixHeaders = {
        'svix-id': standardHeaders['webhook-id'],
        'svix-timestamp': standardHeaders['webhook-timestamp'],
        'svix-signature': standardHeaders['webhook-signature'],
      };
      expect(() => new SvixWebhook(hook.secret).verify(received.rawBody, svixHeaders)).not.toThrow();
      expect(() => new SvixWebhook(otherSecret).verify(received.rawBody, svixHeaders)).toThrow();
      expect(() => new StandardWebhook(otherSecret).verify(received.rawBody, standardHeaders)).toThrow();
      expect(() => new SvixWebhook(hook.secret).verify(received.rawBody.replace('1250', '1251'), standardHeaders)).toThrow();
      expect(() => new StandardWebhook(hook.secret).verify(received.rawBody, { ...standardHeaders, 'webhook-id': 'dlv_other' })).toThrow();

      // The history shows it, in the decided shape: the headers sent and the start of the answer.
      await until(async () => (await deliveries(caller.key, hook.id))[0]?.status === 'succeeded', 'the delivery to be recorded');
      const [delivery] = await deliveries(caller.key, hook.id);
      expect(delivery).toEqual({
        id: received.headers['x-service-delivery-id'],
        eventId: event.id,
        eventType: 'custom.order_paid',
        status: 'succeeded',
        test: false,
        replay: false,
        attempts: [
          {
            attempt: 1,
            at: expect.stringMatching(ISO_MS),
            responseStatus: 200,
            error: null,
            durationMs: expect.any(Number),
            requestHeaders: {
              'content-type': 'application/json',
              'user-agent': 'devdata-webhooks/1.3.0',
              'x-service-signature': header,
              'x-service-event-id': String(event.id),
              'x-service-delivery-id': received.headers['x-service-delivery-id'],
              ...standardHeaders,
            },
            responseBody: 'ok',
          },
        ],
        createdAt: expect.stringMatching(ISO_MS),
        completedAt: expect.stringMatching(ISO_MS),
        nextAttemptAt: null,
      });
      expect(delivery!.attempts[0]!.durationMs).toBeGreaterThanOrEqual(0);
    });

    it('sends only the events a webhook subscribed to: exact types, custom.*, or one exact custom type', async () => {
      const caller = await app().account();
      const [all, exact, created] = [unique('ok'), unique('ok'), unique('ok')];
      await createHook(caller.key, all);
      await createHook(caller.key, exact, { events: ['custom.door'] });
      await createHook(caller.key, created, { events: ['resource.created'] });
      const door = await publish(caller.key, 'custom.door');
      const bell = await publish(caller.key, 'custom.bell');
      const resource = await app().request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'Lamp', type: 'switch', state: false } });
      expect(resource.status, resource.body).toBe(201);
      const patched = await app().request({ method: 'PATCH', url: `/api/v1/resources/${resource.json.id}`, key: caller.key, body: { state: true } });
      expect(patched.status).toBe(200);
      const marker = await publish(caller.key, 'custom.door');

      await until(() => onPath(exact).length === 2 && onPath(all).length === 3 && onPath(created).length === 1, 'every matching delivery');
      await sleep(300);
      expect(onPath(all).map(eventIdOf)).toEqual(expect.arrayContaining([door.id, bell.id, marker.id]));
      expect(onPath(all)).toHaveLength(3);
      expect(onPath(exact).map(eventIdOf).sort()).toEqual([door.id, marker.id].sort());
      const createdBody = JSON.parse(onPath(created)[0]!.rawBody);
      expect(createdBody).toMatchObject({ type: 'resource.created', data: expect.objectContaining({}) });
      expect(onPath(created)).toHaveLength(1);
    });

    // The account row counts its webhooks (migration 0011), read with the event counter: a write
    // looks its webhooks up only when there are some, so the count must follow every create and delete.
    it('queues for a webhook from the first event after its creation and none after its deletion, as the account row counts them', async () => {
      const caller = await app().account();
      const countOnRow = async () =>
        Number(
          (await app().context.storage.db.selectFrom('accounts').select('webhook_count').where('id', '=', caller.accountId).executeTakeFirstOrThrow())
            .webhook_count,
        );
      const before = await publish(caller.key, 'custom.before');
      expect(await countOnRow()).toBe(0);
      const [first, second] = [unique('ok'), unique('ok')];
      const one = await createHook(caller.key, first);
      const two = await createHook(caller.key, second);
      expect(await countOnRow()).toBe(2);
      const during = await publish(caller.key, 'custom.during');
      // Delivered before the deletion: deleting a webhook drops its deliveries still pending, and
      // the dispatcher may not have taken this one yet (on PostgreSQL it once had not).
      await until(() => onPath(first).length === 1, 'the delivery of the event during to the first webhook');
      expect((await app().request({ method: 'DELETE', url: `/api/v1/webhooks/${one.id}`, key: caller.key })).status).toBe(204);
      expect((await app().request({ method: 'DELETE', url: `/api/v1/webhooks/${one.id}`, key: caller.key })).status).toBe(404);
      expect(await countOnRow()).toBe(1);
      const after = await publish(caller.key, 'custom.after');
      await until(() => onPath(second).length === 2, 'both deliveries to the remaining webhook');
      expect(onPath(second).map(eventIdOf).sort()).toEqual([during.id, after.id].sort());
      expect(onPath(first).map(eventIdOf)).toEqual([during.id]);
      expect(onPath(second).map(eventIdOf)).not.toContain(before.id);
      expect((await app().request({ method: 'DELETE', url: `/api/v1/webhooks/${two.id}`, key: caller.key })).status).toBe(204);
      expect(await countOnRow()).toBe(0);
      await publish(caller.key, 'custom.none');
      await sleep(200);
      expect(onPath(second)).toHaveLength(2);
    });

    it('delivers each of many concurrent events of an account with a webhook once (they commit one by one with their deliveries)', async () => {
      const caller = await app().account();
      const path = unique('ok');
      await createHook(caller.key, path);
      const returned = await Promise.all(Array.from({ length: 40 }, (_, i) => publish(caller.key, 'custom.burst', { i })));
      const first = Math.min(...returned.map((event) => event.id));
      expect(returned.map((event) => event.id).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => first + i));
      await until(() => onPath(path).length >= 40, 'a delivery of every event');
      await sleep(200);
      expect(
        onPath(path)
          .map(eventIdOf)
          .sort((a, b) => a - b),
      ).toEqual(returned.map((event) => event.id).sort((a, b) => a - b));
    });

    it('delivers each of many concurrent updates of an account with a webhook once (each commits with its delivery)', async () => {
      const caller = await app().account();
      const path = unique('ok');
      const created = await app().request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'Meter', type: 'sensor', state: 0 } });
      expect(created.status).toBe(201);
      await createHook(caller.key, path, { events: ['resource.updated'] });
      const updates = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          app().request({ method: 'PATCH', url: `/api/v1/resources/${created.json.id}`, key: caller.key, body: { state: i + 1 } }),
        ),
      );
      expect(updates.map((update) => update.status)).toEqual(updates.map(() => 200));
      expect(updates.map((update) => update.json.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 2));
      await until(() => onPath(path).length >= 40, 'a delivery of every update');
      await sleep(200);
      const delivered = onPath(path).map(
        (delivery) => JSON.parse(delivery.rawBody) as { type: string; data: { resource: { version: number; state: number } } },
      );
      expect(delivered.every((event) => event.type === 'resource.updated')).toBe(true);
      // Each update once, with the resource as its response gave it.
      expect(delivered.map((event) => event.data.resource.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 2));
      const stateOf = new Map(updates.map((update) => [update.json.version as number, update.json.state as number]));
      for (const event of delivered) expect(event.data.resource.state).toBe(stateOf.get(event.data.resource.version));
    });

    it('retries a failing receiver on the schedule, up to five attempts, with one delivery id, then marks it failed', async () => {
      const caller = await app().account();
      const path = unique('fail');
      const hook = await createHook(caller.key, path);
      const event = await publish(caller.key, 'custom.retry_me');
      await until(async () => (await deliveries(caller.key, hook.id))[0]?.status === 'failed', 'five failed attempts', 20_000);
      const attempts = onPath(path);
      expect(attempts).toHaveLength(5);
      const deliveryId = attempts[0]!.headers['x-service-delivery-id'];
      for (const attempt of attempts) {
        expect(attempt.headers['x-service-delivery-id']).toBe(deliveryId);
        expect(attempt.headers['x-service-event-id']).toBe(String(event.id));
        expect(attempt.rawBody).toBe(attempts[0]!.rawBody);
        expect(stripeAccepts(attempt, hook.secret)).toBe(true);
      }
      // The delay before attempt n+1 is at least the schedule's n-th entry after attempt n.
      for (let index = 1; index < attempts.length; index++) {
        expect(attempts[index]!.at - attempts[index - 1]!.at, `delay before attempt ${index + 1}`).toBeGreaterThanOrEqual(RETRY_SCHEDULE[index]! * 1000 - 5);
      }
      const [delivery] = await deliveries(caller.key, hook.id);
      expect(delivery).toMatchObject({ id: deliveryId, eventId: event.id, status: 'failed', nextAttemptAt: null, completedAt: expect.stringMatching(ISO_MS) });
      expect(delivery!.attempts.map((attempt) => [attempt.attempt, attempt.responseStatus, attempt.error])).toEqual(
        [1, 2, 3, 4, 5].map((attempt) => [attempt, 500, 'receiver answered 500']),
      );
      await sleep(800);
      expect(onPath(path)).toHaveLength(5);

      // Usage counts every attempt.
      const usage = await app().request({ url: '/api/v1/usage?days=1', key: caller.key });
      expect(usage.status).toBe(200);
      expect(usage.json.totals.webhookDeliveries).toBe(5);
    });

    it('records a hanging receiver as timed out after the attempt limit, and schedules the next attempt', async () => {
      const caller = await app().account();
      const path = unique('hang');
      const hook = await createHook(caller.key, path);
      await publish(caller.key, 'custom.slowpoke');
      await until(async () => ((await deliveries(caller.key, hook.id))[0]?.attempts.length ?? 0) >= 1, 'the first attempt to time out', 20_000);
      const [delivery] = await deliveries(caller.key, hook.id);
      expect(delivery!.attempts[0]).toMatchObject({ attempt: 1, responseStatus: null, error: `timed out after ${TIMEOUT_MS / 1000} s` });
      expect(delivery!.attempts[0]!.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      // Ended by the limit, not by anything later (the lease runs 10 s): room for a busy machine's late timer.
      expect(delivery!.attempts[0]!.durationMs).toBeLessThan(TIMEOUT_MS * 2);
      // Paused, so the remaining attempts do not run while the other tests do.
      expect((await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, key: caller.key, body: { enabled: false } })).status).toBe(200);
    });

    it('never follows a redirect: a 3xx is a failed attempt', async () => {
      const caller = await app().account();
      const path = unique('redirect');
      const hook = await createHook(caller.key, path);
      await publish(caller.key, 'custom.moved');
      await until(async () => ((await deliveries(caller.key, hook.id))[0]?.attempts.length ?? 0) >= 1, 'the first attempt');
      const [delivery] = await deliveries(caller.key, hook.id);
      expect(delivery!.status).toBe('pending');
      expect(delivery!.attempts[0]).toMatchObject({ responseStatus: 302, error: 'redirect (302) not followed' });
      await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, key: caller.key, body: { enabled: false } });
      const followed = receiver.received.filter((entry) => entry.path === '/ok' && entry.headers['x-service-delivery-id'] === delivery!.id);
      expect(followed).toEqual([]);
    });

    it('treats any 2xx as success and waits for a slow receiver', async () => {
      const caller = await app().account();
      const [accepted, slow] = [unique('status/202'), unique('slow')];
      const hooks = [await createHook(caller.key, accepted), await createHook(caller.key, slow)];
      await publish(caller.key, 'custom.any');
      for (const hook of hooks) await until(async () => (await deliveries(caller.key, hook.id))[0]?.status === 'succeeded', `${hook.url} to succeed`);
      expect((await deliveries(caller.key, hooks[0]!.id))[0]!.attempts[0]!.responseStatus).toBe(202);
      expect((await deliveries(caller.key, hooks[1]!.id))[0]!.attempts[0]!.durationMs).toBeGreaterThanOrEqual(receiver.slowMs - 20);
    });

    it('keeps delivering to a healthy receiver while others hang and fail with an older backlog', async () => {
      const caller = await app().account();
      const [hang, fail, ok] = [unique('hang'), unique('fail'), unique('ok')];
      // A backlog larger than the dispatcher's 64 slots, older than anything the healthy webhook
      // gets: taken oldest first without a per-webhook share, it would fill every slot.
      const hanging = await createHook(caller.key, hang, { enabled: false });
      const failing = await createHook(caller.key, fail, { enabled: false });
      for (let start = 0; start < BACKLOG; start += 20) {
        await Promise.all(Array.from({ length: 20 }, (_, index) => publish(caller.key, 'custom.backlog', { index: start + index })));
      }
      const healthy = await createHook(caller.key, ok);
      for (const hook of [hanging, failing]) {
        expect((await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, key: caller.key, body: { enabled: true } })).status).toBe(200);
      }
      await until(() => onPath(hang).length > 0, 'the hanging receiver to be called');
      const published: number[] = [];
      for (let index = 0; index < 20; index++) published.push((await publish(caller.key, 'custom.burst', { index })).id);
      await until(() => new Set(onPath(ok).map(eventIdOf)).size === published.length, 'every event at the healthy receiver', 20_000);
      // Every healthy delivery arrived before the first hanging attempt gave up.
      const hangingAttempts = (await deliveries(caller.key, hanging.id)).flatMap((delivery) => delivery.attempts);
      expect(hangingAttempts).toEqual([]);
      expect(onPath(hang).length).toBeLessThanOrEqual(16);
      expect(new Set(onPath(ok).map(eventIdOf))).toEqual(new Set(published));
      await until(async () => (await deliveries(caller.key, healthy.id)).every((delivery) => delivery.status === 'succeeded'), 'the healthy history');
      for (const hook of [hanging, failing])
        await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, key: caller.key, body: { enabled: false } });
    });
  });

  describe('secrets, manual retry and pausing', () => {
    it('signs with the new secret from the very next attempt after rotation, never the old one', async () => {
      const caller = await app().account();
      const path = unique('ok');
      const hook = await createHook(caller.key, path);
      await publish(caller.key, 'custom.before');
      await until(() => onPath(path).length === 1, 'the first delivery');
      expect(stripeAccepts(onPath(path)[0]!, hook.secret)).toBe(true);

      const rotated = await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/rotate-secret`, key: caller.key });
      expect(rotated.status).toBe(200);
      await publish(caller.key, 'custom.after');
      await until(() => onPath(path).length === 2, 'the second delivery');
      expect(stripeAccepts(onPath(path)[1]!, rotated.json.secret)).toBe(true);
      expect(stripeAccepts(onPath(path)[1]!, hook.secret)).toBe(false);

      // A retry already queued is signed with the secret current at its attempt.
      const failing = unique('fail');
      const retried = await createHook(caller.key, failing);
      await publish(caller.key, 'custom.retried');
      await until(() => onPath(failing).length === 1, 'the first failing attempt');
      const next = await app().request({ method: 'POST', url: `/api/v1/webhooks/${retried.id}/rotate-secret`, key: caller.key });
      await until(() => onPath(failing).length >= 2, 'the second attempt');
      expect(stripeAccepts(onPath(failing)[0]!, retried.secret)).toBe(true);
      expect(stripeAccepts(onPath(failing)[1]!, next.json.secret)).toBe(true);
      expect(stripeAccepts(onPath(failing)[1]!, retried.secret)).toBe(false);
      await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${retried.id}`, key: caller.key, body: { enabled: false } });
    });

    it('retry requeues a completed delivery with the same delivery id (200), and is 409 while it is pending', async () => {
      const caller = await app().account();
      const failing = `/status/503`;
      const hook = await createHook(caller.key, failing, { events: ['custom.retry'] });
      const event = await publish(caller.key, 'custom.retry');
      await until(async () => (await deliveries(caller.key, hook.id))[0]?.status === 'failed', 'the delivery to fail', 20_000);
      const [failed] = await deliveries(caller.key, hook.id);

      // Pause it, so the requeued delivery stays pending while we look.
      const manageOnly = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: caller.key,
        body: { name: 'manage only', scopes: ['webhooks:manage'] },
      });
      expect((await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, key: manageOnly.json.key, body: { enabled: false } })).status).toBe(
        200,
      );
      const path = unique('ok');
      const moved = await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, key: caller.key, body: { url: receiver.url(path) } });
      expect(moved.status, moved.body).toBe(200);

      const retry = await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/deliveries/${failed!.id}/retry`, key: manageOnly.json.key });
      expect(retry.status, retry.body).toBe(200);
      expect(retry.json).toEqual({
        id: failed!.id,
        eventId: event.id,
        eventType: 'custom.retry',
        status: 'pending',
        test: false,
        replay: false,
        attempts: [],
        createdAt: failed!.createdAt,
        completedAt: null,
        nextAttemptAt: expect.stringMatching(ISO_MS),
      });
      const again = await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/deliveries/${failed!.id}/retry`, key: caller.key });
      expect(again.status, again.body).toBe(409);
      expect(again.json.error.code).toBe('conflict');
      await sleep(700);
      expect(onPath(path)).toEqual([]);

      expect((await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, key: caller.key, body: { enabled: true } })).status).toBe(200);
      await until(() => onPath(path).length === 1, 'the retried delivery');
      expect(onPath(path)[0]!.headers['x-service-delivery-id']).toBe(failed!.id);
      expect(onPath(path)[0]!.headers['x-service-event-id']).toBe(String(event.id));
      expect(stripeAccepts(onPath(path)[0]!, hook.secret)).toBe(true);
      await until(async () => (await deliveries(caller.key, hook.id))[0]?.status === 'succeeded', 'success to be recorded');
      expect((await deliveries(caller.key, hook.id))[0]!.attempts).toHaveLength(1);
    });

    it('queues while paused, sends nothing, and drains on re-enable', async () => {
      const caller = await app().account();
      const path = unique('ok');
      const hook = await createHook(caller.key, path, { enabled: false });
      const ids: number[] = [];
      for (let index = 0; index < 3; index++) ids.push((await publish(caller.key, 'custom.queued', { index })).id);
      await sleep(800);
      expect(onPath(path)).toEqual([]);
      const pending = await deliveries(caller.key, hook.id);
      expect(pending.map((delivery) => [delivery.eventId, delivery.status, delivery.attempts.length])).toEqual(
        [...ids].reverse().map((id) => [id, 'pending', 0]),
      );
      for (const delivery of pending) expect(delivery.nextAttemptAt).toMatch(ISO_MS);

      expect((await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, key: caller.key, body: { enabled: true } })).status).toBe(200);
      await until(() => onPath(path).length === 3, 'the queue to drain');
      expect(
        onPath(path)
          .map(eventIdOf)
          .sort((a, b) => a - b),
      ).toEqual(ids);
      const delivered = await deliveries(caller.key, hook.id);
      expect(new Set(delivered.map((delivery) => delivery.id))).toEqual(new Set(pending.map((delivery) => delivery.id)));
    });
  });

  describe('when the authorizing credential ends', () => {
    async function keyFor(owner: TestAccount): Promise<{ id: string; key: string }> {
      const response = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: owner.key,
        body: { name: 'webhook maker', scopes: ['webhooks:manage', 'events:read'] },
      });
      expect(response.status).toBe(201);
      return response.json;
    }

    it('revoking the key that created a webhook disables it with disabledReason, clears its queue and stops delivery', async () => {
      const owner = await app().account();
      const maker = await keyFor(owner);
      const [livePath, pausedPath] = [unique('ok'), unique('ok')];
      const live = await createHook(maker.key, livePath);
      const paused = await createHook(maker.key, pausedPath, { enabled: false });
      const first = await publish(owner.key, 'custom.before_revocation');
      await until(() => onPath(livePath).length === 1, 'the delivery before revocation');
      expect((await deliveries(owner.key, paused.id)).map((delivery) => delivery.status)).toEqual(['pending']);

      expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${maker.id}`, key: owner.key })).status).toBe(204);
      for (const hook of [live, paused]) {
        const got = await app().request({ url: `/api/v1/webhooks/${hook.id}`, key: owner.key });
        expect(got.json).toMatchObject({ enabled: false, disabledReason: 'credential_revoked' });
        expect((await deliveries(owner.key, hook.id)).filter((delivery) => delivery.status === 'pending')).toEqual([]);
      }
      await publish(owner.key, 'custom.after_revocation');
      await sleep(800);
      expect(onPath(livePath).map(eventIdOf)).toEqual([first.id]);
      expect(onPath(pausedPath)).toEqual([]);
      expect((await deliveries(owner.key, live.id)).map((delivery) => delivery.eventId)).toEqual([first.id]);
      const disabled = await auditOf(owner.key, 'webhook.disabled');
      expect(disabled.map((record) => [record.target.id, record.actor, record.data.reason]).sort()).toEqual(
        [live.id, paused.id].sort().map((id) => [id, { kind: 'system' }, 'credential_revoked']),
      );

      // A retry of what was sent before is refused while cut off; enabling makes the caller the authorizer.
      const [sent] = await deliveries(owner.key, live.id);
      expect((await app().request({ method: 'POST', url: `/api/v1/webhooks/${live.id}/deliveries/${sent!.id}/retry`, key: owner.key })).status).toBe(409);
      const enabled = await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${live.id}`, key: owner.key, body: { enabled: true } });
      expect(enabled.json).toMatchObject({ enabled: true, disabledReason: null });
      const third = await publish(owner.key, 'custom.after_enabling');
      await until(() => onPath(livePath).length === 2, 'delivery after enabling');
      expect(eventIdOf(onPath(livePath)[1]!)).toBe(third.id);
    });
  });

  describe('queue cap, gaps and history', () => {
    it('queues at most 1,000 per webhook, records queue_full, queue_resumed and event_gap, marks the gap, keeps 500 completed', async () => {
      const caller = await app().account();
      const path = unique('ok');
      const hook = await createHook(caller.key, path, { enabled: false, events: ['custom.fill'] });
      const publishMany = async (count: number) => {
        const ids: number[] = [];
        for (let start = 0; start < count; start += 20) {
          const batch = await Promise.all(
            Array.from({ length: Math.min(20, count - start) }, (_, index) => publish(caller.key, 'custom.fill', { n: start + index })),
          );
          ids.push(...batch.map((event) => event.id));
        }
        return ids;
      };
      const queued = await publishMany(1000);
      expect(await auditOf(caller.key, 'webhook.queue_full')).toEqual([]);
      const dropped: number[] = [];
      for (let index = 0; index < 3; index++) dropped.push((await publish(caller.key, 'custom.fill', { dropped: index })).id);
      // Events the webhook does not subscribe to are no gap.
      await publish(caller.key, 'custom.other');

      const full = await auditOf(caller.key, 'webhook.queue_full');
      expect(full).toHaveLength(1);
      expect(full[0]).toMatchObject({ actor: { kind: 'system' }, target: { type: 'webhook', id: hook.id }, data: { webhookId: hook.id } });
      const listed = await deliveries(caller.key, hook.id);
      expect(listed).toHaveLength(1000);
      expect(new Set(listed.map((delivery) => delivery.eventId))).toEqual(new Set(queued));
      // A manual retry cannot push past the cap either (nothing completed yet, so it is 409 as pending).
      expect((await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/deliveries/${listed[0]!.id}/retry`, key: caller.key })).status).toBe(409);

      expect((await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, key: caller.key, body: { enabled: true } })).status).toBe(200);
      await until(() => onPath(path).length >= 1000, 'the 1,000 queued deliveries', 60_000);
      expect(new Set(onPath(path).map(eventIdOf))).toEqual(new Set(queued));
      for (const received of onPath(path)) expect(received.headers['x-service-event-gap']).toBeUndefined();
      expect(await auditOf(caller.key, 'webhook.queue_resumed')).toEqual([]);

      const resumed = await publish(caller.key, 'custom.fill', { resumed: true });
      const later = await publish(caller.key, 'custom.fill', { later: true });
      await until(() => onPath(path).length >= 1002, 'the deliveries after the gap');
      const gapDelivery = onPath(path).find((received) => eventIdOf(received) === resumed.id)!;
      expect(gapDelivery.headers['x-service-event-gap']).toBe(`${dropped[0]}-${dropped[2]}`);
      expect(onPath(path).find((received) => eventIdOf(received) === later.id)!.headers['x-service-event-gap']).toBeUndefined();
      expect(onPath(path).some((received) => dropped.includes(eventIdOf(received)))).toBe(false);

      const resumedRecords = await auditOf(caller.key, 'webhook.queue_resumed');
      expect(resumedRecords).toHaveLength(1);
      expect(resumedRecords[0]).toMatchObject({ actor: { kind: 'system' }, target: { type: 'webhook', id: hook.id } });
      const gaps = await auditOf(caller.key, 'webhook.event_gap');
      expect(gaps).toHaveLength(1);
      expect(gaps[0]!.data).toEqual({ webhookId: hook.id, fromEventId: dropped[0], toEventId: dropped[2], dropped: 3 });

      // History: the listing shows the latest 500 completed, newest first, and storage keeps no more.
      await until(async () => (await deliveries(caller.key, hook.id)).every((delivery) => delivery.status === 'succeeded'), 'every delivery recorded');
      const history = await deliveries(caller.key, hook.id);
      expect(history).toHaveLength(500);
      expect(history[0]!.eventId).toBe(later.id);
      const created = history.map((delivery) => delivery.createdAt);
      expect([...created].sort().reverse()).toEqual(created);
      const stored = async () =>
        Number(
          (
            await app()
              .context.storage.db.selectFrom('webhook_deliveries')
              .select((eb) => eb.fn.countAll().as('count'))
              .where('webhook_id', '=', hook.id)
              .executeTakeFirstOrThrow()
          ).count,
        );
      await until(async () => (await stored()) === 500, 'the history to be pruned to 500');
    }, 120_000);
  });
});

describe('webhook delivery when the authorizing key expires', () => {
  const clock = new ManualClock(new Date('2026-11-20T10:00:00.000Z'));
  const app = useTestApp({ env: ENV, clock });
  const receiver = new Receiver();
  beforeAll(() => receiver.start());
  afterAll(() => receiver.close());

  it('disables the webhook with disabledReason credential_expired and clears its queue', async () => {
    const testApp: TestApp = app();
    const owner = await testApp.account();
    const shortLived = await testApp.request({
      method: 'POST',
      url: '/api/v1/keys',
      key: owner.key,
      body: { name: 'one day', scopes: ['webhooks:manage', 'events:read'], expiresInDays: 1 },
    });
    expect(shortLived.status).toBe(201);
    const hook = await testApp.request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key: shortLived.json.key,
      body: { name: 'expiring', url: receiver.url('/ok'), events: ['custom.*'] },
    });
    expect(hook.status, hook.body).toBe(201);
    const publish = (type: string) => testApp.request({ method: 'POST', url: '/api/v1/events', key: owner.key, body: { type, data: {} } });
    expect((await publish('custom.while_valid')).status).toBe(201);
    await until(() => receiver.received.length === 1, 'the delivery while the key is valid');

    clock.advance(2 * 86_400_000);
    await until(
      async () => (await testApp.request({ url: `/api/v1/webhooks/${hook.json.id}`, key: owner.key })).json.disabledReason === 'credential_expired',
      'the webhook to be cut off',
    );
    const got = await testApp.request({ url: `/api/v1/webhooks/${hook.json.id}`, key: owner.key });
    expect(got.json).toMatchObject({ enabled: false, disabledReason: 'credential_expired' });
    expect((await publish('custom.after_expiry')).status).toBe(201);
    await sleep(800);
    expect(receiver.received).toHaveLength(1);
    const audit = await testApp.request({ url: '/api/v1/audit?type=webhook.disabled', key: owner.key });
    expect(audit.json.data).toEqual([
      expect.objectContaining({
        actor: { kind: 'system' },
        target: { type: 'webhook', id: hook.json.id },
        data: expect.objectContaining({ reason: 'credential_expired' }),
      }),
    ]);
  });
});
