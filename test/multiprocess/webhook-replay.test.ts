// Webhook replays across two `devdata serve` processes on one PostgreSQL database (api-decisions
// §14): both dispatchers drain the one outbox, so a replay of 300 events reaches the receiver once
// each; the same replay asked of both processes at once with one Idempotency-Key queues once.
// Runs only when TEST_DATABASE_URL is a postgres:// URL; each run uses a fresh schema.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, killAll, ROOT, run, ServerProcess } from '../support/processes.js';
import { until } from '../support/wait.js';
import { Receiver } from '../webhooks/support.js';

const BASE_URL = process.env.TEST_DATABASE_URL ?? '';
const ON_POSTGRES = /^postgres(ql)?:\/\//.test(BASE_URL);

async function api(base: string, method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text), headers: response.headers };
}

describe.skipIf(!ON_POSTGRES)('webhook replays across two processes on PostgreSQL', () => {
  const schema = `mpw_${randomBytes(8).toString('hex')}`;
  const receiver = new Receiver();
  let admin: pg.Client;
  let A: string;
  let B: string;
  let key: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    await receiver.start();
    admin = new pg.Client({ connectionString: BASE_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    const url = new URL(BASE_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    const env = cleanEnv({
      DATABASE_URL: url.toString(),
      PORT: '0',
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_MINUTE: '100000',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '0,1,1,1,1',
    });
    servers.push(new ServerProcess(env, ROOT));
    A = await servers[0]!.listening();
    servers.push(new ServerProcess(env, ROOT));
    B = await servers[1]!.listening();
    const created = await run(process.execPath, [CLI, 'accounts', 'create', '--name', 'Replay test', '--json'], { env });
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout.trim().split('\n').at(-1) as string).apiKey.key;
  }, 60_000);

  afterAll(async () => {
    await killAll();
    await receiver.close();
    if (admin) {
      await admin.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
      await admin.end();
    }
  }, 30_000);

  it('a replay of 300 events is sent once each, by both dispatchers together; one key asked of both queues once', async () => {
    const hook = await api(A, 'POST', '/api/v1/webhooks', key, { name: 'replayed', url: receiver.url('/ok?replay'), events: ['custom.*'] });
    expect(hook.status).toBe(201);
    const batch = await api(A, 'POST', '/api/v1/batch', key, {
      operations: Array.from({ length: 300 }, (_, index) => ({ op: 'publish', type: 'custom.replayed', data: { index } })),
    });
    expect(batch.status).toBe(200);
    const onPath = () => receiver.on('/ok?replay');
    await until(() => onPath().length === 300, 'the live deliveries', 30_000);

    // Several attempts at once would show a double claim: every replayed event arrives once.
    const headers = { 'idempotency-key': 'replay-everything-once' };
    const [fromA, fromB] = await Promise.all([
      api(A, 'POST', `/api/v1/webhooks/${hook.json.id}/replay`, key, { after: 0 }, headers),
      api(B, 'POST', `/api/v1/webhooks/${hook.json.id}/replay`, key, { after: 0 }, headers),
    ]);
    // One ran; the other got its answer replayed, or 409 while the first was running.
    const statuses = [fromA.status, fromB.status].sort();
    expect([
      [202, 202],
      [202, 409],
    ]).toContainEqual(statuses);
    const ran = fromA.status === 202 ? fromA : fromB;
    expect(ran.json).toEqual({ queued: 300, skipped: 0 });
    if (statuses[1] === 202) expect(fromA.json).toEqual(fromB.json);

    await until(() => onPath().length === 600, 'the replayed deliveries', 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const replayed = onPath().filter((entry) => entry.headers['x-service-replay'] === 'true');
    expect(onPath()).toHaveLength(600);
    expect(replayed).toHaveLength(300);
    const eventIds = replayed.map((entry) => Number(entry.headers['x-service-event-id'])).sort((a, b) => a - b);
    expect(eventIds).toEqual(Array.from({ length: 300 }, (_, index) => index + 1));
    expect(new Set(replayed.map((entry) => entry.headers['x-service-delivery-id'])).size).toBe(300);
  }, 90_000);

  it('no server exited or logged an error', () => {
    for (const server of servers) {
      expect(server.child.exitCode, server.output).toBeNull();
      const errors = server.logLines().filter((line) => typeof line.level === 'number' && line.level >= 50);
      expect(errors, server.stdout).toEqual([]);
    }
  });
});
