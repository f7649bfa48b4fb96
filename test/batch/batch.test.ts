// POST /api/v1/batch (api-decisions §12) through the HTTP server, on the backend the suite runs on:
// all or nothing, one event per operation with consecutive ids, refusals that name the operation,
// each operation's scope, and a batch's weight against the rate limit. A generated run compares
// random batches with what the same operations do one request at a time.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestApp, type TestAccount, type TestResponse } from '../support/app.js';

type Json = Record<string, unknown>;
interface ErrorBody {
  error: { code: string; message: string; details?: Array<{ index?: number; path: string; message: string }> };
}

let app: TestApp;

beforeAll(async () => {
  app = await TestApp.start();
  await app.listenForRequests();
});

afterAll(async () => app?.close());

const batch = (caller: TestAccount, operations: unknown[], headers?: Record<string, string>): Promise<TestResponse> =>
  app.request({ method: 'POST', url: '/api/v1/batch', key: caller.key, body: { operations }, headers });

async function newestEventId(caller: TestAccount): Promise<number> {
  // A filter nothing matches: the cursor is then the newest event id (api-decisions §7).
  const page = await app.request({ method: 'GET', url: '/api/v1/events?type=custom.none&limit=1', key: caller.key });
  return (page.json as { cursor: number }).cursor;
}

async function resourceCount(caller: TestAccount): Promise<number> {
  const list = await app.request({ method: 'GET', url: '/api/v1/resources?limit=1', key: caller.key });
  return (list.json as { total: number }).total;
}

async function create(caller: TestAccount, name: string, state = 1): Promise<Json> {
  const created = await app.request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name, type: 'sensor', state } });
  expect(created.status, created.body).toBe(201);
  return created.json as Json;
}

describe('a batch that succeeds', () => {
  it('writes every operation in order, one event each with consecutive ids, and answers each', async () => {
    const caller = await app.account();
    const existing = await create(caller, 'kitchen', 20);
    const doomed = await create(caller, 'old');
    const before = await newestEventId(caller);
    const response = await batch(caller, [
      { op: 'create', name: ' hall ', type: 'switch', state: false, tags: ['a'] },
      { op: 'update', id: existing.id, ifMatch: 1, state: 21 },
      { op: 'update', id: existing.id, state: 22, attributes: { unit: '°C' } },
      { op: 'publish', type: 'custom.door', data: { open: true } },
      { op: 'delete', id: doomed.id, ifMatch: 1 },
    ]);
    expect(response.status, response.body).toBe(200);
    const { results, cursor } = response.json as { results: Json[]; cursor: number };
    expect(cursor).toBe(before + 5);
    expect(results.map((result) => [result.op, result.status])).toEqual([
      ['create', 201],
      ['update', 200],
      ['update', 200],
      ['publish', 201],
      ['delete', 204],
    ]);
    expect(results[0]!.resource).toMatchObject({ name: 'hall', type: 'switch', state: false, tags: ['a'], version: 1 });
    expect(results[2]!.resource).toMatchObject({ id: existing.id, state: 22, version: 3, attributes: { unit: '°C' } });
    expect(results[3]!.event).toMatchObject({ id: before + 4, type: 'custom.door', data: { open: true } });
    expect(Object.keys(results[4]!)).toEqual(['op', 'status']);

    const page = await app.request({ method: 'GET', url: `/api/v1/events?after=${before}`, key: caller.key });
    const events = (page.json as { data: Json[] }).data;
    expect(events.map((event) => [event.id, event.type])).toEqual([
      [before + 1, 'resource.created'],
      [before + 2, 'resource.updated'],
      [before + 3, 'resource.updated'],
      [before + 4, 'custom.door'],
      [before + 5, 'resource.deleted'],
    ]);
    const read = await app.request({ method: 'GET', url: `/api/v1/resources/${existing.id as string}`, key: caller.key });
    expect(read.json).toEqual(results[2]!.resource);
    expect(read.headers.etag).toBe('"3"');
    expect((await app.request({ method: 'GET', url: `/api/v1/resources/${doomed.id as string}`, key: caller.key })).status).toBe(404);
  });

  it('takes 1,000 operations, and counts one request per 100 of them against the rate limit', async () => {
    const caller = await app.account();
    const first = await batch(caller, [{ op: 'publish', type: 'custom.tick', data: {} }]);
    const remaining = Number(first.headers['ratelimit-remaining']);
    const operations = Array.from({ length: 1000 }, (_, index) => ({ op: 'create', name: `sensor ${index}`, type: 'sensor', state: index }));
    const response = await batch(caller, operations);
    expect(response.status, response.body.slice(0, 300)).toBe(200);
    expect(Number(response.headers['ratelimit-remaining'])).toBe(remaining - 10);
    expect((response.json as { cursor: number }).cursor).toBe(1001);
    expect(await resourceCount(caller)).toBe(1000);
    const small = await batch(
      caller,
      operations.slice(0, 101).map((operation) => ({ ...operation, name: 'again' })),
    );
    // 10, the count's GET, then 2 for 101 operations.
    expect(Number(small.headers['ratelimit-remaining'])).toBe(remaining - 13);
  });

  it('creates 1,000 resources with 20 tags each in one batch: each tag, type and the account counted, and listed by tag in order', async () => {
    const caller = await app.account();
    // 20,000 tags, 19,000 of them each on one resource and one on every fifth: the counts and tag rows of one run of creations.
    const operations = Array.from({ length: 1000 }, (_, index) => ({
      op: 'create',
      name: `tagged ${index}`,
      type: index % 2 === 0 ? 'sensor' : 'switch',
      state: index % 2 === 0 ? index : true,
      tags: [index % 5 === 0 ? 'fifth' : `own-${index}-0`, ...Array.from({ length: 19 }, (_, tag) => `own-${index}-${tag + 1}`)],
    }));
    const response = await batch(caller, operations);
    expect(response.status, response.body.slice(0, 300)).toBe(200);
    const list = async (query: string) =>
      (await app.request({ method: 'GET', url: `/api/v1/resources?${query}`, key: caller.key })).json as {
        data: Array<{ name: string }>;
        total: number;
      };
    expect((await list('limit=1')).total).toBe(1000);
    expect((await list('type=switch&limit=1')).total).toBe(500);
    const fifth = await list('tag=fifth&limit=500');
    expect(fifth.total).toBe(200);
    expect(fifth.data.map((resource) => resource.name)).toEqual(Array.from({ length: 200 }, (_, index) => `tagged ${index * 5}`));
    expect((await list('tag=own-999-19')).data.map((resource) => resource.name)).toEqual(['tagged 999']);
  });
});

