// The scripts of examples/ run as a user runs them (node examples/….mjs) against the real server.
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp, type TestAccount } from '../support/app.js';
import { killAll } from '../support/processes.js';
import { until } from '../support/wait.js';
import { form, hiddenFields } from '../oauth/support.js';
import { NodeScript } from './support.js';

/** A script of examples/, run as a user runs it. */
class Example extends NodeScript {
  constructor(name: string, env: Record<string, string>) {
    super(join('examples', name), [], { ...process.env, ...env });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

afterAll(async () => {
  await killAll();
});

describe('examples/', () => {
  const app = useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  let base: string;

  beforeAll(async () => {
    base = await app().listen();
  });

  async function api(account: TestAccount, method: string, url: string, body?: unknown) {
    const response = await app().request({ method, url, key: account.key, body });
    expect(response.status, response.body).toBeLessThan(300);
    return response.json;
  }

  it('poll.mjs prints every event and goes on polling from its cursor', async () => {
    const account = await app().account();
    await api(account, 'POST', '/api/v1/events', { type: 'custom.first', data: { n: 1 } });
    const poll = new Example('poll.mjs', { DEVDATA_URL: base, DEVDATA_API_KEY: account.key, POLL_INTERVAL_MS: '100' });
    await poll.waitFor(/#1 custom\.first \{"n":1\}/, 'the first event');
    await api(account, 'POST', '/api/v1/events', { type: 'custom.second', data: {} });
    await poll.waitFor(/#2 custom\.second/, 'the event written later');
    expect(poll.lines()).toEqual(['#1 custom.first {"n":1}', '#2 custom.second {}']);
    poll.child.kill();
  });

  it('stream.mjs follows live events and stops on Ctrl-C', async () => {
    const account = await app().account();
    const stream = new Example('stream.mjs', { DEVDATA_URL: base, DEVDATA_API_KEY: account.key });
    await until(() => stream.stderr.includes('connected'), 'the connection');
    const lamp = await api(account, 'POST', '/api/v1/resources', { name: 'Lamp', type: 'switch', state: false });
    await api(account, 'PATCH', `/api/v1/resources/${lamp.id}`, { state: true });
    await stream.waitFor(/#2 Lamp is now true/, 'the update');
    expect(stream.lines()).toEqual(['#1 resource.created', '#2 Lamp is now true']);
    stream.child.kill('SIGINT');
    expect(await stream.exited).toBe(0);
  });

  for (const receiver of ['webhook-receiver.mjs', 'webhook-receiver-express.mjs', 'webhook-receiver-fastify.mjs']) {
    it(`${receiver} verifies real deliveries over the raw body and refuses forged ones`, async () => {
      const account = await app().account();
      // The webhook is made first so that its secret can be given to the receiver.
      const port = await freePort();
      const webhook = await api(account, 'POST', '/api/v1/webhooks', {
        name: receiver,
        url: `http://127.0.0.1:${port}/webhooks`,
        events: ['resource.created'],
      });
      const example = new Example(receiver, { WEBHOOK_SECRET: webhook.secret, PORT: String(port) });
      await example.waitFor(/listening on (\S+)/, 'the receiver to listen');
      await api(account, 'POST', '/api/v1/resources', { name: 'Doorbell', type: 'binary_sensor', state: false });
      await example.waitFor(/verified #1 resource\.created/, 'the verified delivery');

      const forged = await fetch(`http://127.0.0.1:${port}/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` },
        body: JSON.stringify({ id: 2, type: 'resource.created', data: {}, createdAt: new Date().toISOString() }),
      });
      expect(forged.status).toBe(400);
      await example.waitFor(/refused: no_matching_signature/, 'the refusal');
      example.child.kill();
    });
  }

  it('oauth-app.mjs connects a user’s account through the authorization-code flow', async () => {
    const user = await app().account();
    const port = await freePort();
    const registered = await api(user, 'POST', '/api/v1/apps', {
      name: 'Example app',
      type: 'public',
      redirectUris: [`http://127.0.0.1:${port}/callback`],
      scopes: ['resources:read'],
    });
    await api(user, 'POST', '/api/v1/resources', { name: 'Thermostat', type: 'sensor', state: 19 });
    const example = new Example('oauth-app.mjs', { DEVDATA_URL: base, CLIENT_ID: registered.clientId, PORT: String(port) });
    await example.waitFor(/open (\S+)/, 'the app to listen');

    // The user's browser: the app sends it to the approval page, the user connects with a key.
    const start = await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' });
    expect(start.status).toBe(302);
    const cookie = (start.headers.get('set-cookie') as string).split(';')[0] as string;
    const page = await fetch(start.headers.get('location') as string);
    expect(page.status).toBe(200);
    const approval = await fetch(`${base}/oauth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      ...form({ ...hiddenFields(await page.text()), api_key: user.key, action: 'approve' }),
    });
    expect(approval.status).toBe(303);
    const callback = await fetch(approval.headers.get('location') as string, { headers: { cookie } });
    expect(await callback.text()).toMatch(/^Connected to Test account \d+: 1 resources\.\n$/);
    expect(callback.status).toBe(200);
    await example.waitFor(/connected to Test account \d+ with resources:read/, 'the log line');
    example.child.kill();
  });
});
