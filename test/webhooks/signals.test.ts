// What a receiver's answer tells (api-decisions §14), through the real server and a real loopback
// receiver: 410 Gone disables the webhook, 429 with Retry-After holds the next attempt back (an
// hour at most), a webhook failing for WEBHOOK_DISABLE_AFTER_HOURS is disabled, and each attempt
// keeps the first 1,024 bytes of the answer.
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { useTestApp, type TestApp } from '../support/app.js';
import { sleep, until } from '../support/wait.js';
import fc from 'fast-check';
import { excerptText, RESPONSE_EXCERPT_BYTES, retryAfter } from '../../src/areas/webhooks/sender.js';
import { BIG_ANSWER, Receiver } from './support.js';

const BASE_ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_SCHEDULE: '0,0.1,0.1,0.1,0.1',
  WEBHOOK_TIMEOUT_MS: '3000',
  WEBHOOK_LEASE_SECONDS: '10',
};

const receiver = new Receiver();
beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.close();
});

function helpers(app: () => TestApp) {
  return {
    async hook(key: string, path: string): Promise<{ id: string }> {
      const response = await app().request({
        method: 'POST',
        url: '/api/v1/webhooks',
        key,
        body: { name: 'signals', url: receiver.url(path), events: ['custom.*'] },
      });
      expect(response.status, response.body).toBe(201);
      return response.json;
    },
    async publish(key: string): Promise<void> {
      expect((await app().request({ method: 'POST', url: '/api/v1/events', key, body: { type: 'custom.signal', data: {} } })).status).toBe(201);
    },
    async webhook(key: string, id: string) {
      return (await app().request({ url: `/api/v1/webhooks/${id}`, key })).json;
    },
    async deliveries(key: string, id: string) {
      return (await app().request({ url: `/api/v1/webhooks/${id}/deliveries`, key })).json.data as Array<Record<string, any>>;
    },
    async disabledAudit(key: string) {
      return (await app().request({ url: '/api/v1/audit?type=webhook.disabled', key })).json.data as Array<Record<string, any>>;
    },
  };
}

