// Idempotency-Key (api-decisions §11) on every POST, PATCH and DELETE under /api/v1, through the
// HTTP server on the suite's backend: for each write operation the document lists, generated keys
// show the same request twice doing its work once and answering the same bytes, and the same key
// with another request answering 422. Then what is stored and what is not, sealed secrets, the
// 24 hours, and a key in use.
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, TestApp, type TestAccount, type TestResponse } from '../support/app.js';
import { servedDocument } from '../fuzz/requests.js';

type Json = Record<string, any>;

let app: TestApp;
/** Where the app listens, for a raw socket. */
let origin: URL;
const clock = new ManualClock(new Date('2026-11-27T10:00:00.000Z'));

beforeAll(async () => {
  app = await TestApp.start({ clock, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  origin = new URL(await app.listenForRequests());
});

afterAll(async () => app?.close());

const keyed = (caller: TestAccount | undefined, method: string, url: string, body: unknown, key: string, headers: Record<string, string> = {}) =>
  app.request({ method, url, key: caller?.key, body, headers: { 'idempotency-key': key, ...headers } });

async function created(caller: TestAccount, url: string, body: unknown): Promise<Json> {
  const response = await app.request({ method: 'POST', url, key: caller.key, body });
  expect(response.status, response.body).toBeLessThan(300);
  return response.json as Json;
}

/** What an account has written: its newest event, its audit records and its webhooks' deliveries, which every effect moves. */
async function footprint(caller: TestAccount): Promise<string> {
  const events = await app.request({ method: 'GET', url: '/api/v1/events?type=custom.none&limit=1', key: caller.key });
  const audit = await app.request({ method: 'GET', url: '/api/v1/audit?limit=100', key: caller.key });
  const webhooks = await app.request({ method: 'GET', url: '/api/v1/webhooks', key: caller.key });
  const deliveries = [];
  for (const webhook of (webhooks.json as Json).data) {
    const page = await app.request({ method: 'GET', url: `/api/v1/webhooks/${webhook.id}/deliveries`, key: caller.key });
    deliveries.push((page.json as Json).data.map((delivery: Json) => delivery.id));
  }
  return JSON.stringify([(events.json as Json).cursor, (audit.json as Json).data.map((record: Json) => record.id), deliveries]);
}

interface WriteCase {
  method: string;
  url: string;
  body?: unknown;
  /** Another body for the same operation, which reuses the key wrongly. */
  other?: unknown;
}

/** A valid request of each write operation, made against fresh objects of the caller's account. */
const WRITES: Record<string, (caller: TestAccount) => Promise<WriteCase>> = {
  createResource: async () => ({
    method: 'POST',
    url: '/api/v1/resources',
    body: { name: 'r', type: 'sensor', state: 1 },
    other: { name: 'r', type: 'sensor', state: 2 },
  }),
  updateResource: async (caller) => {
    const { id } = await created(caller, '/api/v1/resources', { name: 'r', type: 'sensor', state: 1 });
    return { method: 'PATCH', url: `/api/v1/resources/${id}`, body: { state: 2 }, other: { state: 3 } };
  },
  deleteResource: async (caller) => {
    const { id } = await created(caller, '/api/v1/resources', { name: 'r', type: 'sensor', state: 1 });
    return { method: 'DELETE', url: `/api/v1/resources/${id}` };
  },
  backfillResourceHistory: async (caller) => {
    const { id, updatedAt } = await created(caller, '/api/v1/resources', { name: 'r', type: 'sensor', state: 1 });
    // A rerun would answer another body: the point it stored the first time is then replaced.
    const at = new Date(Date.parse(updatedAt) - 60_000).toISOString();
    return { method: 'POST', url: `/api/v1/resources/${id}/history`, body: { points: [{ at, state: 5 }] }, other: { points: [{ at, state: 6 }] } };
  },
  publishEvent: async () => ({
    method: 'POST',
    url: '/api/v1/events',
    body: { type: 'custom.x', data: { a: 1 } },
    other: { type: 'custom.x', data: { a: 2 } },
  }),
  batch: async () => ({
    method: 'POST',
    url: '/api/v1/batch',
    body: {
      operations: [
        { op: 'create', name: 'b', type: 'switch', state: true },
        { op: 'publish', type: 'custom.b', data: {} },
      ],
    },
    other: { operations: [{ op: 'publish', type: 'custom.b', data: {} }] },
  }),
  createApiKey: async () => ({
    method: 'POST',
    url: '/api/v1/keys',
    body: { name: 'k', scopes: ['resources:read'] },
    other: { name: 'k2', scopes: ['resources:read'] },
  }),
  renameApiKey: async (caller) => {
    const { id } = await created(caller, '/api/v1/keys', { name: 'k', scopes: ['resources:read'] });
    return { method: 'PATCH', url: `/api/v1/keys/${id}`, body: { name: 'renamed' }, other: { name: 'again' } };
  },
  revokeApiKey: async (caller) => {
    const { id } = await created(caller, '/api/v1/keys', { name: 'k', scopes: ['resources:read'] });
    return { method: 'DELETE', url: `/api/v1/keys/${id}` };
  },
  createWebhook: async () => ({
    method: 'POST',
    url: '/api/v1/webhooks',
    body: { name: 'w', url: 'http://127.0.0.1:9/hook', events: ['custom.*'], enabled: false },
    other: { name: 'w2', url: 'http://127.0.0.1:9/hook', events: ['custom.*'], enabled: false },
  }),
  updateWebhook: async (caller) => {
    const { id } = await created(caller, '/api/v1/webhooks', { name: 'w', url: 'http://127.0.0.1:9/hook', events: ['custom.*'], enabled: false });
    return { method: 'PATCH', url: `/api/v1/webhooks/${id}`, body: { name: 'renamed' }, other: { name: 'other' } };
  },
  deleteWebhook: async (caller) => {
    const { id } = await created(caller, '/api/v1/webhooks', { name: 'w', url: 'http://127.0.0.1:9/hook', events: ['custom.*'], enabled: false });
    return { method: 'DELETE', url: `/api/v1/webhooks/${id}` };
  },
  rotateWebhookSecret: async (caller) => {
    const { id } = await created(caller, '/api/v1/webhooks', { name: 'w', url: 'http://127.0.0.1:9/hook', events: ['custom.*'], enabled: false });
    return { method: 'POST', url: `/api/v1/webhooks/${id}/rotate-secret` };
  },
  retryWebhookDelivery: async (caller) => {
    // A delivery that does not exist: the 404 is stored and replayed like any answer a retry gets again.
    const { id } = await created(caller, '/api/v1/webhooks', { name: 'w', url: 'http://127.0.0.1:9/hook', events: ['custom.*'], enabled: false });
    return { method: 'POST', url: `/api/v1/webhooks/${id}/deliveries/dlv_none/retry` };
  },
  testWebhook: async (caller) => {
    const { id } = await created(caller, '/api/v1/webhooks', { name: 'w', url: 'http://127.0.0.1:9/hook', events: ['custom.*'], enabled: false });
    return { method: 'POST', url: `/api/v1/webhooks/${id}/test` };
  },
  replayWebhook: async (caller) => {
    const { id } = await created(caller, '/api/v1/webhooks', { name: 'w', url: 'http://127.0.0.1:9/hook', events: ['custom.*'], enabled: false });
    await created(caller, '/api/v1/events', { type: 'custom.replayed', data: {} });
    return { method: 'POST', url: `/api/v1/webhooks/${id}/replay`, body: { after: 0 }, other: { after: 0, until: 1 } };
  },
  recoverWebhook: async (caller) => {
    const { id } = await created(caller, '/api/v1/webhooks', { name: 'w', url: 'http://127.0.0.1:9/hook', events: ['custom.*'], enabled: false });
    return { method: 'POST', url: `/api/v1/webhooks/${id}/recover`, body: { since: '2026-01-01T00:00:00.000Z' }, other: { since: '2026-01-02T00:00:00.000Z' } };
  },
  createApp: async () => ({
    method: 'POST',
    url: '/api/v1/apps',
    body: { name: 'a', type: 'confidential', redirectUris: ['https://example.com/cb'], scopes: ['resources:read'] },
    other: { name: 'b', type: 'confidential', redirectUris: ['https://example.com/cb'], scopes: ['resources:read'] },
  }),
  updateApp: async (caller) => {
    const { id } = await created(caller, '/api/v1/apps', { name: 'a', type: 'public', redirectUris: ['https://example.com/cb'], scopes: ['resources:read'] });
    return { method: 'PATCH', url: `/api/v1/apps/${id}`, body: { name: 'renamed' }, other: { name: 'other' } };
  },
  deleteApp: async (caller) => {
    const { id } = await created(caller, '/api/v1/apps', { name: 'a', type: 'public', redirectUris: ['https://example.com/cb'], scopes: ['resources:read'] });
    return { method: 'DELETE', url: `/api/v1/apps/${id}` };
  },
  rotateAppSecret: async (caller) => {
    const { id } = await created(caller, '/api/v1/apps', {
      name: 'a',
      type: 'confidential',
      redirectUris: ['https://example.com/cb'],
      scopes: ['resources:read'],
    });
    return { method: 'POST', url: `/api/v1/apps/${id}/rotate-secret` };
  },
  createSchedule: async () => ({
    method: 'POST',
    url: '/api/v1/schedules',
    body: { name: 's', cron: '0 3 * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: {} } },
    other: { name: 's2', cron: '0 3 * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: {} } },
  }),
  updateSchedule: async (caller) => {
    const { id } = await created(caller, '/api/v1/schedules', {
      name: 's',
      cron: '0 3 * * *',
      action: { type: 'publish_event', eventType: 'custom.tick', data: {} },
    });
    return { method: 'PATCH', url: `/api/v1/schedules/${id}`, body: { name: 'renamed' }, other: { name: 'other' } };
  },
  deleteSchedule: async (caller) => {
    const { id } = await created(caller, '/api/v1/schedules', {
      name: 's',
      cron: '0 3 * * *',
      action: { type: 'publish_event', eventType: 'custom.tick', data: {} },
    });
    return { method: 'DELETE', url: `/api/v1/schedules/${id}` };
  },
  runSchedule: async (caller) => {
    const { id } = await created(caller, '/api/v1/schedules', {
      name: 's',
      cron: '0 3 * * *',
      action: { type: 'publish_event', eventType: 'custom.tick', data: {} },
    });
    return { method: 'POST', url: `/api/v1/schedules/${id}/run` };
  },
  echo: async () => ({ method: 'POST', url: '/api/v1/echo', body: { message: 'hello' }, other: { message: 'moon' } }),
};
/** Operations without an account's credential, tried separately below. */
const PUBLIC_WRITES = new Set(['signUp', 'logOut']);

const visibleKey = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code)), minLength: 1, maxLength: 255 });

