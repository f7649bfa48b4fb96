// verifyWebhook and verifyStandardWebhook against deliveries the real server sent (and the stripe
// and standardwebhooks libraries on the same ones), and against forged, altered and stale ones.
import { createHmac, randomBytes } from 'node:crypto';
import {
  signStandardWebhook,
  signWebhook,
  verifyStandardWebhook,
  verifyWebhook,
  WebhookVerificationError,
  type DevdataEvent,
  type WebhookHeaders,
} from '@devdata/client';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { until } from '../support/wait.js';
import { Receiver, type Received } from '../webhooks/support.js';
import { thrown } from './support.js';

const stripe = new Stripe('sk_test_devdata_client_tests');

const refusal = (call: Promise<unknown>) => thrown(call, WebhookVerificationError);

describe('verifyWebhook', () => {
  const app = useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const receiver = new Receiver();
  let delivery: Received;
  let secret: string;

  beforeAll(async () => {
    await receiver.start();
    const account = await app().account();
    const created = await app().request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key: account.key,
      body: { name: 'receiver', url: receiver.url('/hook'), events: ['resource.created'] },
    });
    expect(created.status, created.body).toBe(201);
    secret = created.json.secret;
    await app().request({ method: 'POST', url: '/api/v1/resources', key: account.key, body: { name: 'Porch light', type: 'switch', state: true } });
    await until(() => receiver.on('/hook').length === 1, 'the delivery');
    delivery = receiver.on('/hook')[0] as Received;
  });

  afterAll(async () => {
    await receiver.close();
  });

  const header = () => String(delivery.headers['x-service-signature']);

  it('accepts a real delivery and returns its event, as Stripe’s library does', async () => {
    const event = await verifyWebhook(delivery.rawBody, header(), secret);
    expect(event).toMatchObject({ id: 1, type: 'resource.created' });
    if (event.type !== 'resource.created') throw new Error('narrowed by type');
    expect(event.data.resource).toMatchObject({ name: 'Porch light', state: true });
    expect(stripe.webhooks.constructEvent(delivery.rawBody, header(), secret)).toEqual(event);
    // Bytes work as well as text (a framework's raw body buffer).
    expect(await verifyWebhook(new TextEncoder().encode(delivery.rawBody), header(), secret)).toEqual(event);
  });

  it('refuses another secret, an altered body and a missing or malformed header', async () => {
    expect((await refusal(verifyWebhook(delivery.rawBody, header(), 'whsec_other'))).code).toBe('no_matching_signature');
    const altered = delivery.rawBody.replace('Porch light', 'Porch lighT');
    expect((await refusal(verifyWebhook(altered, header(), secret))).code).toBe('no_matching_signature');
    expect((await refusal(verifyWebhook(delivery.rawBody, undefined, secret))).code).toBe('missing_header');
    expect((await refusal(verifyWebhook(delivery.rawBody, 'v1=abc', secret))).code).toBe('invalid_header');
    expect((await refusal(verifyWebhook(delivery.rawBody, header().replace(/v1=[0-9a-f]+/, 'v1=xyz'), secret))).code).toBe('invalid_header');
    // The timestamp is signed too: moving it breaks the signature.
    const moved = header().replace(/t=(\d+)/, (_match, t: string) => `t=${Number(t) + 1}`);
    expect((await refusal(verifyWebhook(delivery.rawBody, moved, secret))).code).toBe('no_matching_signature');
  });

  it('refuses an old timestamp (5 minutes by default, configurable)', async () => {
    const timestamp = Number(/t=(\d+)/.exec(header())?.[1]);
    const later = (timestamp + 301) * 1000;
    const stale = await refusal(verifyWebhook(delivery.rawBody, header(), secret, { now: later }));
    expect(stale.code).toBe('timestamp_out_of_tolerance');
    expect(stale.message).toContain('301 s old');
    expect(await verifyWebhook(delivery.rawBody, header(), secret, { now: later, toleranceSeconds: 600 })).toMatchObject({ id: 1 });
  });

  it('accepts any of several v1 signatures, so a receiver keeps working across a secret rotation', async () => {
    const body = JSON.stringify({ id: 7, type: 'custom.rotated', data: {}, createdAt: new Date().toISOString() } satisfies DevdataEvent);
    const timestamp = Math.floor(Date.now() / 1000);
    const old = await signWebhook(body, 'whsec_old', timestamp);
    const current = await signWebhook(body, 'whsec_new', timestamp);
    const both = `${old},${current.slice(current.indexOf('v1='))}`;
    expect(await verifyWebhook(body, both, 'whsec_old')).toMatchObject({ id: 7 });
    expect(await verifyWebhook(body, both, 'whsec_new')).toMatchObject({ id: 7 });
    expect((await refusal(verifyWebhook(body, both, 'whsec_neither'))).code).toBe('no_matching_signature');
    // signWebhook makes what the service makes.
    expect(await signWebhook(delivery.rawBody, secret, Number(/t=(\d+)/.exec(header())?.[1]))).toBe(header());
  });
});

