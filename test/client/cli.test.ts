// The built devdata-client CLI against the real server: listen --forward-to (deliveries checked
// with verifyWebhook, verifyStandardWebhook, Stripe's and the standardwebhooks library, and compared
// with the server's own deliveries of the same events; its backfill from --after meeting the live
// events with no gap and no repeat; its signing secret kept across runs), events tail, trigger,
// resources, whoami, exit codes and help; what listen and events tail say when the server goes
// away and comes back.
// The other commands: cli-commands.test.ts; help and usage errors: cli-usage.test.ts.
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyStandardWebhook, verifyWebhook } from '@devdata/client';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedDatabase, TestApp, useTestApp, type TestAccount } from '../support/app.js';
import { killAll, ROOT, run } from '../support/processes.js';
import { sleep, until } from '../support/wait.js';
import { Receiver, type Received } from '../webhooks/support.js';
import { NodeScript, restart } from './support.js';

const CLIENT_CLI = join(ROOT, 'client', 'bin', 'devdata-client.js');
const stripe = new Stripe('sk_test_devdata_client_cli');

/** The built CLI, running until it exits or is interrupted. */
class CliProcess extends NodeScript {
  constructor(args: string[], env: NodeJS.ProcessEnv) {
    super(join('client', 'bin', 'devdata-client.js'), args, env);
  }
}

afterAll(async () => {
  await killAll();
});