describe('every write operation with an Idempotency-Key', () => {
  it('the document lists the header on each, and this test has a request for each', async () => {
    const document = (await servedDocument()) as Json;
    const keyedOperations: string[] = [];
    for (const [path, operations] of Object.entries(document.paths as Json)) {
      for (const [method, operation] of Object.entries(operations as Json)) {
        if (!['post', 'patch', 'delete'].includes(method) || !path.startsWith('/api/v1/')) continue;
        expect(
          (operation.parameters ?? []).map((parameter: Json) => parameter.name),
          operation.operationId,
        ).toContain('idempotency-key');
        expect(Object.keys(operation.responses), operation.operationId).toEqual(expect.arrayContaining(['409', '422']));
        keyedOperations.push(operation.operationId);
      }
    }
    expect(keyedOperations.filter((id) => !PUBLIC_WRITES.has(id)).sort()).toEqual(Object.keys(WRITES).sort());
  });

  it('runs once and answers the same bytes to a retry; another request with the key gets 422', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(WRITES)), visibleKey, async (operationId, key) => {
        const caller = await app.account();
        const write = await WRITES[operationId]!(caller);
        const first = await keyed(caller, write.method, write.url, write.body, key);
        expect(first.status, `${operationId}: ${first.body}`).toBe(operationId === 'retryWebhookDelivery' ? 404 : first.status < 300 ? first.status : 200);
        expect(first.headers['idempotent-replayed']).toBeUndefined();
        const after = await footprint(caller);
        const again = await keyed(caller, write.method, write.url, write.body, key);
        expect(again.status, operationId).toBe(first.status);
        expect(again.body, operationId).toBe(first.body);
        expect(again.headers['idempotent-replayed']).toBe('true');
        expect(again.headers['content-type']).toBe(first.headers['content-type']);
        expect(again.headers.etag).toBe(first.headers.etag);
        expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
        expect(await footprint(caller), `${operationId} did its work again`).toBe(after);

        const reuse =
          write.other !== undefined
            ? await keyed(caller, write.method, write.url, write.other, key)
            : await keyed(caller, 'POST', '/api/v1/events', { type: 'custom.y', data: {} }, key);
        expect(reuse.status, operationId).toBe(422);
        expect((reuse.json as Json).error.code).toBe('idempotency_key_reused');
        expect(await footprint(caller)).toBe(after);
        // The key is the account's: another account's request with it runs.
        const stranger = await app.account();
        const theirs = await WRITES[operationId]!(stranger);
        expect((await keyed(stranger, theirs.method, theirs.url, theirs.body, key)).headers['idempotent-replayed']).toBeUndefined();
      }),
      { numRuns: 60 },
    );
  });
});