describe('verifyStandardWebhook', () => {
  const app = useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const receiver = new Receiver();
  let delivery: Received;
  let test: Received;
  let secret: string;

  beforeAll(async () => {
    await receiver.start();
    const account = await app().account();
    const created = await app().request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key: account.key,
      body: { name: 'standard', url: receiver.url('/standard'), events: ['resource.created'] },
    });
    expect(created.status, created.body).toBe(201);
    secret = created.json.secret;
    await app().request({ method: 'POST', url: '/api/v1/resources', key: account.key, body: { name: 'Hall sensor', type: 'sensor', state: 20.5 } });
    await app().request({ method: 'POST', url: `/api/v1/webhooks/${created.json.id}/test`, key: account.key });
    await until(() => receiver.on('/standard').length === 2, 'the event and the test delivery');
    [delivery, test] = receiver.on('/standard').sort((a, b) => Number(b.headers['x-service-event-id']) - Number(a.headers['x-service-event-id'])) as [
      Received,
      Received,
    ];
  });

  afterAll(async () => {
    await receiver.close();
  });

  /** The headers as a fetch Request has them (what edge runtimes and frameworks built on fetch give). */
  const fetchHeaders = (received: Received) => new Headers(received.headers as Record<string, string>);
  const nodeHeaders = (received: Received) => received.headers as Record<string, string>;
  const withHeaders = (received: Received, changes: Record<string, string | undefined>): WebhookHeaders => {
    const headers = { ...nodeHeaders(received), ...changes };
    return Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== undefined)) as Record<string, string>;
  };

  it('accepts a real delivery and a test delivery, as the standardwebhooks library does, and agrees with verifyWebhook', async () => {
    // A secret the service makes now: whsec_ and standard base64 of 32 bytes.
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const event = await verifyStandardWebhook(delivery.rawBody, nodeHeaders(delivery), secret);
    expect(event).toMatchObject({ id: 1, type: 'resource.created', data: { resource: { name: 'Hall sensor', state: 20.5 } } });
    expect(new StandardWebhook(secret).verify(delivery.rawBody, nodeHeaders(delivery))).toEqual(event);
    expect(await verifyWebhook(delivery.rawBody, String(delivery.headers['x-service-signature']), secret)).toEqual(event);
    // A fetch Headers object, bytes for the body, and names in any case work too.
    expect(await verifyStandardWebhook(new TextEncoder().encode(delivery.rawBody), fetchHeaders(delivery), secret)).toEqual(event);
    const shouting = Object.fromEntries(Object.entries(nodeHeaders(delivery)).map(([name, value]) => [name.toUpperCase(), value]));
    expect(await verifyStandardWebhook(delivery.rawBody, shouting, secret)).toEqual(event);

    const tested = await verifyStandardWebhook(test.rawBody, nodeHeaders(test), secret);
    expect(tested).toMatchObject({ id: 0, type: 'webhook.test', data: { webhookId: expect.stringMatching(/^wh_/) } });
    expect(new StandardWebhook(secret).verify(test.rawBody, nodeHeaders(test))).toEqual(tested);
    // webhook-id is the delivery id.
    expect(test.headers['webhook-id']).toBe(test.headers['x-service-delivery-id']);
  });

  it('signStandardWebhook makes the header the service sends', async () => {
    const id = String(delivery.headers['webhook-id']);
    const timestamp = Number(delivery.headers['webhook-timestamp']);
    expect(await signStandardWebhook(delivery.rawBody, secret, id, timestamp)).toBe(delivery.headers['webhook-signature']);
    // And the standardwebhooks library signs the same.
    expect(new StandardWebhook(secret).sign(id, new Date(timestamp * 1000), delivery.rawBody)).toBe(delivery.headers['webhook-signature']);
  });

  it('refuses another secret, an altered body, an altered id or timestamp, and missing or malformed headers', async () => {
    const other = `whsec_${randomBytes(32).toString('base64')}`;
    expect((await refusal(verifyStandardWebhook(delivery.rawBody, nodeHeaders(delivery), other))).code).toBe('no_matching_signature');
    expect(() => new StandardWebhook(other).verify(delivery.rawBody, nodeHeaders(delivery))).toThrow();
    const altered = delivery.rawBody.replace('Hall sensor', 'Hall sensoR');
    expect((await refusal(verifyStandardWebhook(altered, nodeHeaders(delivery), secret))).code).toBe('no_matching_signature');
    // The id and the timestamp are signed too.
    expect((await refusal(verifyStandardWebhook(delivery.rawBody, withHeaders(delivery, { 'webhook-id': 'dlv_other' }), secret))).code).toBe(
      'no_matching_signature',
    );
    const later = String(Number(delivery.headers['webhook-timestamp']) + 1);
    expect((await refusal(verifyStandardWebhook(delivery.rawBody, withHeaders(delivery, { 'webhook-timestamp': later }), secret))).code).toBe(
      'no_matching_signature',
    );

    const missing = await refusal(
      verifyStandardWebhook(delivery.rawBody, withHeaders(delivery, { 'webhook-id': undefined, 'webhook-signature': undefined }), secret),
    );
    expect([missing.code, missing.message]).toEqual(['missing_header', 'The webhook-id, webhook-signature headers are missing']);
    expect((await refusal(verifyStandardWebhook(delivery.rawBody, {}, secret))).code).toBe('missing_header');
    expect((await refusal(verifyStandardWebhook(delivery.rawBody, withHeaders(delivery, { 'webhook-timestamp': 'soon' }), secret))).code).toBe(
      'invalid_header',
    );
    for (const signature of ['v1', 'v2,abc', String(delivery.headers['x-service-signature']), 'v1,not!base64']) {
      expect((await refusal(verifyStandardWebhook(delivery.rawBody, withHeaders(delivery, { 'webhook-signature': signature }), secret))).code, signature).toBe(
        'invalid_header',
      );
    }
    // A secret that is not base64 is the receiver's mistake, not the delivery's.
    await expect(verifyStandardWebhook(delivery.rawBody, nodeHeaders(delivery), 'whsec_not base64!')).rejects.toThrow(TypeError);
    await expect(verifyStandardWebhook(delivery.rawBody, nodeHeaders(delivery), 'whsec_')).rejects.toThrow(TypeError);
  });

  it('refuses an old timestamp (5 minutes by default, configurable)', async () => {
    const timestamp = Number(delivery.headers['webhook-timestamp']);
    const later = (timestamp + 301) * 1000;
    const stale = await refusal(verifyStandardWebhook(delivery.rawBody, nodeHeaders(delivery), secret, { now: later }));
    expect([stale.code, stale.message]).toEqual(['timestamp_out_of_tolerance', 'The signature is 301 s old; at most 300 s is accepted']);
    expect(await verifyStandardWebhook(delivery.rawBody, nodeHeaders(delivery), secret, { now: later, toleranceSeconds: 600 })).toMatchObject({ id: 1 });
  });

  it('accepts any v1 signature of a space-separated list (a rotation), and the base64url secrets made before', async () => {
    const body = JSON.stringify({ id: 9, type: 'custom.rotated', data: {}, createdAt: new Date().toISOString() } satisfies DevdataEvent);
    const timestamp = Math.floor(Date.now() / 1000);
    const [old, current] = [`whsec_${randomBytes(32).toString('base64')}`, `whsec_${randomBytes(32).toString('base64')}`];
    const both = `${await signStandardWebhook(body, old, 'dlv_rotated', timestamp)} ${await signStandardWebhook(body, current, 'dlv_rotated', timestamp)}`;
    const headers = { 'webhook-id': 'dlv_rotated', 'webhook-timestamp': String(timestamp), 'webhook-signature': both };
    for (const key of [old, current]) {
      expect(await verifyStandardWebhook(body, headers, key)).toMatchObject({ id: 9 });
      expect(new StandardWebhook(key).verify(body, headers)).toMatchObject({ id: 9 });
    }

    // A secret made before the Standard Webhooks form: base64url, decoded as the server decodes it.
    let legacy = '';
    while (!/[-_]/.test(legacy)) legacy = `whsec_${randomBytes(32).toString('base64url')}`;
    const key = Buffer.from(legacy.slice('whsec_'.length), 'base64');
    const signature = `v1,${createHmac('sha256', key).update(`dlv_legacy.${timestamp}.${body}`).digest('base64')}`;
    const legacyHeaders = { 'webhook-id': 'dlv_legacy', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
    expect(await verifyStandardWebhook(body, legacyHeaders, legacy)).toMatchObject({ id: 9 });
    expect(await signStandardWebhook(body, legacy, 'dlv_legacy', timestamp)).toBe(signature);
  });
});