describe('a batch that fails writes nothing', () => {
  const refused = async (caller: TestAccount, operations: unknown[], status: number) => {
    const before = await newestEventId(caller);
    const count = await resourceCount(caller);
    const response = await batch(caller, operations);
    expect(response.status, response.body).toBe(status);
    expect(await newestEventId(caller)).toBe(before);
    expect(await resourceCount(caller)).toBe(count);
    return (response.json as ErrorBody).error;
  };

  it('answers the status of the first failing operation and names it by index', async () => {
    const caller = await app.account();
    const kept = await create(caller, 'kept');
    const missing = await refused(
      caller,
      [
        { op: 'create', name: 'new', type: 'sensor', state: 1 },
        { op: 'update', id: kept.id, state: 5 },
        { op: 'update', id: 'res_missing', state: 2 },
        { op: 'delete', id: kept.id, ifMatch: 9 },
      ],
      404,
    );
    expect(missing.code).toBe('not_found');
    expect(missing.details).toEqual([{ index: 2, path: '/operations/2', message: 'Resource not found' }]);

    const stale = await refused(
      caller,
      [
        { op: 'publish', type: 'custom.x', data: {} },
        { op: 'delete', id: kept.id, ifMatch: 9 },
      ],
      412,
    );
    expect(stale.code).toBe('precondition_failed');
    expect(stale.details).toEqual([{ index: 1, path: '/operations/1/version', message: 'current version is 1', currentVersion: 1 }]);

    // A state that the resource's type refuses, known only once the resource is read.
    const wrongState = await refused(caller, [{ op: 'update', id: kept.id, state: true }], 400);
    expect(wrongState.details).toEqual([{ index: 0, path: '/operations/0/state', message: 'must be a number or a string for a sensor' }]);
    const read = await app.request({ method: 'GET', url: `/api/v1/resources/${kept.id as string}`, key: caller.key });
    expect(read.json).toMatchObject({ version: 1, state: 1 });
  });

  it('lists every invalid operation, at most ten, before anything runs', async () => {
    const caller = await app.account();
    const operations: unknown[] = [{ op: 'create', name: 'fine', type: 'sensor', state: 1 }];
    for (let index = 0; index < 14; index++) operations.push({ op: 'create', name: 'bad', type: 'sensor', state: [index] });
    const error = await refused(caller, operations, 400);
    expect(error.code).toBe('invalid_request');
    expect(new Set(error.details!.map((detail) => detail.index))).toEqual(new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    for (const detail of error.details!) expect(detail.path.startsWith(`/operations/${detail.index}/`)).toBe(true);

    const words = await refused(
      caller,
      [
        { op: 'rename', id: 'x' },
        { id: 'x' },
        { op: 'update', id: 'x' },
        { op: 'create', name: '   ', type: 'text', state: 'x' },
        { op: 'publish', type: 'event', data: {} },
      ],
      400,
    );
    expect(words.details).toEqual([
      { index: 0, path: '/operations/0/op', message: 'must be one of create, update, delete, publish' },
      { index: 1, path: '/operations/1/op', message: 'is required: one of create, update, delete, publish' },
      { index: 4, path: '/operations/4/type', message: expect.stringContaining('custom.') },
    ]);
    // Past the schema, the rules each operation's own route applies.
    const rules = await refused(
      caller,
      [
        { op: 'update', id: 'x' },
        { op: 'create', name: '   ', type: 'text', state: 'x' },
        { op: 'update', id: 'x', type: 'switch', state: true },
        { op: 'publish', type: 'custom.big', data: { text: 'x'.repeat(70_000) } },
      ],
      400,
    );
    expect(rules.details!.map((detail) => [detail.index, detail.path])).toEqual([
      [0, '/operations/0'],
      [1, '/operations/1/name'],
      [2, '/operations/2/type'],
      [3, '/operations/3/data'],
    ]);
  });

  it('refuses no operations, more than 1,000, and a body that is not a batch', async () => {
    const caller = await app.account();
    expect((await refused(caller, [], 400)).details).toEqual([{ path: '/operations', message: 'must list 1-1000 items' }]);
    const many = Array.from({ length: 1001 }, () => ({ op: 'publish', type: 'custom.x', data: {} }));
    expect((await refused(caller, many, 400)).details).toEqual([{ path: '/operations', message: 'must list 1-1000 items' }]);
    const other = await app.request({ method: 'POST', url: '/api/v1/batch', key: caller.key, body: { ops: [] } });
    expect(other.status).toBe(400);
  });

  it('takes a body of up to 4 MiB (1,000 events of 4 KiB), and refuses a larger one with 413, writing nothing', async () => {
    const caller = await app.account();
    const before = await newestEventId(caller);
    const operations = (size: number) =>
      Array.from({ length: 1000 }, (_, index) => ({ op: 'publish', type: 'custom.big', data: { index, text: 'x'.repeat(size) } }));
    const body = (size: number) => Buffer.byteLength(JSON.stringify({ operations: operations(size) }));
    // The largest text that keeps the body within 4 MiB, and one byte a text more.
    const size = 4000 + Math.floor((4 * 1024 * 1024 - body(4000)) / 1000);
    expect(body(size)).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect(body(size + 1)).toBeGreaterThan(4 * 1024 * 1024);
    const fits = await batch(caller, operations(size));
    expect(fits.status, fits.body.slice(0, 300)).toBe(200);
    expect(await newestEventId(caller)).toBe(before + 1000);
    const tooLarge = await batch(caller, operations(size + 1));
    expect(tooLarge.status).toBe(413);
    expect((tooLarge.json as ErrorBody).error.code).toBe('payload_too_large');
    expect(await newestEventId(caller)).toBe(before + 1000);
  });

  it('needs a credential', async () => {
    const anonymous = await app.request({ method: 'POST', url: '/api/v1/batch', body: { operations: [{ op: 'publish', type: 'custom.x', data: {} }] } });
    expect(anonymous.status).toBe(401);
    expect((anonymous.json as ErrorBody).error.code).toBe('unauthorized');
  });

  it('needs the scope of every operation before any runs', async () => {
    const writer = await app.account(['resources:read', 'resources:write', 'events:read']);
    const error = await refused(
      writer,
      [
        { op: 'create', name: 'a', type: 'sensor', state: 1 },
        { op: 'publish', type: 'custom.x', data: {} },
      ],
      403,
    );
    expect(error.code).toBe('insufficient_scope');
    const publisher = await app.account(['events:write', 'events:read', 'resources:read']);
    expect((await refused(publisher, [{ op: 'delete', id: 'res_x' }], 403)).code).toBe('insufficient_scope');
    expect((await batch(publisher, [{ op: 'publish', type: 'custom.x', data: {} }])).status).toBe(200);
  });
});

describe('a batch does what its operations do one at a time', () => {
  type Step =
    | { op: 'create'; state: number }
    | { op: 'update'; target: number; state: number; guard: boolean }
    | { op: 'delete'; target: number }
    | { op: 'publish' };
  const step = fc.oneof(
    fc.record({ op: fc.constant('create' as const), state: fc.integer({ min: 0, max: 99 }) }),
    fc.record({ op: fc.constant('update' as const), target: fc.nat(4), state: fc.integer({ min: 0, max: 99 }), guard: fc.boolean() }),
    fc.record({ op: fc.constant('delete' as const), target: fc.nat(4) }),
    fc.record({ op: fc.constant('publish' as const) }),
  );

  it('the same final resources and event types, or nothing written when one of them fails', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const [one, many] = [await app.account(), await app.account()];
        const ids: Array<[string, string]> = [];
        for (let index = 0; index < 3; index++) ids.push([(await create(one, `r${index}`)).id as string, (await create(many, `r${index}`)).id as string]);
        const operation = (s: Step, side: 0 | 1, versions: Map<string, number>): Json => {
          const id = 'target' in s ? (ids[s.target]?.[side] ?? 'res_none') : '';
          switch (s.op) {
            case 'create':
              return { op: 'create', name: `c${s.state}`, type: 'sensor', state: s.state };
            case 'update':
              return { op: 'update', id, state: s.state, ...(s.guard ? { ifMatch: versions.get(id) ?? 1 } : {}) };
            case 'delete':
              return { op: 'delete', id };
            case 'publish':
              return { op: 'publish', type: 'custom.step', data: {} };
          }
        };
        // One at a time, stopping at the first refusal: what the batch must do in full, or not at all.
        let failedAt: number | undefined;
        const versions = new Map<string, number>();
        const sentOne: Json[] = [];
        for (const [index, s] of steps.entries()) {
          const body = operation(s, 0, versions);
          sentOne.push(body);
          if (failedAt !== undefined) continue;
          const { op, id, ifMatch, ...fields } = body as Json & { id?: string; ifMatch?: number };
          const response =
            op === 'create'
              ? await app.request({ method: 'POST', url: '/api/v1/resources', key: one.key, body: fields })
              : op === 'publish'
                ? await app.request({ method: 'POST', url: '/api/v1/events', key: one.key, body: fields })
                : await app.request({
                    method: op === 'update' ? 'PATCH' : 'DELETE',
                    url: `/api/v1/resources/${id}`,
                    key: one.key,
                    body: op === 'update' ? fields : undefined,
                    headers: ifMatch === undefined ? {} : { 'if-match': `"${ifMatch}"` },
                  });
          if (response.status >= 300) failedAt = index;
          else if (op === 'update') versions.set(id!, (response.json as { version: number }).version);
        }
        // The same operations under the other account's ids.
        const otherId = new Map(ids);
        const sent = await batch(
          many,
          sentOne.map((body) => (typeof body.id === 'string' ? { ...body, id: otherId.get(body.id) ?? body.id } : body)),
        );
        if (failedAt === undefined) {
          expect(sent.status, sent.body).toBe(200);
        } else {
          expect(sent.status).toBeGreaterThanOrEqual(400);
          expect((sent.json as ErrorBody).error.details?.[0]?.index).toBe(failedAt);
          expect(await newestEventId(many)).toBe(3);
          return;
        }
        const types = async (caller: TestAccount) =>
          ((await app.request({ method: 'GET', url: '/api/v1/events?after=3', key: caller.key })).json as { data: Json[] }).data.map((event) => event.type);
        expect(await types(many)).toEqual(await types(one));
        const states = async (caller: TestAccount) =>
          ((await app.request({ method: 'GET', url: '/api/v1/resources?limit=500', key: caller.key })).json as { data: Json[] }).data.map((r) => [
            r.name,
            r.state,
            r.version,
          ]);
        expect(await states(many)).toEqual(await states(one));
      }),
      { numRuns: 15 },
    );
  });
});