describe("receivers' answers", () => {
  const app = useTestApp({ env: BASE_ENV });
  const { hook, publish, webhook, deliveries, disabledAudit } = helpers(app);
  let counter = 0;
  const onPath = (path: string) => receiver.received.filter((entry) => entry.path === path);

  it('410 Gone ends the delivery at once and disables the webhook (receiver_gone), audited once; enabling resumes', async () => {
    const caller = await app().account();
    const path = `/status/410?n=${++counter}`;
    const { id } = await hook(caller.key, path);
    await publish(caller.key);
    await until(async () => (await webhook(caller.key, id)).disabledReason === 'receiver_gone', 'the webhook to be disabled');
    expect(await webhook(caller.key, id)).toMatchObject({ enabled: false, disabledReason: 'receiver_gone' });
    const [delivery] = await deliveries(caller.key, id);
    expect(delivery).toMatchObject({ status: 'failed', attempts: [{ responseStatus: 410 }] });
    const [audit] = await disabledAudit(caller.key);
    expect(audit!.data).toMatchObject({ reason: 'receiver_gone', deliveryId: delivery!.id, responseStatus: 410 });
    // Disabled (enabled: false), its events still queue unsent; a test is sent; no second record.
    await publish(caller.key);
    expect((await app().request({ method: 'POST', url: `/api/v1/webhooks/${id}/test`, key: caller.key })).status).toBe(202);
    await until(() => onPath(path).length === 2, 'the test delivery');
    await sleep(200);
    expect(onPath(path).map((entry) => entry.headers['x-service-event-id'])).toEqual(['1', '0']);
    expect(await disabledAudit(caller.key)).toHaveLength(1);
    expect((await deliveries(caller.key, id)).filter((each) => each.status === 'pending')).toMatchObject([{ eventId: 2 }]);
    // Moved to a receiver that answers, and enabled: the queued event drains.
    const moved = `/ok?moved=${counter}`;
    const enabled = await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${id}`, key: caller.key, body: { enabled: true, url: receiver.url(moved) } });
    expect(enabled.json).toMatchObject({ enabled: true, disabledReason: null });
    await until(() => onPath(moved).length === 1, 'the queued event');
    expect(onPath(moved)[0]!.headers['x-service-event-id']).toBe('2');
  });

  it("a revoked credential cuts off a webhook its receiver's answer disabled, clearing its queue", async () => {
    const caller = await app().account();
    const key = await app().request({
      method: 'POST',
      url: '/api/v1/keys',
      key: caller.key,
      body: { name: 'hooks', scopes: ['webhooks:manage', 'events:read'] },
    });
    const { id } = await hook(key.json.key, `/status/410?n=${++counter}`);
    await publish(caller.key);
    await until(async () => (await webhook(caller.key, id)).disabledReason === 'receiver_gone', 'the webhook to be disabled');
    await publish(caller.key);
    expect(await deliveries(caller.key, id)).toHaveLength(2);
    expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${key.json.id}`, key: caller.key })).status).toBe(204);
    await until(async () => (await webhook(caller.key, id)).disabledReason === 'credential_revoked', 'the cut-off');
    expect((await deliveries(caller.key, id)).map((each) => each.status)).toEqual(['failed']);
    expect((await app().request({ method: 'POST', url: `/api/v1/webhooks/${id}/test`, key: caller.key })).status).toBe(409);
  });

  it('429 with Retry-After: 2 holds the next attempt back at least 2 s (the schedule says 0.1 s)', async () => {
    const caller = await app().account();
    const path = `/retry-after/2?n=${++counter}`;
    const { id } = await hook(caller.key, path);
    await publish(caller.key);
    await until(() => onPath(path).length === 1, 'the first attempt');
    // Held back, visibly, and audited once when the hold starts.
    await until(async () => (await webhook(caller.key, id)).heldUntil !== null, 'the hold to show');
    const held = await webhook(caller.key, id);
    expect(Date.parse(held.heldUntil) - onPath(path)[0]!.at).toBeGreaterThan(1500);
    const deferred = (await app().request({ url: '/api/v1/audit?type=webhook.deferred', key: caller.key })).json.data;
    expect(deferred).toHaveLength(1);
    expect(deferred[0].data).toMatchObject({ webhookId: id, responseStatus: 429, retryAfterSeconds: 2, heldUntil: held.heldUntil });
    await until(() => onPath(path).length === 2, 'the second attempt', 8000);
    const [first, second] = onPath(path);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1900);
    const [delivery] = await deliveries(caller.key, id);
    expect(delivery!.attempts[0]).toMatchObject({ responseStatus: 429, responseBody: 'slow down' });
  });

  it('a Retry-After of a day waits an hour at most', async () => {
    const caller = await app().account();
    const { id } = await hook(caller.key, `/retry-after/86400?n=${++counter}`);
    await publish(caller.key);
    await until(async () => (await deliveries(caller.key, id))[0]?.attempts.length === 1, 'the first attempt');
    const [delivery] = await deliveries(caller.key, id);
    const wait = Date.parse(delivery!.nextAttemptAt) - Date.parse(delivery!.attempts[0].at);
    expect(wait).toBeGreaterThan(3590_000);
    expect(wait).toBeLessThanOrEqual(3610_000);
  });

  it("keeps the answer's first 1,024 bytes as UTF-8, dropping a character the edge cuts", async () => {
    const caller = await app().account();
    const { id } = await hook(caller.key, `/big?n=${++counter}`);
    await publish(caller.key);
    await until(async () => (await deliveries(caller.key, id))[0]?.status === 'succeeded', 'the delivery');
    const [delivery] = await deliveries(caller.key, id);
    expect(delivery!.attempts[0].responseBody).toBe(BIG_ANSWER.slice(0, 1023));
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-28T10:00:00.000Z');
    expect(retryAfter('120', now)).toBe(120);
    expect(retryAfter('Sat, 28 Nov 2026 10:00:30 GMT', now)).toBe(30);
    expect(retryAfter('Sat, 28 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfter('soon', now)).toBeNull();
    expect(retryAfter(undefined, now)).toBeNull();
    // Generated: any whole number of seconds; any date to the second, ahead or past; any other text.
    fc.assert(fc.property(fc.nat(), (seconds) => retryAfter(String(seconds), now) === seconds));
    fc.assert(
      fc.property(fc.integer({ min: -86_400, max: 86_400 }), (offset) => {
        const date = new Date(now + offset * 1000).toUTCString();
        return retryAfter(date, now) === Math.max(0, offset);
      }),
    );
    fc.assert(
      fc.property(
        fc.string().filter((text) => !/^\s*\d+\s*$/.test(text) && Number.isNaN(Date.parse(text.trim()))),
        (text) => retryAfter(text, now) === null,
      ),
    );
  });

  it('an excerpt of any bytes reads only the first 1,024, and of valid text is a prefix missing at most the cut character', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 3000 }), (bytes) => excerptText(bytes) === excerptText(bytes.subarray(0, RESPONSE_EXCERPT_BYTES))));
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 1500 }), (text) => {
        const excerpt = excerptText(Buffer.from(text));
        const bytes = Buffer.byteLength(excerpt);
        return text.startsWith(excerpt) && bytes <= RESPONSE_EXCERPT_BYTES && bytes > Math.min(Buffer.byteLength(text), RESPONSE_EXCERPT_BYTES) - 4;
      }),
    );
  });
});