describe('what is stored', () => {
  it('keeps a secret of a stored answer sealed, and a replay shows it again', async () => {
    const caller = await app.account();
    const first = await keyed(caller, 'POST', '/api/v1/keys', { name: 'shown twice', scopes: ['resources:read'] }, 'secret-1');
    expect(first.status).toBe(201);
    const secret = (first.json as Json).key as string;
    const rows = await app.context.storage.db.selectFrom('idempotent_requests').selectAll().where('key', '=', 'secret-1').execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.sealed).toBe(1);
    expect(JSON.stringify(rows[0])).not.toContain(secret.slice(4));
    const again = await keyed(caller, 'POST', '/api/v1/keys', { name: 'shown twice', scopes: ['resources:read'] }, 'secret-1');
    expect((again.json as Json).key).toBe(secret);
    // A resource's answer holds no secret: stored as it is.
    await keyed(caller, 'POST', '/api/v1/resources', { name: 'plain', type: 'text', state: 'x' }, 'plain-1');
    const plain = await app.context.storage.db.selectFrom('idempotent_requests').selectAll().where('key', '=', 'plain-1').executeTakeFirstOrThrow();
    expect(plain.sealed).toBe(0);
  });

  it('does not store a refusal a corrected retry would not get (400), so the key may be used again', async () => {
    const caller = await app.account();
    const wrong = await keyed(caller, 'POST', '/api/v1/resources', { name: 'x', type: 'sensor', state: true }, 'fix-me');
    expect(wrong.status).toBe(400);
    const right = await keyed(caller, 'POST', '/api/v1/resources', { name: 'x', type: 'sensor', state: 1 }, 'fix-me');
    expect(right.status).toBe(201);
    expect(right.headers['idempotent-replayed']).toBeUndefined();
  });

  it('replays a 404 with its request id, and refuses malformed keys', async () => {
    const caller = await app.account();
    const missing = await keyed(caller, 'PATCH', '/api/v1/resources/res_none', { state: 1 }, 'gone');
    expect(missing.status).toBe(404);
    const replayed = await keyed(caller, 'PATCH', '/api/v1/resources/res_none', { state: 1 }, 'gone');
    expect(replayed.body).toBe(missing.body);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    for (const bad of ['', 'with space', 'x'.repeat(256), 'ünicode']) {
      const refused = await app.request({
        method: 'POST',
        url: '/api/v1/resources',
        key: caller.key,
        body: { name: 'x', type: 'text', state: 'x' },
        headers: { 'idempotency-key': bad },
      });
      expect(refused.status, JSON.stringify(bad)).toBe(400);
      expect((refused.json as Json).error.details[0]).toMatchObject({
        path: '/idempotency-key',
        message: expect.stringContaining('1-255 visible ASCII characters'),
      });
    }
  });

  it('keeps an answer 24 hours, then runs the key again, and the sweep deletes it', async () => {
    const caller = await app.account();
    const first = await keyed(caller, 'POST', '/api/v1/events', { type: 'custom.day', data: {} }, 'day-old');
    clock.advance(24 * 60 * 60 * 1000 - 1000);
    expect((await keyed(caller, 'POST', '/api/v1/events', { type: 'custom.day', data: {} }, 'day-old')).body).toBe(first.body);
    const kept = await keyed(caller, 'POST', '/api/v1/events', { type: 'custom.other', data: {} }, 'to-sweep');
    expect(kept.status).toBe(201);
    clock.advance(2000);
    const later = await keyed(caller, 'POST', '/api/v1/events', { type: 'custom.day', data: {} }, 'day-old');
    expect(later.status).toBe(201);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    expect((later.json as Json).id).toBe((first.json as Json).id + 2);
    clock.advance(24 * 60 * 60 * 1000 + 1000);
    expect(await app.context.idempotentRequests.sweep()).toBeGreaterThanOrEqual(2);
    const left = await app.context.storage.db.selectFrom('idempotent_requests').select('key').where('key', 'in', ['day-old', 'to-sweep']).execute();
    expect(left).toEqual([]);
  });
});

