// At-least-once delivery across a crash (spec "Durable delivery", docs/decisions.md: "Webhooks"): a real
// `devdata serve` process is SIGKILLed while deliveries are in flight to a slow loopback receiver;
// a restarted server on the same database delivers every event, each under one stable delivery id.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ON_POSTGRES, testDatabase } from '../support/app.js';
import { CLI, cleanEnv, killAll, run, ServerProcess } from '../support/processes.js';
import { until } from '../support/wait.js';
import { Receiver } from './support.js';

const EVENTS = 40;

async function api(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
}

describe('a server killed mid-delivery', () => {
  const receiver = new Receiver();
  let workDir: string;
  let database: { url: string; drop: () => Promise<void> };
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    receiver.slowMs = 150;
    await receiver.start();
    workDir = mkdtempSync(join(tmpdir(), 'devdata-webhook-crash-'));
    database = ON_POSTGRES ? await testDatabase() : { url: `sqlite:${join(workDir, 'devdata.db')}`, drop: async () => {} };
    env = cleanEnv({
      DATABASE_URL: database.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.2,0.2,0.2',
      WEBHOOK_TIMEOUT_MS: '1000',
      // A killed process's claims are taken over 2 s later.
      WEBHOOK_LEASE_SECONDS: '2',
      SECRETS_KEY: Buffer.alloc(32, 9).toString('base64'),
    });
  });

  afterAll(async () => {
    await killAll();
    await receiver.close();
    await database?.drop();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('finishes every pending delivery after a restart, each event under one delivery id', async () => {
    const created = await run(process.execPath, [CLI, 'accounts', 'create', '--name', 'Crash', '--json'], { env });
    expect(created.code, created.stderr).toBe(0);
    const { apiKey } = JSON.parse(created.stdout) as { apiKey: { key: string } };

    const first = new ServerProcess(env, workDir);
    const base = await first.listening();
    // Paused while the events are written, so the kill finds most of them still to deliver.
    const hook = await api(base, apiKey.key, 'POST', '/api/v1/webhooks', { name: 'slow', url: receiver.url('/slow'), events: ['custom.*'], enabled: false });
    expect(hook.status).toBe(201);
    const published: number[] = [];
    for (let index = 0; index < EVENTS; index++) {
      const event = await api(base, apiKey.key, 'POST', '/api/v1/events', { type: 'custom.crash', data: { index } });
      expect(event.status).toBe(201);
      published.push(event.json.id);
    }
    expect((await api(base, apiKey.key, 'PATCH', `/api/v1/webhooks/${hook.json.id}`, { enabled: true })).status).toBe(200);
    const eventIds = () => new Set(receiver.received.map((entry) => Number(entry.headers['x-service-event-id'])));
    await until(() => eventIds().size >= 4, 'some deliveries before the crash');
    first.child.kill('SIGKILL');
    await first.exitWithin();
    const beforeRestart = eventIds().size;
    expect(beforeRestart).toBeLessThan(EVENTS);

    const second = new ServerProcess(env, workDir);
    const restarted = await second.listening();
    await until(() => eventIds().size === EVENTS, `all ${EVENTS} events after the restart (${beforeRestart} before it)`, 30_000);
    expect([...eventIds()].sort((a, b) => a - b)).toEqual(published);

    // At least once: an event may arrive twice, but always under the same delivery id, and no two
    // events share one.
    const deliveryIdOf = new Map<number, Set<string>>();
    for (const entry of receiver.received) {
      const eventId = Number(entry.headers['x-service-event-id']);
      deliveryIdOf.set(eventId, (deliveryIdOf.get(eventId) ?? new Set()).add(String(entry.headers['x-service-delivery-id'])));
    }
    for (const [eventId, ids] of deliveryIdOf) expect(ids.size, `delivery ids of event ${eventId}`).toBe(1);
    expect(new Set([...deliveryIdOf.values()].map((ids) => [...ids][0])).size).toBe(EVENTS);

    await until(async () => {
      const history = await api(restarted, apiKey.key, 'GET', `/api/v1/webhooks/${hook.json.id}/deliveries`);
      return history.json.data.length === EVENTS && history.json.data.every((delivery: { status: string }) => delivery.status === 'succeeded');
    }, 'every delivery recorded as succeeded');
    second.child.kill('SIGTERM');
    expect((await second.exitWithin()).code).toBe(0);
  }, 90_000);
});
