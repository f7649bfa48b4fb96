// The built devdata-client CLI's commands for the API (issue #38): resources create, update and
// delete; webhooks; keys; apps; schedules; usage; audit list; events list. Each against the real
// server, --json output parsed (the API's JSON, one document) and checked against the server, the
// human output read where it says something of its own, and an error path of each. Errors are
// asserted by exit code, status and code, never by the server's wording. Colour only on a terminal.
import { join } from 'node:path';
import { verifyWebhook } from '@devdata/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestAccount, useTestApp } from '../support/app.js';
import { killAll, ROOT, run, scriptAvailable } from '../support/processes.js';
import { until } from '../support/wait.js';
import { Receiver } from '../webhooks/support.js';

const CLIENT_CLI = join(ROOT, 'client', 'bin', 'devdata-client.js');

afterAll(async () => {
  await killAll();
});

describe('devdata-client commands', () => {
  const app = useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const receiver = new Receiver();
  let base: string;

  beforeAll(async () => {
    base = await app().listen();
    await receiver.start();
  });

  afterAll(async () => {
    await receiver.close();
  });

  /** The CLI as an account (every scope unless told), with its --json output parsed. */
  async function as(account?: TestAccount) {
    const who = account ?? (await app().account());
    const env = { ...process.env, DEVDATA_URL: base, DEVDATA_API_KEY: who.key };
    const cli = (...args: string[]) => run(process.execPath, [CLIENT_CLI, ...args], { env });
    return {
      account: who,
      cli,
      /** The one JSON document of a command that succeeded. */
      json: async (...args: string[]) => {
        const result = await cli(...args, '--json');
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
        return JSON.parse(result.stdout);
      },
      /** The exit code and the error (status, code) of a command that failed, from --json. */
      failure: async (...args: string[]) => {
        const result = await cli(...args, '--json');
        return { exit: result.code, ...JSON.parse(result.stderr).error };
      },
      /** What the API itself answers, to compare with. */
      api: async (url: string) => (await app().request({ url, key: who.key })).json,
    };
  }

  it('resources create, update with --if-match and delete', async () => {
    const { json, failure, cli, api } = await as();
    const sensor = await json(
      'resources',
      'create',
      '--name',
      'Hall',
      '--type',
      'sensor',
      '--state=-2.5',
      '--attributes',
      '{"unit":"°C"}',
      '--tags',
      'hall, floor',
    );
    expect(sensor).toMatchObject({ name: 'Hall', type: 'sensor', state: -2.5, attributes: { unit: '°C' }, tags: ['hall', 'floor'], version: 1 });
    expect(await api(`/api/v1/resources/${sensor.id}`)).toEqual(sensor);

    const lamp = await cli('resources', 'create', '--name', 'Lamp', '--type', 'switch', '--state', 'off');
    expect(lamp.code, lamp.stderr).toBe(0);
    expect(lamp.stdout).toMatch(/^State: +off$/m);
    const lampId = /^ID: +(\S+)$/m.exec(lamp.stdout)![1]!;
    const on = await json('resources', 'update', lampId, '--state', 'on', '--name', 'Desk lamp', '--tags', '', '--if-match', '1');
    expect(on).toMatchObject({ id: lampId, name: 'Desk lamp', state: true, tags: [], version: 2 });
    expect(await failure('resources', 'update', lampId, '--state', 'off', '--if-match', '1')).toMatchObject({
      exit: 1,
      status: 412,
      code: 'precondition_failed',
    });
    expect(await failure('resources', 'create', '--name', '', '--type', 'text', '--state', 'x')).toMatchObject({
      exit: 1,
      status: 400,
      code: 'invalid_request',
    });

    expect(await failure('resources', 'delete', lampId, '--if-match', '"1"')).toMatchObject({ exit: 1, status: 412 });
    expect(await json('resources', 'delete', lampId, '--if-match', '"2"')).toEqual({ id: lampId, deleted: true });
    expect(await failure('resources', 'get', lampId)).toMatchObject({ exit: 1, status: 404, code: 'not_found' });
    expect((await cli('resources', 'delete', sensor.id)).stdout).toBe(`Deleted ${sensor.id}.\n`);
  });

  it('webhooks create, list, get, update, deliveries, retry, rotate-secret and delete', async () => {
    const { json, failure, cli, api } = await as();
    const created = await json('webhooks', 'create', '--name', 'Local', '--receiver', receiver.url('/cli-hook'), '--events', 'resource.created,custom.*');
    expect(created).toMatchObject({ name: 'Local', url: receiver.url('/cli-hook'), events: ['resource.created', 'custom.*'], enabled: true });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await json('webhooks', 'list')).data).toEqual([await api(`/api/v1/webhooks/${created.id}`)]);
    expect(await json('webhooks', 'get', created.id)).toEqual(await api(`/api/v1/webhooks/${created.id}`));

    const paused = await cli('webhooks', 'update', created.id, '--disable');
    expect(paused.stdout).toMatch(/^Status: +paused$/m);
    expect(await json('webhooks', 'update', created.id, '--enable', '--name', 'Local receiver')).toMatchObject({ enabled: true, name: 'Local receiver' });
    expect((await cli('webhooks', 'list')).stdout).toMatch(new RegExp(`^${created.id} +Local receiver +active +resource\\.created, custom\\.\\* +http`, 'm'));

    await json('trigger', 'custom.ping');
    await until(() => receiver.on('/cli-hook').length === 1, 'the delivery');
    const [delivered] = receiver.on('/cli-hook');
    await verifyWebhook(delivered!.rawBody, String(delivered!.headers['x-service-signature']), created.secret);
    let deliveries: any[] = [];
    await until(async () => {
      deliveries = (await json('webhooks', 'deliveries', created.id)).data;
      return deliveries[0]?.status === 'succeeded';
    }, 'the delivery recorded as succeeded');
    expect(deliveries[0]).toMatchObject({ eventType: 'custom.ping', attempts: [{ responseStatus: 200 }] });
    expect((await cli('webhooks', 'deliveries', created.id)).stdout).toMatch(
      new RegExp(`^${deliveries[0].id} +#\\d+ custom\\.ping +succeeded +1 +HTTP 200 `, 'm'),
    );
    expect(await json('webhooks', 'retry', created.id, deliveries[0].id)).toMatchObject({ id: deliveries[0].id, status: 'pending' });

    const rotated = await json('webhooks', 'rotate-secret', created.id);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    expect(await failure('webhooks', 'create', '--name', 'Bad', '--receiver', receiver.url('/x'), '--events', 'nope')).toMatchObject({
      exit: 1,
      status: 400,
      code: 'invalid_request',
    });
    expect(await json('webhooks', 'delete', created.id)).toEqual({ id: created.id, deleted: true });
    expect(await failure('webhooks', 'get', created.id)).toMatchObject({ exit: 1, status: 404 });
  });

  it('keys create (the secret shown once), list, rename, revoke and list --all', async () => {
    const { json, failure, cli } = await as();
    const key = await json('keys', 'create', '--name', 'ci', '--scopes', 'resources:read,events:read', '--expires-in-days', '7');
    expect(key).toMatchObject({ name: 'ci', scopes: ['resources:read', 'events:read'] });
    expect(key.key).toMatch(/^ddk_/);
    const asKey = await as({ accountId: '', keyId: key.id, key: key.key });
    expect(await asKey.json('whoami')).toMatchObject({ credential: { id: key.id, scopes: ['resources:read', 'events:read'] } });
    expect((await json('keys', 'list')).data.map((listed: { id: string }) => listed.id)).toContain(key.id);
    const listed = await cli('keys', 'list');
    expect(listed.stdout).toMatch(new RegExp(`^${key.id} +ci +active +resources:read, events:read +\\S+Z `, 'm'));
    expect(listed.stdout).not.toContain(key.key);
    expect(await json('keys', 'rename', key.id, '--name', 'ci runner')).toMatchObject({ id: key.id, name: 'ci runner' });
    expect((await cli('keys', 'rename', key.id, '--name', 'ci')).stdout).toBe(`Renamed ${key.id} to ci.\n`);
    expect(await failure('keys', 'rename', key.id)).toMatchObject({ exit: 2 });

    expect(await failure('keys', 'create', '--name', 'bad', '--scopes', 'nothing:here')).toMatchObject({ exit: 1, status: 400, code: 'invalid_request' });
    expect(await json('keys', 'revoke', key.id)).toEqual({ id: key.id, revoked: true });
    expect(await failure('keys', 'revoke', key.id)).toMatchObject({ exit: 1, status: 404 });
    expect(await failure('keys', 'rename', key.id, '--name', 'too late')).toMatchObject({ exit: 1, status: 404 });
    expect(await asKey.failure('whoami')).toMatchObject({ exit: 1, status: 401, code: 'unauthorized' });
    // Ended keys only with --all, each with its status.
    expect((await json('keys', 'list')).data.map((listed: { id: string }) => listed.id)).not.toContain(key.id);
    expect((await json('keys', 'list', '--all')).data).toContainEqual(expect.objectContaining({ id: key.id, status: 'revoked' }));
    expect((await cli('keys', 'list', '--all')).stdout).toMatch(new RegExp(`^${key.id} +ci +revoked `, 'm'));
  });

  it('apps create, list, get, update, rotate-secret and delete', async () => {
    const { json, failure, cli, api } = await as();
    const created = await json(
      'apps',
      'create',
      '--name',
      'Dashboard',
      '--type',
      'confidential',
      '--redirect-uris',
      'http://localhost:3000/cb',
      '--scopes',
      'resources:read',
    );
    expect(created).toMatchObject({ name: 'Dashboard', type: 'confidential', redirectUris: ['http://localhost:3000/cb'], scopes: ['resources:read'] });
    expect(created.clientSecret).toMatch(/^ddcs_/);
    expect((await json('apps', 'list')).data).toEqual([await api(`/api/v1/apps/${created.id}`)]);
    expect((await cli('apps', 'get', created.id)).stdout).toMatch(new RegExp(`^Client ID: +${created.clientId}$`, 'm'));
    expect(await json('apps', 'update', created.id, '--scopes', 'resources:read,events:read')).toMatchObject({ scopes: ['resources:read', 'events:read'] });
    const rotated = await json('apps', 'rotate-secret', created.id);
    expect(rotated.clientSecret).toMatch(/^ddcs_/);
    expect(rotated.clientSecret).not.toBe(created.clientSecret);

    const spa = await json('apps', 'create', '--name', 'SPA', '--type', 'public', '--redirect-uris', 'http://127.0.0.1:5173/cb', '--scopes', 'resources:read');
    expect(await failure('apps', 'rotate-secret', spa.id)).toMatchObject({ exit: 1, status: 409, code: 'conflict' });
    expect(
      await failure('apps', 'create', '--name', 'Admin', '--type', 'public', '--redirect-uris', 'http://localhost/cb', '--scopes', 'keys:manage'),
    ).toMatchObject({
      exit: 1,
      status: 400,
    });
    expect(await json('apps', 'delete', created.id)).toEqual({ id: created.id, deleted: true });
    expect(await failure('apps', 'get', created.id)).toMatchObject({ exit: 1, status: 404 });
  });

  it('schedules create, list, get, update, run and delete; a failed run exits 1', async () => {
    const { json, failure, cli, api } = await as();
    const lamp = await json('resources', 'create', '--name', 'Porch light', '--type', 'switch', '--state', 'off');
    const morning = await json(
      'schedules',
      'create',
      '--name',
      'Morning',
      '--cron',
      '0 7 * * *',
      '--timezone',
      'Europe/Berlin',
      '--resource',
      lamp.id,
      '--state',
      'on',
    );
    expect(morning).toMatchObject({
      cron: '0 7 * * *',
      timezone: 'Europe/Berlin',
      enabled: true,
      action: { type: 'set_state', resourceId: lamp.id, state: true },
    });
    const once = await json(
      'schedules',
      'create',
      '--name',
      'New year',
      '--at',
      '2099-01-01T00:00:00Z',
      '--event-type',
      'custom.new_year',
      '--data',
      '{"n":1}',
      '--disabled',
    );
    expect(once).toMatchObject({ enabled: false, action: { type: 'publish_event', eventType: 'custom.new_year', data: { n: 1 } } });
    expect((await json('schedules', 'list')).data.map((schedule: { id: string }) => schedule.id).sort()).toEqual([morning.id, once.id].sort());
    const listed = (await cli('schedules', 'list')).stdout;
    expect(listed).toMatch(new RegExp(`^${morning.id} +Morning +enabled +cron 0 7 \\* \\* \\* \\(Europe/Berlin\\) +\\S+Z +set ${lamp.id} to on$`, 'm'));
    expect(listed).toMatch(new RegExp(`^${once.id} +New year +paused +at 2099-01-01T00:00:00.000Z +none +publish custom\\.new_year$`, 'm'));
    expect(await json('schedules', 'get', once.id)).toEqual(await api(`/api/v1/schedules/${once.id}`));

    expect(await json('schedules', 'run', morning.id)).toMatchObject({ scheduleId: morning.id, outcome: 'succeeded', eventId: expect.any(Number) });
    expect((await cli('resources', 'get', lamp.id)).stdout).toMatch(/^State: +on$/m);
    const updated = await json('schedules', 'update', once.id, '--cron', '30 6 * * 1', '--enable');
    expect(updated).toMatchObject({ cron: '30 6 * * 1', at: null, enabled: true });

    await json('resources', 'delete', lamp.id);
    const failed = await cli('schedules', 'run', morning.id);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/^Outcome: +failed$/m);
    expect(await failure('schedules', 'create', '--name', 'Bad', '--cron', 'not a cron', '--event-type', 'custom.x')).toMatchObject({ exit: 1, status: 400 });
    expect(await json('schedules', 'delete', once.id)).toEqual({ id: once.id, deleted: true });
    expect(await failure('schedules', 'get', once.id)).toMatchObject({ exit: 1, status: 404 });
  });

  it('usage, audit list and events list, with their filters and paging', async () => {
    const { json, failure, cli, api } = await as();
    await json('trigger', 'custom.one');
    await json('trigger', 'custom.two');
    await json('keys', 'create', '--name', 'audited', '--scopes', 'resources:read');

    // Each request counts, this one too: the API's answer is compared by its shape and its events.
    const usage = await json('usage', '--days', '3');
    expect(usage.data.map((day: { date: string }) => day.date)).toEqual((await api('/api/v1/usage?days=3')).data.map((day: { date: string }) => day.date));
    expect(usage.totals).toMatchObject({ eventsCreated: 2, webhookDeliveries: 0 });
    expect((await cli('usage', '--days', '2')).stdout).toMatch(/^total +\d+ +\d+ +2 +0$/m);
    expect(await failure('usage', '--days', '0')).toMatchObject({ exit: 1, status: 400 });

    const audit = await json('audit', 'list');
    expect(audit.data.map((record: { type: string }) => record.type)).toEqual(['account.created', 'key.created', 'key.created']);
    const page = await json('audit', 'list', '--limit', '1');
    expect(page).toEqual(await api('/api/v1/audit?limit=1'));
    expect(page).toMatchObject({ hasMore: true, data: [{ type: 'account.created' }] });
    expect((await json('audit', 'list', '--after', String(page.cursor), '--type', 'key.*')).data).toHaveLength(2);
    const newestFirst = await json('audit', 'list', '--newest-first');
    expect(newestFirst.data.map((record: { id: string }) => record.id)).toEqual([...audit.data].reverse().map((record: { id: string }) => record.id));
    expect((await cli('audit', 'list', '--type', 'key.*')).stdout).toMatch(/^aud_\S+ +\S+Z +key\.created +api_key key_\S+ +api_key key_\S+$/m);

    const events = await json('events', 'list', '--after', '0');
    expect(events.data.map((event: { type: string }) => event.type)).toEqual(['custom.one', 'custom.two']);
    const first = await json('events', 'list', '--limit', '1');
    expect(first).toEqual(await api('/api/v1/events?limit=1'));
    expect((await json('events', 'list', '--after', String(first.cursor), '--type', 'custom.two')).data).toEqual([events.data[1]]);
    expect(await failure('events', 'list', '--limit', '5000')).toMatchObject({ exit: 1, status: 400 });
  });

  it.skipIf(!scriptAvailable)('colours the output on a terminal only: not in a pipe, with NO_COLOR or with --no-color', async () => {
    const { json, cli, account } = await as();
    await json('resources', 'create', '--name', 'Fan', '--type', 'switch', '--state', 'on');
    const onTerminal = (extraEnv: Record<string, string>, ...args: string[]) =>
      // SHELL: the shell script starts the command with, whatever the caller's is (an empty one fails).
      run('script', ['-qec', `exec ${[process.execPath, CLIENT_CLI, 'resources', 'list', ...args].map((word) => `'${word}'`).join(' ')}`, '/dev/null'], {
        env: { ...process.env, SHELL: '/bin/sh', DEVDATA_URL: base, DEVDATA_API_KEY: account.key, NO_COLOR: '', ...extraEnv },
      });
    const coloured = await onTerminal({});
    expect(coloured.stdout).toContain('\u001b[1mID\u001b[22m');
    expect(coloured.stdout).toContain('\u001b[32mon\u001b[39m');
    for (const plain of [await onTerminal({ NO_COLOR: '1' }), await onTerminal({}, '--no-color'), await cli('resources', 'list')]) {
      expect(plain.stdout).toMatch(/ +on +1 +-\r?\n/);
      expect(plain.stdout).not.toContain('\u001b[');
    }
  });
});