describe('a key in use', () => {
  it('answers 409 with Retry-After while the first request runs, then replays it', async () => {
    const caller = await app.account();
    const operations = Array.from({ length: 1000 }, (_, index) => ({ op: 'create', name: `n${index}`, type: 'sensor', state: index }));
    const send = (): Promise<TestResponse> => keyed(caller, 'POST', '/api/v1/batch', { operations }, 'slow-batch');
    // Sent again and again while the first runs (a thousand creates take a while); whichever of
    // them reaches the server first runs, the others get 409 while it does, then its answer.
    const answers: Array<Promise<TestResponse>> = [send()];
    let later: TestResponse;
    do {
      const next = send();
      answers.push(next);
      later = await next;
    } while (later.status !== 409 && later.headers['idempotent-replayed'] === undefined);
    const settled = await Promise.all(answers);
    const fresh = settled.filter((answer) => answer.status === 200 && answer.headers['idempotent-replayed'] === undefined);
    expect(fresh).toHaveLength(1);
    const answered = fresh[0]!;
    for (const other of settled.filter((answer) => answer !== answered)) {
      if (other.status === 409) {
        expect((other.json as Json).error.code).toBe('idempotency_key_in_use');
        expect(other.headers['retry-after']).toBe('1');
      } else {
        expect(other.body).toBe(answered.body);
      }
    }
    const replay = await send();
    expect(replay.body).toBe(answered.body);
    expect((await app.request({ method: 'GET', url: '/api/v1/resources?limit=1', key: caller.key })).json).toMatchObject({ total: 1000 });
  });
});

