// The built devdata-client CLI's webhook tools against the real server and a real receiver (issue
// #41): webhooks test (--wait), replay, recover, deliveries with --status, --limit and --before, and
// delivery, which shows each attempt's headers and the start of the answer; and their errors: 404,
// 403, 410, 400 and usage errors. --json output is checked against the API's own answers.
import { join } from 'node:path';
import { verifyStandardWebhook } from '@devdata/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestAccount, useTestApp } from '../support/app.js';
import { killAll, ROOT, run } from '../support/processes.js';
import { until } from '../support/wait.js';
import { Receiver, type Received } from '../webhooks/support.js';

const CLIENT_CLI = join(ROOT, 'client', 'bin', 'devdata-client.js');
const RETENTION = 30;

afterAll(async () => {
  await killAll();
});

describe('devdata-client webhook tools', () => {
  const app = useTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCHEDULE: '0,0,0,0,0', EVENT_RETENTION: String(RETENTION) } });
  const receiver = new Receiver();
  let base: string;
  let account: TestAccount;

  beforeAll(async () => {
    base = await app().listen();
    await receiver.start();
    account = await app().account();
  });

  afterAll(async () => {
    await receiver.close();
  });

  const cliAs =
    (key: string) =>
    (...args: string[]) =>
      run(process.execPath, [CLIENT_CLI, ...args], { env: { ...process.env, DEVDATA_URL: base, DEVDATA_API_KEY: key } });
  const cli = (...args: string[]) => cliAs(account.key)(...args);
  async function json(...args: string[]) {
    const result = await cli(...args, '--json');
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    return JSON.parse(result.stdout);
  }
  async function failure(...args: string[]) {
    const result = await cli(...args, '--json');
    return { exit: result.code, ...JSON.parse(result.stderr).error };
  }
  async function api(method: string, url: string, body?: unknown) {
    const response = await app().request({ method, url, key: account.key, body });
    expect(response.status, response.body).toBeLessThan(300);
    return response.json;
  }
  const publish = (type: string, data: Record<string, unknown> = {}) => api('POST', '/api/v1/events', { type, data });

  it('webhooks test sends a webhook.test delivery (to a paused webhook too) and prints its id; --wait shows how it went', async () => {
    const hook = await api('POST', '/api/v1/webhooks', { name: 'tested', url: receiver.url('/cli-test'), events: ['custom.*'], enabled: false });
    const sent = await cli('webhooks', 'test', hook.id);
    expect(sent.code, sent.stderr).toBe(0);
    const deliveryId = /^Queued test delivery (dlv_\S+)$/.exec(sent.stdout.trim())?.[1];
    expect(deliveryId).toBeDefined();
    expect(sent.stderr).toContain(`devdata-client webhooks delivery ${hook.id} ${deliveryId}`);
    await until(() => receiver.on('/cli-test').length === 1, 'the test delivery');
    const received = receiver.on('/cli-test')[0] as Received;
    expect(received.headers['webhook-id']).toBe(deliveryId);
    expect(await verifyStandardWebhook(received.rawBody, received.headers as Record<string, string>, hook.secret)).toMatchObject({
      id: 0,
      type: 'webhook.test',
      data: { webhookId: hook.id },
    });
    expect(await json('webhooks', 'test', hook.id)).toEqual({ deliveryId: expect.stringMatching(/^dlv_/) });

    const waited = await cli('webhooks', 'test', hook.id, '--wait');
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toMatch(/^Event: +#0 webhook\.test$/m);
    expect(waited.stdout).toMatch(/^Kind: +test/m);
    expect(waited.stdout).toMatch(/^Attempt 1 {2}\S+Z {2}HTTP 200 {2}\d+ ms$/m);
    expect(waited.stdout).toMatch(/^ {4}x-service-event-id: 0$/m);
    expect(waited.stdout).toMatch(/^ {4}webhook-signature: v1,\S+$/m);
    expect(waited.stdout).toMatch(/^ {2}Response body \(its first 1 KiB\):\n {4}ok$/m);
  });

  it('webhooks replay re-sends (after, until] and prints queued and skipped; recover re-sends what failed since a time', async () => {
    const hook = await api('POST', '/api/v1/webhooks', { name: 'replayed', url: receiver.url('/cli-replay'), events: ['custom.replay_me'] });
    const first = await publish('custom.replay_me', { n: 1 });
    await publish('custom.not_me');
    const second = await publish('custom.replay_me', { n: 2 });
    await until(() => receiver.on('/cli-replay').length === 2, 'the live deliveries');

    const replayed = await cli('webhooks', 'replay', hook.id, '--after', String(first.id - 1), '--until', String(second.id - 1));
    expect([replayed.code, replayed.stdout, replayed.stderr]).toEqual([0, 'Queued 1 delivery; 0 skipped\n', '']);
    expect(await json('webhooks', 'replay', hook.id, '--after', String(first.id - 1))).toEqual({ queued: 2, skipped: 0 });
    await until(() => receiver.on('/cli-replay').length === 5, 'the replays');
    const again = receiver.on('/cli-replay').slice(2);
    expect(again.map((each) => [each.headers['x-service-event-id'], each.headers['x-service-replay']]).sort()).toEqual([
      [String(first.id), 'true'],
      [String(first.id), 'true'],
      [String(second.id), 'true'],
    ]);
    await until(async () => (await json('webhooks', 'deliveries', hook.id, '--status', 'pending')).data.length === 0, 'every delivery done');
    const human = (await cli('webhooks', 'deliveries', hook.id)).stdout;
    expect(human).toMatch(new RegExp(`^dlv_\\S+ +#${second.id} custom\\.replay_me \\(replay\\) +succeeded +1 +HTTP 200 `, 'm'));
    expect(human).toMatch(new RegExp(`^dlv_\\S+ +#${first.id} custom\\.replay_me +succeeded +1 +HTTP 200 `, 'm'));

    const failing = await api('POST', '/api/v1/webhooks', { name: 'failing', url: receiver.url('/fail'), events: ['custom.fail_me'] });
    await publish('custom.fail_me');
    await until(async () => (await json('webhooks', 'deliveries', failing.id, '--status', 'failed')).data.length === 1, 'the failed delivery');
    expect((await cli('webhooks', 'recover', failing.id, '--since', '1h')).stdout).toMatch(/^Queued 1 delivery that failed since \S+Z$/m);
    expect(await json('webhooks', 'recover', failing.id, '--since', new Date(Date.now() + 60_000).toISOString())).toEqual({ queued: 0 });
    const recovered = (await json('webhooks', 'deliveries', failing.id)).data;
    expect(recovered.map((each: { replay: boolean }) => each.replay)).toEqual([true, false]);
  });

  it('webhooks deliveries pages with --limit and --before; webhooks delivery shows one with its attempts, headers and answer', async () => {
    const hook = await api('POST', '/api/v1/webhooks', { name: 'paged', url: receiver.url('/status/503'), events: ['custom.paged'] });
    for (let n = 0; n < 5; n++) await publish('custom.paged', { n });
    let all: Array<{ id: string; status: string }> = [];
    await until(async () => {
      all = (await json('webhooks', 'deliveries', hook.id)).data;
      return all.length === 5 && all.every((each) => each.status === 'failed');
    }, 'five failed deliveries');
    expect(all).toEqual((await api('GET', `/api/v1/webhooks/${hook.id}/deliveries`)).data);

    const page = await cli('webhooks', 'deliveries', hook.id, '--limit', '2');
    expect(
      page.stdout
        .split('\n')
        .slice(1, 3)
        .map((line) => line.split(' ')[0]),
    ).toEqual([all[0]!.id, all[1]!.id]);
    expect(page.stderr).toBe(`More: --before ${all[1]!.id}\n`);
    expect((await json('webhooks', 'deliveries', hook.id, '--limit', '2', '--before', all[1]!.id)).data.map((each: { id: string }) => each.id)).toEqual([
      all[2]!.id,
      all[3]!.id,
    ]);
    expect((await json('webhooks', 'deliveries', hook.id, '--status', 'succeeded')).data).toEqual([]);
    expect((await cli('webhooks', 'deliveries', hook.id, '--status', 'succeeded')).stderr).toBe('No deliveries.\n');

    const one = await json('webhooks', 'delivery', hook.id, all[0]!.id);
    expect(one).toEqual(all[0]);
    const shown = await cli('webhooks', 'delivery', hook.id, all[0]!.id);
    expect(shown.stdout).toMatch(/^Status: +failed$/m);
    expect(shown.stdout.match(/^Attempt \d {2}\S+Z {2}HTTP 503 {2}\d+ ms$/gm)).toHaveLength(5);
    expect(shown.stdout).toMatch(new RegExp(`^ {4}webhook-id: ${all[0]!.id}$`, 'm'));
    // The receiver answered 503 with an empty body.
    expect(shown.stdout).toMatch(/^ {2}Response body: empty$/m);
    expect(await failure('webhooks', 'delivery', hook.id, 'dlv_missing')).toMatchObject({ exit: 1, message: expect.stringContaining('dlv_missing') });
  });

  it('refuses an unknown webhook (404), a replay without events:read (403), an expired cursor (410) and a bad --before (400)', async () => {
    for (const command of [
      ['webhooks', 'test', 'wh_missing'],
      ['webhooks', 'replay', 'wh_missing', '--after', '0'],
      ['webhooks', 'recover', 'wh_missing', '--since', '24h'],
      ['webhooks', 'deliveries', 'wh_missing'],
    ]) {
      expect(await failure(...command), command.join(' ')).toMatchObject({ exit: 1, status: 404, code: 'not_found' });
    }
    const hook = await api('POST', '/api/v1/webhooks', { name: 'refusing', url: receiver.url('/cli-refusing'), events: ['custom.refused'] });
    const { key } = await api('POST', '/api/v1/keys', { name: 'manage only', scopes: ['webhooks:manage'] });
    const limited = await cliAs(key)('webhooks', 'replay', hook.id, '--after', '0');
    expect(limited.code).toBe(1);
    expect(limited.stderr).toMatch(/^devdata-client: insufficient_scope: .+ \(HTTP 403, request \S+\)$/m);

    await api('POST', '/api/v1/batch', {
      operations: Array.from({ length: RETENTION + 5 }, (_unused, n) => ({ op: 'publish', type: 'custom.filler', data: { n } })),
    });
    const expired = await cli('webhooks', 'replay', hook.id, '--after', '0');
    expect(expired.code).toBe(1);
    expect(expired.stderr).toMatch(
      /^devdata-client: cursor_expired: Cursor 0 has expired: the oldest cursor still retained is \d+\. Replay after \d+ .+\(HTTP 410/m,
    );

    expect(await failure('webhooks', 'deliveries', hook.id, '--before', 'dlv_missing')).toMatchObject({ exit: 1, status: 400, code: 'invalid_request' });
    expect((await cli('webhooks', 'deliveries', hook.id, '--before', 'dlv_missing')).stderr).toMatch(
      /^devdata-client: invalid_request: .+ \(HTTP 400, request \S+\)$/m,
    );
  });

  it('refuses mistakes on the command line before calling the server (exit code 2)', async () => {
    for (const [args, message] of [
      [['webhooks', 'replay', 'wh_1'], 'webhooks replay needs --after N'],
      [['webhooks', 'replay', 'wh_1', '--after', 'yesterday'], '--after must be a non-negative integer'],
      [['webhooks', 'replay', 'wh_1', '--after', '5', '--until', '4'], '--until (4) must not be less than --after (5)'],
      [['webhooks', 'recover', 'wh_1'], 'webhooks recover needs --since TIME'],
      [['webhooks', 'recover', 'wh_1', '--since', 'last week'], '--since takes a duration ago such as 30m'],
      [['webhooks', 'deliveries', 'wh_1', '--status', 'lost'], '--status must be one of pending, succeeded, failed, not "lost"'],
      [['webhooks', 'deliveries', 'wh_1', '--limit', '501'], '--limit must be 1-500, not 501'],
      [['webhooks', 'delivery', 'wh_1'], 'webhooks delivery takes <id> <delivery-id> (got wh_1)'],
      [['webhooks', 'test'], 'webhooks test takes <id>'],
    ] as Array<[string[], string]>) {
      const result = await cliAs('ddk_unused')(...args, '--url', 'http://127.0.0.1:9');
      expect([result.code, result.stderr.includes(message)], `${args.join(' ')}: ${result.stderr}`).toEqual([2, true]);
    }
  });
});