describe('devdata-client CLI', () => {
  const app = useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const receiver = new Receiver();
  let base: string;
  let account: TestAccount;
  let env: NodeJS.ProcessEnv;
  let configHome: string;
  const cli = (...args: string[]) => run(process.execPath, [CLIENT_CLI, ...args], { env });

  beforeAll(async () => {
    base = await app().listen();
    await receiver.start();
    account = await app().account();
    // listen keeps its secret in the user's configuration directory: a temporary one here.
    configHome = await mkdtemp(join(tmpdir(), 'devdata-client-config-'));
    env = { ...process.env, DEVDATA_URL: base, DEVDATA_API_KEY: account.key, XDG_CONFIG_HOME: configHome };
  });

  afterAll(async () => {
    await receiver.close();
    await rm(configHome, { recursive: true, force: true });
  });

  async function api(method: string, url: string, body?: unknown) {
    const response = await app().request({ method, url, key: account.key, body });
    expect(response.status, response.body).toBeLessThan(300);
    return response.json;
  }

  it('listen --forward-to delivers each event exactly as the server’s webhooks do, signed with its secret', async () => {
    // The server's own webhook to the same receiver, for comparison.
    await api('POST', '/api/v1/webhooks', { name: 'real', url: receiver.url('/real'), events: ['resource.created', 'resource.updated', 'custom.*'] });
    const listen = new CliProcess(['listen', '--forward-to', receiver.url('/forwarded'), '--json'], env);
    await until(() => listen.lines().length > 0, 'the ready line');
    const ready = listen.json()[0] as { ready: boolean; secret: string; forwardTo: string };
    expect(ready).toMatchObject({ ready: true, forwardTo: receiver.url('/forwarded') });
    // The Standard Webhooks form, as the service makes webhooks' secrets.
    expect(ready.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const resource = await api('POST', '/api/v1/resources', { name: 'Garage door', type: 'binary_sensor', state: false });
    await api('PATCH', `/api/v1/resources/${resource.id}`, { state: true });
    await api('POST', '/api/v1/events', { type: 'custom.deployed', data: { version: '2.0.0', notes: 'ünïcode ✓' } });
    await until(() => receiver.on('/forwarded').length === 3 && receiver.on('/real').length === 3, 'three forwarded and three real deliveries');

    const forwarded = receiver.on('/forwarded');
    const real = new Map(receiver.on('/real').map((delivery) => [delivery.headers['x-service-event-id'], delivery]));
    for (const delivery of forwarded) {
      const signature = String(delivery.headers['x-service-signature']);
      const event = await verifyWebhook(delivery.rawBody, signature, ready.secret);
      expect(stripe.webhooks.constructEvent(delivery.rawBody, signature, ready.secret)).toEqual(event);
      const headers = delivery.headers as Record<string, string>;
      expect(await verifyStandardWebhook(delivery.rawBody, headers, ready.secret)).toEqual(event);
      expect(new StandardWebhook(ready.secret).verify(delivery.rawBody, headers)).toEqual(event);
      // Both schemes sign the one moment, the delivery id is Standard Webhooks' webhook-id.
      expect(delivery.headers['webhook-id']).toBe(delivery.headers['x-service-delivery-id']);
      expect(signature).toMatch(new RegExp(`^t=${delivery.headers['webhook-timestamp']},v1=`));
      // The same bytes and the same headers as the service's own delivery of that event.
      const twin = real.get(delivery.headers['x-service-event-id']) as Received;
      expect(delivery.rawBody).toBe(twin.rawBody);
      expect(Object.keys(delivery.headers).sort()).toEqual(Object.keys(twin.headers).sort());
      for (const name of ['content-type', 'user-agent', 'x-service-event-id', 'content-length']) expect(delivery.headers[name], name).toBe(twin.headers[name]);
      expect(delivery.method).toBe('POST');
      expect(delivery.headers['x-service-delivery-id']).toMatch(/^dlv_[A-Za-z0-9_-]{22}$/);
    }
    expect(forwarded.map((delivery) => JSON.parse(delivery.rawBody).type)).toEqual(['resource.created', 'resource.updated', 'custom.deployed']);

    // One line per event with the receiver's status and time.
    await until(() => listen.lines().length === 4, 'a line per event');
    expect(listen.json().slice(1)).toEqual(
      forwarded.map((delivery) => ({
        eventId: Number(delivery.headers['x-service-event-id']),
        type: JSON.parse(delivery.rawBody).type,
        deliveryId: delivery.headers['x-service-delivery-id'],
        status: 200,
        durationMs: expect.any(Number),
      })),
    );
    expect(await listen.interrupt()).toBe(0);
    expect(listen.stdout + listen.stderr).not.toContain(account.key);
  });

  it('listen replays from --after, filters with --events and --secret, and reports a failing receiver', async () => {
    const listen = new CliProcess(
      ['listen', '--forward-to', receiver.url('/status/500'), '--after', '0', '--events', 'resource.updated,custom.*', '--secret', 'whsec_chosen'],
      env,
    );
    await until(() => receiver.on('/status/500').length === 2, 'the replayed matching events');
    await until(() => listen.lines().length === 3, 'the ready line and a line per event');
    const [readyLine, ...eventLines] = listen.lines();
    expect(readyLine).toContain('whsec_chosen');
    expect(eventLines[0]).toMatch(/--> resource\.updated #2 {2}<-- \[500\] \d+ ms \(dlv_/);
    expect(eventLines[1]).toMatch(/--> custom\.deployed #3 {2}<-- \[500\] \d+ ms \(dlv_/);
    for (const delivery of receiver.on('/status/500')) {
      await verifyWebhook(delivery.rawBody, String(delivery.headers['x-service-signature']), 'whsec_chosen');
      await verifyStandardWebhook(delivery.rawBody, delivery.headers as Record<string, string>, 'whsec_chosen');
    }
    expect(await listen.interrupt()).toBe(0);
  });

  it('listen keeps its signing secret per server and account across runs; --print-secret shows it', async () => {
    const fresh = await app().account(['events:read']);
    const as = (key: string, ...args: string[]) => run(process.execPath, [CLIENT_CLI, ...args], { env: { ...env, DEVDATA_API_KEY: key } });
    const first = await as(fresh.key, 'listen', '--print-secret');
    expect(first.code, first.stderr).toBe(0);
    const secret = first.stdout.trim();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(first.stderr).toBe('');
    expect(JSON.parse((await as(fresh.key, 'listen', '--print-secret', '--json')).stdout)).toEqual({ secret });

    // listen signs with it.
    const listen = new CliProcess(['listen', '--forward-to', receiver.url('/kept'), '--json'], { ...env, DEVDATA_API_KEY: fresh.key });
    await until(() => listen.lines().length > 0, 'the ready line');
    expect(listen.json()[0]).toMatchObject({ ready: true, secret });
    expect(await listen.interrupt()).toBe(0);

    // --secret is used instead, and not kept; another account has its own.
    expect((await as(fresh.key, 'listen', '--print-secret', '--secret', 'whsec_given')).stdout).toBe('whsec_given\n');
    expect((await as(fresh.key, 'listen', '--print-secret')).stdout.trim()).toBe(secret);
    const other = (await cli('listen', '--print-secret')).stdout.trim();
    expect(other).toMatch(/^whsec_/);
    expect(other).not.toBe(secret);

    // A file per server and account, readable by its owner only.
    const directory = join(configHome, 'devdata', 'listen-secrets');
    const files = await readdir(directory);
    expect(files.some((file) => file.startsWith(`${fresh.accountId}@`))).toBe(true);
    for (const file of files) expect((await stat(join(directory, file))).mode & 0o777, file).toBe(0o600);
    expect(files.filter((file) => file.endsWith('.tmp'))).toEqual([]);
  });

  it('listen keeps using a secret kept before the Standard Webhooks form, saying how to replace it', async () => {
    const older = await app().account(['events:read']);
    const as = (...args: string[]) => run(process.execPath, [CLIENT_CLI, ...args], { env: { ...env, DEVDATA_API_KEY: older.key } });
    // The file a run made, holding a secret in the form listen made before (base64url).
    expect((await as('listen', '--print-secret')).code).toBe(0);
    const directory = join(configHome, 'devdata', 'listen-secrets');
    const file = (await readdir(directory)).find((name) => name.startsWith(`${older.accountId}@`))!;
    const kept = `whsec_${'ab-_'.repeat(10)}abc`;
    await writeFile(join(directory, file), `${kept}\n`);
    const printed = await as('listen', '--print-secret');
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toBe(`${kept}\n`);
    expect(printed.stderr).toContain('predates the Standard Webhooks form');
    expect(printed.stderr).toContain(join(directory, file));
  });

  it('listen --after sends the backlog after the cursor, then the live events, each once and in order, while events are written during the backfill', async () => {
    const writer = await app().account(['events:read', 'events:write']);
    const publish = async (n: number) => {
      const response = await app().request({ method: 'POST', url: '/api/v1/events', key: writer.key, body: { type: 'custom.seam', data: { n } } });
      expect(response.status).toBe(201);
      return { id: response.json.id as number, at: Date.now() };
    };
    for (let n = 1; n <= 30; n++) await publish(n);
    // A slow receiver: the backfill of 25 takes over a second to forward.
    receiver.slowMs = 50;
    const path = '/slow?seam';
    const listen = new CliProcess(['listen', '--forward-to', receiver.url(path), '--after', '5', '--json'], { ...env, DEVDATA_API_KEY: writer.key });
    // Events written all along: while listen starts, while the server replays and while the backlog is forwarded.
    const written: Array<{ id: number; at: number }> = [];
    let writing = true;
    const writing$ = (async () => {
      for (let n = 31; writing; n++) {
        written.push(await publish(n));
        await sleep(15);
      }
    })();
    await until(() => receiver.on(path).length >= 20, 'most of the backlog forwarded');
    writing = false;
    await writing$;
    const last = written.at(-1)!.id;
    await until(() => receiver.on(path).length === last - 5, 'the backlog and every event written since');
    const received = receiver.on(path);
    expect(received.map((delivery) => Number(delivery.headers['x-service-event-id']))).toEqual(Array.from({ length: last - 5 }, (_unused, index) => index + 6));
    expect(received.map((delivery) => JSON.parse(delivery.rawBody).data.n)).toEqual(Array.from({ length: last - 5 }, (_unused, index) => index + 6));
    // Some events were written while the backlog was being forwarded: after the first forward, before the backlog's last.
    const backlogDone = received[24]!.at;
    expect(written.some((event) => event.at > received[0]!.at && event.at < backlogDone)).toBe(true);

    // Then live: the next event comes once, after the others.
    const live = await publish(0);
    await until(() => receiver.on(path).length === last - 4, 'the live event');
    expect(receiver.on(path).at(-1)!.headers['x-service-event-id']).toBe(String(live.id));
    await until(() => listen.lines().length === last - 3, 'the ready line and a line per event');
    expect(
      listen
        .json()
        .slice(1)
        .map((line) => line.eventId),
    ).toEqual(Array.from({ length: last - 4 }, (_unused, index) => index + 6));
    expect(await listen.interrupt()).toBe(0);
  });

  it('events tail follows the log, replaying from --after, until Ctrl-C', async () => {
    const tail = new CliProcess(['events', 'tail', '--after', '1', '--json'], env);
    await until(() => tail.lines().length === 2, 'the replay');
    await api('POST', '/api/v1/events', { type: 'custom.tailed', data: { n: 1 } });
    await until(() => tail.lines().length === 3, 'the live event');
    expect(tail.json().map((event) => event.id)).toEqual([2, 3, 4]);
    expect(tail.json()[2]).toMatchObject({ type: 'custom.tailed', data: { n: 1 } });
    expect(await tail.interrupt()).toBe(0);

    const human = new CliProcess(['events', 'tail', '--type', 'resource.*', '--after', '0'], env);
    await until(() => human.lines().length === 2, 'the resource events');
    // A binary sensor's state reads as the console shows it.
    expect(human.lines()[0]).toMatch(/^\S+Z {2}#1 {2}resource\.created {2}res_\S+ Garage door: off$/);
    expect(await human.interrupt()).toBe(0);
  });

  it('trigger publishes a custom event; whoami describes the credential', async () => {
    const triggered = await cli('trigger', 'custom.cli_test', '--data', '{"ok":true}', '--json');
    expect(triggered.code, triggered.stderr).toBe(0);
    const event = JSON.parse(triggered.stdout);
    expect(event).toMatchObject({ type: 'custom.cli_test', data: { ok: true } });
    expect((await app().request({ url: `/api/v1/events?after=${event.id - 1}`, key: account.key })).json.data[0]).toEqual(event);
    expect((await cli('trigger', 'custom.plain')).stdout).toMatch(/^Published custom\.plain as event #\d+\n$/);

    const whoami = await cli('whoami');
    expect(whoami.code).toBe(0);
    expect(whoami.stdout).toContain(account.accountId);
    expect(whoami.stdout).toContain(account.keyId);
    expect(whoami.stdout).not.toContain(account.key);
    expect(JSON.parse((await cli('whoami', '--json')).stdout)).toMatchObject({
      account: { id: account.accountId },
      credential: { id: account.keyId, kind: 'api_key' },
    });
  });

  it('resources list, get and set, with --if-match refusing a stale version', async () => {
    const lamp = await api('POST', '/api/v1/resources', { name: 'Desk lamp', type: 'switch', state: false });
    const listed = await cli('resources', 'list', '--type', 'switch', '--json');
    expect(listed.code).toBe(0);
    // One document: every page's resources in the API's list shape.
    expect(JSON.parse(listed.stdout).data.map((resource: { id: string }) => resource.id)).toEqual([lamp.id]);
    const got = (await cli('resources', 'get', lamp.id)).stdout;
    expect(got).toMatch(new RegExp(`^ID: +${lamp.id}$`, 'm'));
    expect(got).toMatch(/^State: +off$/m);

    const set = await cli('resources', 'set', lamp.id, 'on', '--json');
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ id: lamp.id, state: true, version: 2 });
    const stale = await cli('resources', 'set', lamp.id, 'off', '--if-match', '1');
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/^devdata-client: precondition_failed: .+ \(HTTP 412, request \S+\)$/m);
    expect((await cli('resources', 'set', lamp.id, 'maybe')).code).toBe(2);

    const missing = await cli('resources', 'get', 'res_missing', '--json');
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr)).toMatchObject({ error: { status: 404, code: 'not_found', requestId: expect.any(String) } });
  });

  it('gives exit codes a script can rely on, help for each command and its version', async () => {
    const usage = await cli('trigger', 'resource.created');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('only custom events can be published');
    expect((await cli('trigger', 'custom.x', '--data', '[1]')).code).toBe(2);
    expect((await cli('nonsense')).code).toBe(2);
    const bare = await cli('resources');
    expect([bare.code, bare.stderr]).toEqual([
      2,
      'devdata-client: resources takes list, get, set, create, update, delete, history, import or export (devdata-client resources --help)\n',
    ]);
    const nothing = await cli();
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('Usage: devdata-client <command>');
    expect((await cli('listen')).stderr).toContain('listen needs --forward-to URL');
    expect((await run(process.execPath, [CLIENT_CLI, 'whoami'], { env: { ...env, DEVDATA_API_KEY: '' } })).code).toBe(2);
    const refused = await run(process.execPath, [CLIENT_CLI, 'whoami'], { env: { ...env, DEVDATA_API_KEY: 'ddk_wrong' } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('unauthorized');
    const unreachable = await run(process.execPath, [CLIENT_CLI, '--url', 'http://127.0.0.1:9', 'whoami'], { env });
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toContain('connection_error');

    for (const command of [['listen'], ['events', 'tail'], ['trigger'], ['resources', 'set'], ['whoami']]) {
      const help = await cli(...command, '--help');
      expect(help.code, command.join(' ')).toBe(0);
      expect(help.stdout).toContain(`Usage: devdata-client ${command.join(' ')}`);
    }
    expect((await cli('--help')).stdout).toMatch(/^ {2}listen +forward live events .+\(--forward-to URL\)$/m);
    expect((await cli('--version')).stdout.trim()).toBe('1.3.0');
  });
});

describe('devdata-client listen and events tail across a server restart', () => {
  it('forward and show every event once, those written while the server was down included, saying they reconnected', async () => {
    const receiver = await new Receiver().start();
    const database = await sharedDatabase();
    let server = await TestApp.start({ env: { DATABASE_URL: database.url } });
    try {
      const base = await server.listen();
      const account = await server.account(['events:read', 'events:write']);
      const publish = async (target: TestApp, type: string) => {
        const response = await target.request({ method: 'POST', url: '/api/v1/events', key: account.key, body: { type, data: {} } });
        expect(response.status).toBe(201);
      };
      const env = { ...process.env, DEVDATA_URL: base, DEVDATA_API_KEY: account.key };
      const listen = new CliProcess(['listen', '--forward-to', receiver.url('/hook'), '--secret', 'whsec_restart'], env);
      const tail = new CliProcess(['events', 'tail', '--after', '0', '--json'], env);
      await until(() => listen.lines().length === 1, 'the ready line');
      await publish(server, 'custom.before');
      await until(() => receiver.on('/hook').length === 1 && tail.lines().length === 1, 'the first forward, and the first event shown');
      server = (await restart(server, database.url, (next) => publish(next, 'custom.while_down'))).next;
      await publish(server, 'custom.after');
      await until(() => receiver.on('/hook').length === 3, 'every event forwarded');
      expect(receiver.on('/hook').map((delivery) => [delivery.headers['x-service-event-id'], JSON.parse(delivery.rawBody).type])).toEqual([
        ['1', 'custom.before'],
        ['2', 'custom.while_down'],
        ['3', 'custom.after'],
      ]);
      await until(() => tail.lines().length === 3, 'every event shown');
      expect(tail.json().map((event) => event.type)).toEqual(['custom.before', 'custom.while_down', 'custom.after']);
      for (const follower of [listen, tail]) {
        // The drop and the wait, then where it resumed: after the last event it had.
        const lost = follower.stderr.search(/^connection lost(?: \(.+\))?, reconnecting in \d+(?:\.\d)?s…$/m);
        const back = follower.stderr.indexOf('reconnected; resuming after event 1\n');
        expect(lost, follower.stderr).toBeGreaterThanOrEqual(0);
        expect(back, follower.stderr).toBeGreaterThan(lost);
        expect(await follower.interrupt()).toBe(0);
      }
    } finally {
      await server.close();
      await database.drop();
      await receiver.close();
    }
  });
});