describe('a caller that hangs up', () => {
  it('lets go of its key however early it hangs up: a retry gets the answer, or runs', async () => {
    const caller = await app.account();
    const body = JSON.stringify({ operations: Array.from({ length: 500 }, (_, index) => ({ op: 'create', name: `h${index}`, type: 'text', state: 'x' })) });
    for (const [round, afterMs] of [0, 1, 3, 8, 20].entries()) {
      const key = `hang-up-${round}`;
      await new Promise<void>((resolve) => {
        const socket = connect(Number(origin.port), origin.hostname, () => {
          socket.write(
            `POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${caller.key}\r\nContent-Type: application/json\r\nIdempotency-Key: ${key}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          );
          setTimeout(() => socket.destroy(), afterMs);
        });
        socket.on('error', () => {});
        socket.on('close', () => resolve());
      });
      let answer = await keyed(caller, 'POST', '/api/v1/batch', JSON.parse(body), key);
      for (let tries = 0; answer.status === 409 && tries < 50; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await keyed(caller, 'POST', '/api/v1/batch', JSON.parse(body), key);
      }
      expect(answer.status, `${afterMs} ms: ${answer.body.slice(0, 200)}`).toBe(200);
    }
    // Each batch once, whether its first request was cut before it ran or after.
    expect(((await app.request({ method: 'GET', url: '/api/v1/resources?limit=1', key: caller.key })).json as Json).total).toBe(2500);
  });
});

describe('signup with an Idempotency-Key', () => {
  it('makes one account, and a replay sets the same session cookie again', async () => {
    const signupApp = await TestApp.start({ env: { SIGNUP_CAPACITY: '10' } });
    try {
      const body = { name: 'Ada', email: 'ada@example.com' };
      const first = await signupApp.request({ method: 'POST', url: '/api/v1/developer/signup', body, headers: { 'idempotency-key': 'signup-1' } });
      expect(first.status, first.body).toBe(201);
      const again = await signupApp.request({ method: 'POST', url: '/api/v1/developer/signup', body, headers: { 'idempotency-key': 'signup-1' } });
      expect(again.status).toBe(201);
      expect(again.body).toBe(first.body);
      expect(again.headers['set-cookie']).toBe(first.headers['set-cookie']);
      const row = await signupApp.context.storage.db.selectFrom('idempotent_requests').selectAll().where('key', '=', 'signup-1').executeTakeFirstOrThrow();
      expect(row.sealed).toBe(1);
      expect(row.scope).toMatch(/^ip:/);
    } finally {
      await signupApp.close();
    }
  });
});
