// The destination check at delivery time (docs/decisions.md: "Webhooks"): with WEBHOOK_ALLOW_PRIVATE_TARGETS off,
// the address actually connected to must be public, so a name that passed the check at creation
// and now resolves to loopback (DNS rebinding) is refused when connecting. Everything here stays
// on this machine: the names used resolve from /etc/hosts or are IP literals, and the only
// connections made are to a loopback receiver.
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookSender } from '../../src/areas/webhooks/sender.js';
import { ipLiteral, isPublicAddress, publicOnlyLookup } from '../../src/platform/public-address.js';
import { useTestApp } from '../support/app.js';
import { sleep, until } from '../support/wait.js';
import { Receiver } from './support.js';

function lookup(hostname: string, all: boolean): Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[] }> {
  return new Promise((resolvePromise) => publicOnlyLookup(hostname, { all }, (error, address) => resolvePromise({ error, address })));
}

describe('public-address rules', () => {
  it('classifies addresses with ipaddr.js: only public unicast passes', () => {
    for (const address of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '::ffff:93.184.215.14']) expect(isPublicAddress(address), address).toBe(true);
    for (const address of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '192.0.2.1',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '64:ff9b::7f00:1',
      '2001:db8::1',
      'not an address',
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
  });

  it('finds IP literals in URL hosts, bracketed or not, and leaves names alone', () => {
    expect(ipLiteral('127.0.0.1')).toBe('127.0.0.1');
    expect(ipLiteral('[::1]')).toBe('::1');
    expect(ipLiteral(new URL('https://[::ffff:127.0.0.1]/').hostname)).toBe('::ffff:7f00:1');
    expect(ipLiteral('localhost')).toBeUndefined();
    expect(ipLiteral('example.com')).toBeUndefined();
  });

  it('the connect-time lookup refuses a name resolving to loopback, and passes a public address through', async () => {
    for (const all of [false, true]) {
      const local = await lookup('localhost', all);
      expect(local.error?.code).toBe('EADDRFORBIDDEN');
      expect(local.error?.message).toContain('localhost');
    }
    // A literal is answered by the resolver without any network traffic.
    const single = await lookup('93.184.215.14', false);
    expect(single.error).toBeNull();
    expect(single.address).toBe('93.184.215.14');
    const every = await lookup('93.184.215.14', true);
    expect(every.error).toBeNull();
    expect(every.address).toEqual([{ address: '93.184.215.14', family: 4 }]);
  });
});

describe('the sender with private targets refused', () => {
  const receiver = new Receiver();
  const guarded = new WebhookSender(false, 2000);
  const open = new WebhookSender(true, 2000);
  beforeAll(() => receiver.start());
  afterAll(async () => {
    await Promise.all([guarded.close(), open.close(), receiver.close()]);
  });

  it('fails at connect time for a name that resolves to loopback, and for loopback literals; nothing arrives', async () => {
    const port = new URL(receiver.origin).port;
    const headers = { 'content-type': 'application/json' };
    for (const url of [`http://localhost:${port}/guarded`, `http://127.0.0.1:${port}/guarded`, `http://[::ffff:127.0.0.1]:${port}/guarded`]) {
      const result = await guarded.send(url, '{}', headers);
      expect(result.responseStatus, url).toBeNull();
      expect(result.error, url).toMatch(/^destination refused: /);
    }
    expect(receiver.received).toEqual([]);

    // The same request with the development flag reaches the receiver: the refusal above is the guard's.
    const allowed = await open.send(`http://localhost:${port}/allowed`, '{}', headers);
    expect(allowed).toMatchObject({ responseStatus: 200, error: null });
    expect(receiver.received.map((entry) => entry.path)).toEqual(['/allowed']);
  });
});

describe('a webhook whose name rebinds to loopback after creation', () => {
  const app = useTestApp({ env: { WEBHOOK_RETRY_SCHEDULE: '0,60,60,60,60' } });
  const receiver = new Receiver();
  beforeAll(() => receiver.start());
  afterAll(() => receiver.close());

  it('is refused when connecting, recorded as a failed attempt, and the receiver gets nothing', async () => {
    const caller = await app().account();
    // Created paused at a public address (never contacted), then its host "rebinds": the stored
    // URL now names localhost, as if its DNS answer had changed since the check at creation.
    const created = await app().request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key: caller.key,
      body: { name: 'rebinding', url: 'https://93.184.215.14/hook', events: ['custom.*'], enabled: false },
    });
    expect(created.status, created.body).toBe(201);
    const rebound = `http://localhost:${new URL(receiver.origin).port}/rebound`;
    await app().context.storage.db.updateTable('webhooks').set({ url: rebound }).where('id', '=', created.json.id).execute();
    expect((await app().request({ method: 'PATCH', url: `/api/v1/webhooks/${created.json.id}`, key: caller.key, body: { enabled: true } })).status).toBe(200);

    const event = await app().request({ method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.rebind', data: {} } });
    expect(event.status).toBe(201);
    const history = async () => (await app().request({ url: `/api/v1/webhooks/${created.json.id}/deliveries`, key: caller.key })).json.data;
    await until(async () => (await history())[0]?.attempts.length === 1, 'the first attempt');
    const [delivery] = await history();
    expect(delivery.attempts[0]).toMatchObject({
      attempt: 1,
      responseStatus: null,
      error: expect.stringMatching(/^destination refused: localhost resolves to a non-public address/),
    });
    expect(delivery.status).toBe('pending');
    await sleep(200);
    expect(receiver.received).toEqual([]);
  });
});