describe('a webhook failing too long', () => {
  // 0.0005 h = 1.8 s: each delivery fails within about half a second.
  const app = useTestApp({ env: { ...BASE_ENV, WEBHOOK_DISABLE_AFTER_HOURS: '0.0005' } });
  const { hook, publish, webhook, deliveries, disabledAudit } = helpers(app);

  it('is disabled (failing) once none succeeded for WEBHOOK_DISABLE_AFTER_HOURS and five deliveries failed, audited', async () => {
    const caller = await app().account();
    const { id } = await hook(caller.key, '/fail?n=failing');
    for (let index = 0; index < 4; index++) await publish(caller.key);
    await until(async () => (await deliveries(caller.key, id)).every((delivery) => delivery.status === 'failed'), 'four failed deliveries');
    await sleep(2000);
    // Long enough, but only four failed: still enabled, failing since its first failed attempt.
    expect(await webhook(caller.key, id)).toMatchObject({ enabled: true, disabledReason: null, failingSince: expect.any(String) });
    await publish(caller.key);
    await until(async () => (await webhook(caller.key, id)).disabledReason === 'failing', 'the webhook to be disabled');
    const [audit] = await disabledAudit(caller.key);
    expect(audit!.data).toMatchObject({ reason: 'failing', failedDeliveries: 5, failingSince: expect.any(String) });
  });

  it('a success ends the failing spell', async () => {
    const caller = await app().account();
    const name = 'spell';
    receiver.down.add(name);
    const { id } = await hook(caller.key, `/down/${name}`);
    for (let index = 0; index < 4; index++) await publish(caller.key);
    await until(async () => (await deliveries(caller.key, id)).every((delivery) => delivery.status === 'failed'), 'four failed deliveries');
    receiver.down.delete(name);
    await publish(caller.key);
    await until(async () => (await deliveries(caller.key, id))[0]?.status === 'succeeded', 'a success');
    expect((await webhook(caller.key, id)).failingSince).toBeNull();
    receiver.down.add(name);
    await sleep(2000);
    await publish(caller.key);
    await until(async () => (await deliveries(caller.key, id))[0]?.status === 'failed', 'a fifth failure');
    expect(await webhook(caller.key, id)).toMatchObject({ enabled: true, disabledReason: null });
    receiver.down.delete(name);
  });
});
