// verifyWebhook against deliveries the real server sent, and against forged, altered and stale ones.
import { signWebhook, verifyWebhook, WebhookVerificationError, type DevdataEvent } from '@devdata/client';
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
