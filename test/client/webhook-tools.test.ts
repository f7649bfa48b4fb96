// DevdataClient's webhook tools against the real server and a real receiver (api-decisions §14):
// sendWebhookTest, replayWebhookEvents, recoverWebhookDeliveries, and the delivery history
// filtered by status and paged with before (webhookDeliveries, webhookDeliveryPages,
// iterateWebhookDeliveries); and their refusals: 404, 403, 400, 409 and 410.
import { DevdataClient, DevdataError, verifyStandardWebhook, verifyWebhook, type WebhookDelivery } from '@devdata/client';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp, type TestAccount } from '../support/app.js';
import { until } from '../support/wait.js';
import { Receiver, type Received } from '../webhooks/support.js';
import { thrown } from './support.js';

const RETENTION = 40;
const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCHEDULE: '0,0,0,0,0', EVENT_RETENTION: String(RETENTION) };
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

const refusal = (call: Promise<unknown>) => thrown(call, DevdataError);

describe('DevdataClient webhook tools', () => {
  const app = useTestApp({ env: ENV });
  const receiver = new Receiver();
  let account: TestAccount;
  let devdata: DevdataClient;

  beforeAll(async () => {
    const base = await app().listen();
    await receiver.start();
    account = await app().account();
    devdata = new DevdataClient({ baseUrl: base, apiKey: account.key });
  });

  afterAll(async () => {
    await receiver.close();
  });

  async function webhook(path: string, events: string[], enabled = true) {
    return devdata.createWebhook({ body: { name: path, url: receiver.url(path), events, enabled } });
  }

  async function publish(type: `custom.${string}`, data: Record<string, unknown> = {}) {
    return devdata.publishEvent({ body: { type, data } });
  }

  /** The webhook's deliveries once `done` holds for them. */
  async function deliveriesWhen(id: string, done: (deliveries: WebhookDelivery[]) => boolean, what: string): Promise<WebhookDelivery[]> {
    let deliveries: WebhookDelivery[] = [];
    await until(async () => {
      deliveries = (await devdata.webhookDeliveries(id)).data;
      return done(deliveries);
    }, what);
    return deliveries;
  }

  it('sendWebhookTest sends a signed webhook.test even while the webhook is paused, listed with test: true and each attempt’s headers and answer', async () => {
    const paused = await webhook('/test-hook', ['custom.*'], false);
    const { deliveryId } = await devdata.sendWebhookTest(paused.id);
    expect(deliveryId).toMatch(/^dlv_/);
    await until(() => receiver.on('/test-hook').length === 1, 'the test delivery');
    const received = receiver.on('/test-hook')[0] as Received;
    expect(JSON.parse(received.rawBody)).toEqual({ id: 0, type: 'webhook.test', data: { webhookId: paused.id }, createdAt: expect.stringMatching(ISO_MS) });
    expect(received.headers).toMatchObject({ 'x-service-event-id': '0', 'x-service-delivery-id': deliveryId, 'webhook-id': deliveryId });
    expect(received.headers['x-service-replay']).toBeUndefined();

    // Both signatures verify, with this client and with the Standard Webhooks library.
    const event = await verifyStandardWebhook(received.rawBody, received.headers as Record<string, string>, paused.secret);
    expect(event).toEqual(await verifyWebhook(received.rawBody, String(received.headers['x-service-signature']), paused.secret));
    expect(new StandardWebhook(paused.secret).verify(received.rawBody, received.headers as Record<string, string>)).toEqual(event);
    if (event.type !== 'webhook.test') throw new Error('a test delivery');
    expect(event.data.webhookId).toBe(paused.id);

    const [delivery] = await deliveriesWhen(paused.id, ([first]) => first?.status === 'succeeded', 'the test delivery recorded');
    expect(delivery).toMatchObject({ id: deliveryId, eventId: 0, eventType: 'webhook.test', test: true, replay: false, status: 'succeeded' });
    const [attempt] = delivery!.attempts;
    expect(attempt).toMatchObject({ attempt: 1, responseStatus: 200, error: null, responseBody: 'ok' });
    // The headers recorded are the ones the receiver got.
    expect(Object.keys(attempt!.requestHeaders).sort()).toEqual(
      [
        'content-type',
        'user-agent',
        'x-service-signature',
        'x-service-event-id',
        'x-service-delivery-id',
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
      ].sort(),
    );
    for (const [name, value] of Object.entries(attempt!.requestHeaders)) expect(received.headers[name], name).toBe(value);
    // Paused: no event was sent, only the test.
    await publish('custom.while_paused');
    expect((await devdata.webhookDeliveries(paused.id, { status: 'succeeded' })).data.map((each) => each.id)).toEqual([deliveryId]);
  });

  it('replayWebhookEvents sends the matching retained events of (after, until] again as new deliveries with X-Service-Replay', async () => {
    const hook = await webhook('/replay-hook', ['custom.replayed']);
    const first = await publish('custom.replayed', { n: 1 });
    await publish('custom.other');
    const second = await publish('custom.replayed', { n: 2 });
    await publish('custom.replayed', { n: 3 });
    await until(() => receiver.on('/replay-hook').length === 3, 'the live deliveries');
    const live = receiver.on('/replay-hook');

    expect(await devdata.replayWebhookEvents(hook.id, { after: first.id - 1, until: second.id })).toEqual({ queued: 2, skipped: 0 });
    await until(() => receiver.on('/replay-hook').length === 5, 'the replayed deliveries');
    const replayed = receiver.on('/replay-hook').slice(3);
    expect(replayed.map((each) => each.headers['x-service-event-id'])).toEqual([String(first.id), String(second.id)]);
    for (const [index, each] of replayed.entries()) {
      expect(each.headers['x-service-replay']).toBe('true');
      // The same body, as a new delivery.
      expect(each.rawBody).toBe(live[index]!.rawBody);
      expect(each.headers['x-service-delivery-id']).not.toBe(live[index]!.headers['x-service-delivery-id']);
      await verifyStandardWebhook(each.rawBody, each.headers as Record<string, string>, hook.secret);
    }
    const deliveries = await deliveriesWhen(hook.id, (all) => all.every((each) => each.status === 'succeeded'), 'every delivery done');
    expect(deliveries.filter((each) => each.replay).map((each) => each.eventId)).toEqual([second.id, first.id]);

    // Without until: to the newest. One Idempotency-Key makes a repeat queue nothing more.
    const options = { idempotencyKey: `replay-${hook.id}` };
    expect(await devdata.replayWebhookEvents(hook.id, { after: second.id - 1 }, options)).toEqual({ queued: 2, skipped: 0 });
    expect(await devdata.replayWebhookEvents(hook.id, { after: second.id - 1 }, options)).toEqual({ queued: 2, skipped: 0 });
    expect((await devdata.webhookDeliveries(hook.id)).data.filter((each) => each.replay)).toHaveLength(4);
  });

  it('recoverWebhookDeliveries sends again the deliveries that ended failed since a time; the attempts keep the answer’s start', async () => {
    const hook = await webhook('/fail', ['custom.failing']);
    const before = new Date();
    await publish('custom.failing', { n: 1 });
    await publish('custom.failing', { n: 2 });
    const failed = await deliveriesWhen(hook.id, (all) => all.length === 2 && all.every((each) => each.status === 'failed'), 'two failed deliveries');
    for (const delivery of failed) {
      expect(delivery.attempts).toHaveLength(5);
      expect(delivery.attempts[0]).toMatchObject({ responseStatus: 500, responseBody: 'no', error: 'receiver answered 500' });
      expect(delivery.attempts[0]!.requestHeaders['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    }
    expect((await devdata.webhookDeliveries(hook.id, { status: 'failed' })).data.map((each) => each.id)).toEqual(failed.map((each) => each.id));

    expect(await devdata.recoverWebhookDeliveries(hook.id, new Date(Date.now() + 60_000))).toEqual({ queued: 0 });
    expect(await devdata.recoverWebhookDeliveries(hook.id, before)).toEqual({ queued: 2 });
    const recovered = (await devdata.webhookDeliveries(hook.id)).data.filter((each) => each.replay);
    expect(recovered.map((each) => each.eventId).sort()).toEqual(failed.map((each) => each.eventId).sort());
    expect(recovered.every((each) => !failed.some((old) => old.id === each.id))).toBe(true);
    // An ISO string works as well as a Date.
    expect(await devdata.recoverWebhookDeliveries(hook.id, new Date(Date.now() + 60_000).toISOString())).toEqual({ queued: 0 });
  });

  it('webhookDeliveries filters by status and pages with before; the pages and the iterator walk every delivery, newest first', async () => {
    const hook = await webhook('/page-hook', ['custom.paged']);
    for (let n = 0; n < 7; n++) await publish('custom.paged', { n });
    const all = await deliveriesWhen(
      hook.id,
      (deliveries) => deliveries.length === 7 && deliveries.every((each) => each.status === 'succeeded'),
      'seven deliveries',
    );
    const eventIds = all.map((each) => each.eventId);
    expect(eventIds).toEqual([...eventIds].sort((a, b) => b - a));

    expect((await collect(devdata.webhookDeliveryPages(hook.id, { limit: 3 }))).map((page) => page.data.map((each) => each.id))).toEqual([
      all.slice(0, 3).map((each) => each.id),
      all.slice(3, 6).map((each) => each.id),
      all.slice(6).map((each) => each.id),
    ]);
    // A full last page is not followed by an empty one.
    expect((await collect(devdata.webhookDeliveryPages(hook.id, { limit: 7 }))).map((page) => page.data.length)).toEqual([7]);
    expect(await collect(devdata.iterateWebhookDeliveries(hook.id, { limit: 2 }))).toEqual(all);
    expect(await collect(devdata.iterateWebhookDeliveries(hook.id))).toEqual(all);
    expect((await collect(devdata.iterateWebhookDeliveries(hook.id, { before: all[4]!.id, limit: 1 }))).map((each) => each.id)).toEqual(
      all.slice(5).map((each) => each.id),
    );
    const page = await devdata.webhookDeliveries(hook.id, { status: 'succeeded', limit: 2, before: all[1]!.id });
    expect(page.data.map((each) => each.id)).toEqual([all[2]!.id, all[3]!.id]);
    expect((await devdata.webhookDeliveries(hook.id, { status: 'failed' })).data).toEqual([]);
    expect(await collect(devdata.webhookDeliveryPages(hook.id, { status: 'pending' }))).toEqual([{ data: [] }]);
  });

  it('refuses an unknown webhook (404), a key without events:read to replay (403) and bad input (400)', async () => {
    for (const call of [
      () => devdata.sendWebhookTest('wh_missing'),
      () => devdata.replayWebhookEvents('wh_missing', { after: 0 }),
      () => devdata.recoverWebhookDeliveries('wh_missing', new Date()),
      () => devdata.webhookDeliveries('wh_missing'),
      () => collect(devdata.iterateWebhookDeliveries('wh_missing')),
    ]) {
      expect(await refusal(call())).toMatchObject({ status: 404, code: 'not_found' });
    }

    const hook = await webhook('/errors-hook', ['custom.errors']);
    const { key } = await devdata.createApiKey({ body: { name: 'manage only', scopes: ['webhooks:manage'] } });
    const limited = new DevdataClient({ baseUrl: devdata.baseUrl, apiKey: key });
    expect(await refusal(limited.replayWebhookEvents(hook.id, { after: 0 }))).toMatchObject({ status: 403, code: 'insufficient_scope' });
    // Testing and recovering need webhooks:manage alone.
    expect(await limited.sendWebhookTest(hook.id)).toMatchObject({ deliveryId: expect.stringMatching(/^dlv_/) });
    expect(await limited.recoverWebhookDeliveries(hook.id, new Date())).toEqual({ queued: 0 });

    const invalid = [
      () => devdata.replayWebhook({ path: { id: hook.id }, body: { after: -1 } }),
      () => devdata.replayWebhookEvents(hook.id, { after: 5, until: 4 }),
      () => devdata.recoverWebhookDeliveries(hook.id, 'yesterday'),
      () => devdata.webhookDeliveries(hook.id, { limit: 0 }),
      () => devdata.webhookDeliveries(hook.id, { limit: 501 }),
      () => devdata.webhookDeliveries(hook.id, { before: 'dlv_missing' }),
      () => devdata.webhookDeliveries(hook.id, { status: 'lost' as 'failed' }),
    ];
    for (const call of invalid) expect(await refusal(call())).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it('refuses a webhook whose credential ended (409) until it is enabled again', async () => {
    const made = await devdata.createApiKey({ body: { name: 'short-lived', scopes: ['webhooks:manage', 'events:read'] } });
    const owner = new DevdataClient({ baseUrl: devdata.baseUrl, apiKey: made.key });
    const hook = await owner.createWebhook({ body: { name: 'owned', url: receiver.url('/owned'), events: ['custom.owned'] } });
    await devdata.revokeApiKey({ path: { id: made.id } });
    await until(async () => (await devdata.getWebhook({ path: { id: hook.id } })).disabledReason !== null, 'the webhook disabled with its key');
    for (const call of [
      () => devdata.sendWebhookTest(hook.id),
      () => devdata.replayWebhookEvents(hook.id, { after: 0 }),
      () => devdata.recoverWebhookDeliveries(hook.id, new Date(0)),
    ]) {
      expect(await refusal(call())).toMatchObject({ status: 409, code: 'conflict' });
    }
    await devdata.updateWebhook({ path: { id: hook.id }, body: { enabled: true } });
    expect(await devdata.sendWebhookTest(hook.id)).toMatchObject({ deliveryId: expect.any(String) });
  });

  it('refuses a replay from a cursor older than the retained events (410), saying where a replay can start', async () => {
    const hook = await webhook('/expired-hook', ['custom.expired']);
    await devdata.batch(Array.from({ length: RETENTION + 5 }, (_unused, n) => ({ op: 'publish' as const, type: 'custom.filler' as const, data: { n } })));
    const expired = await refusal(devdata.replayWebhookEvents(hook.id, { after: 0 }));
    expect(expired).toMatchObject({ status: 410, code: 'cursor_expired' });
    const oldest = expired.oldestCursor!;
    expect(oldest).toBeGreaterThan(0);
    expect(expired.message).toBe(`Cursor 0 has expired: the oldest cursor still retained is ${oldest}. Replay after ${oldest} to send the events still kept.`);
    expect(await devdata.replayWebhookEvents(hook.id, { after: oldest })).toEqual({ queued: 0, skipped: 0 });
  });
});
