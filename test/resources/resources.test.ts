// Resources (docs/decisions.md: "HTTP contract", "Resources", "Events and streams"; specification "Resource", "States and transitions", "Resources"):
// creation and its type/state rules, field limits, partial updates with versions and ETags,
// optimistic concurrency, the events every change writes, the list, scopes and account isolation.
import { describe, expect, it } from 'vitest';
import { useTestApp, type TestAccount, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RESOURCE_ID = /^res_[A-Za-z0-9_-]{22,}$/;

/** A 400 invalid_request whose details name `path` (or, with `prefix`, a path below it). */
function expectInvalid(response: TestResponse, path: string, options: { prefix?: boolean } = {}): void {
  expectError(response, 400, 'invalid_request');
  const details: { path: string; message: string }[] = response.json.error.details ?? [];
  expect(details.length, response.body).toBeGreaterThan(0);
  for (const detail of details) expect(detail).toMatchObject({ path: expect.any(String), message: expect.any(String) });
  const paths = details.map((detail) => detail.path);
  if (options.prefix)
    expect(
      paths.some((p) => p === path || p.startsWith(`${path}/`)),
      response.body,
    ).toBe(true);
  else expect(paths, response.body).toContain(path);
}

describe('Resources', () => {
  const app = useTestApp();

  function create(key: string, body: unknown): Promise<TestResponse> {
    return app().request({ method: 'POST', url: '/api/v1/resources', key, body });
  }

  function get(key: string, id: string, headers?: Record<string, string>): Promise<TestResponse> {
    return app().request({ url: `/api/v1/resources/${id}`, key, headers });
  }

  function patch(key: string, id: string, body: unknown, headers?: Record<string, string>): Promise<TestResponse> {
    return app().request({ method: 'PATCH', url: `/api/v1/resources/${id}`, key, body, headers });
  }

  function remove(key: string, id: string, headers?: Record<string, string>): Promise<TestResponse> {
    return app().request({ method: 'DELETE', url: `/api/v1/resources/${id}`, key, headers });
  }

  function list(key: string, query = ''): Promise<TestResponse> {
    return app().request({ url: `/api/v1/resources${query}`, key });
  }

  async function createOk(key: string, body: Record<string, unknown>): Promise<any> {
    const response = await create(key, body);
    expect(response.status, response.body).toBe(201);
    return response.json;
  }

  async function total(key: string): Promise<number> {
    const response = await list(key);
    expect(response.status, response.body).toBe(200);
    return response.json.total;
  }

  /** Every event of the account (the tests stay well below one page of 1000). */
  async function events(key: string, after = 0): Promise<any[]> {
    const response = await app().request({ url: `/api/v1/events?after=${after}&limit=1000`, key });
    expect(response.status, response.body).toBe(200);
    return response.json.data;
  }

  /** Resource count and event count, to show a refused request wrote nothing. */
  async function footprint(key: string): Promise<{ resources: number; events: number }> {
    return { resources: await total(key), events: (await events(key)).length };
  }

  async function scopedKey(owner: TestAccount, scopes: string[]): Promise<string> {
    const response = await app().request({ method: 'POST', url: '/api/v1/keys', key: owner.key, body: { name: `scoped ${scopes.join(' ')}`, scopes } });
    expect(response.status, response.body).toBe(201);
    return response.json.key;
  }

  describe('POST /api/v1/resources', () => {
    it('creates a resource (201) with defaults, version 1 and ETag "1"; GET returns the same', async () => {
      const caller = await app().account();
      const before = Date.now();
      const response = await create(caller.key, { name: 'Living room temperature', type: 'sensor', state: 21.5 });
      const after = Date.now();
      expect(response.status, response.body).toBe(201);
      expect(response.headers.etag).toBe('"1"');
      expect(response.json).toEqual({
        id: expect.stringMatching(RESOURCE_ID),
        name: 'Living room temperature',
        type: 'sensor',
        state: 21.5,
        attributes: {},
        tags: [],
        version: 1,
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      });
      expect(response.json.updatedAt).toBe(response.json.createdAt);
      expect(Date.parse(response.json.createdAt)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(response.json.createdAt)).toBeLessThanOrEqual(after + 1);

      const read = await get(caller.key, response.json.id);
      expect(read.status).toBe(200);
      expect(read.headers.etag).toBe('"1"');
      expect(read.json).toEqual(response.json);
    });

    it('keeps attributes and tags as sent', async () => {
      const caller = await app().account();
      const attributes = { unit_of_measurement: '°C', device: { model: 'T-1000', ports: [1, 2] }, calibrated: true, offset: null };
      const created = await createOk(caller.key, { name: 'Hall', type: 'text', state: 'ok', attributes, tags: ['home', 'hall'] });
      expect(created.attributes).toEqual(attributes);
      expect(created.tags).toEqual(['home', 'hall']);
      expect((await get(caller.key, created.id)).json).toEqual(created);
    });

    it('gives each resource its own id', async () => {
      const caller = await app().account();
      const a = await createOk(caller.key, { name: 'same', type: 'switch', state: true });
      const b = await createOk(caller.key, { name: 'same', type: 'switch', state: true });
      expect(a.id).not.toBe(b.id);
      expect(await total(caller.key)).toBe(2);
    });
  });

  describe('type and state', () => {
    const accepted: [string, unknown][] = [
      ['sensor', 21.5],
      ['sensor', -40],
      ['sensor', 0],
      ['sensor', 0.000001],
      ['sensor', 1e300],
      ['sensor', 'unavailable'],
      ['sensor', ''],
      ['sensor', 'x'.repeat(255)],
      ['binary_sensor', true],
      ['binary_sensor', false],
      ['switch', true],
      ['switch', false],
      ['text', ''],
      ['text', 'hello world'],
      ['text', 'x'.repeat(255)],
    ];

    it.each(accepted)('accepts a %s with state %j', async (type, state) => {
      const caller = await app().account();
      const response = await create(caller.key, { name: 'r', type, state });
      expect(response.status, response.body).toBe(201);
      expect(response.json.type).toBe(type);
      expect(response.json.state).toStrictEqual(state);
      const read = await get(caller.key, response.json.id);
      expect(read.json.state).toStrictEqual(state);
    });

    const rejected: [string, unknown][] = [
      ['sensor', true],
      ['sensor', false],
      ['sensor', null],
      ['sensor', {}],
      ['sensor', { value: 1 }],
      ['sensor', []],
      ['sensor', [1]],
      ['sensor', 'x'.repeat(256)],
      ['binary_sensor', 0],
      ['binary_sensor', 1],
      ['binary_sensor', 'true'],
      ['binary_sensor', 'false'],
      ['binary_sensor', null],
      ['switch', 0],
      ['switch', 1],
      ['switch', 'true'],
      ['switch', null],
      ['text', 1],
      ['text', 0],
      ['text', true],
      ['text', false],
      ['text', null],
      ['text', 'x'.repeat(256)],
    ];

    it.each(rejected)('rejects a %s with state %j (400 /state) and writes nothing', async (type, state) => {
      const caller = await app().account();
      const before = await footprint(caller.key);
      const response = await create(caller.key, { name: 'r', type, state });
      expectInvalid(response, '/state');
      expect(await footprint(caller.key)).toEqual(before);
    });

    it('rejects a state that is not a finite number (1e999 parses to Infinity)', async () => {
      const caller = await app().account();
      const before = await footprint(caller.key);
      const response = await app().request({
        method: 'POST',
        url: '/api/v1/resources',
        key: caller.key,
        headers: { 'content-type': 'application/json' },
        body: '{"name":"r","type":"sensor","state":1e999}',
      });
      expectInvalid(response, '/state');
      expect(await footprint(caller.key)).toEqual(before);
    });

    it('rejects a missing state', async () => {
      const caller = await app().account();
      expectInvalid(await create(caller.key, { name: 'r', type: 'sensor' }), '/state');
      expect(await total(caller.key)).toBe(0);
    });

    it.each([
      ['sensor', 5, [true, null, 'x'.repeat(256), {}]],
      ['binary_sensor', true, [1, 'on', null]],
      ['switch', false, [0, 'off', null]],
      ['text', 'a', [1, false, 'x'.repeat(256)]],
    ] as [string, unknown, unknown[]][])('PATCH refuses a state of the wrong kind for a stored %s', async (type, initial, wrongStates) => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'r', type, state: initial });
      const before = await footprint(caller.key);
      for (const state of wrongStates) {
        expectInvalid(await patch(caller.key, created.id, { state }), '/state');
      }
      const read = await get(caller.key, created.id);
      expect(read.json).toEqual(created);
      expect(read.headers.etag).toBe('"1"');
      expect(await footprint(caller.key)).toEqual(before);
    });
  });

  describe('field limits', () => {
    const base = { type: 'sensor', state: 1 };

    it.each([
      ['missing', undefined],
      ['empty', ''],
      ['blank', '   '],
      ['201 characters after trimming', `  ${'x'.repeat(201)}  `],
      ['a bell control character', 'a\u0007b'],
      ['a NUL character', 'a\u0000b'],
      ['a newline', 'line\nbreak'],
      ['a tab', 'tab\there'],
      ['DEL', 'a\u007fb'],
      ['a C1 control character (NEL)', 'a\u0085b'],
      ['not a string', 42],
      ['null', null],
    ])('rejects a name that is %s (400 /name) and writes nothing', async (_label, name) => {
      const caller = await app().account();
      const before = await footprint(caller.key);
      const body: Record<string, unknown> = { ...base };
      if (name !== undefined) body.name = name;
      expectInvalid(await create(caller.key, body), '/name');
      expect(await footprint(caller.key)).toEqual(before);
    });

    it('trims the name and accepts 200 characters (after trimming)', async () => {
      const caller = await app().account();
      expect((await createOk(caller.key, { ...base, name: '  Kitchen light  ' })).name).toBe('Kitchen light');
      expect((await createOk(caller.key, { ...base, name: 'x'.repeat(200) })).name).toBe('x'.repeat(200));
      expect((await createOk(caller.key, { ...base, name: `   ${'y'.repeat(200)}   ` })).name).toBe('y'.repeat(200));
      expect((await createOk(caller.key, { ...base, name: 'é' })).name).toBe('é');
    });

    it('trims and checks the name on PATCH too', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { ...base, name: 'before' });
      for (const name of ['', '   ', 'x'.repeat(201), 'a\u0007b']) {
        expectInvalid(await patch(caller.key, created.id, { name }), '/name');
      }
      expect((await get(caller.key, created.id)).json).toEqual(created);
      const renamed = await patch(caller.key, created.id, { name: '  after  ' });
      expect(renamed.status, renamed.body).toBe(200);
      expect(renamed.json.name).toBe('after');
    });

    it.each([['light'], ['Sensor'], [''], [1], [null]])('rejects type %j (400 /type)', async (type) => {
      const caller = await app().account();
      expectInvalid(await create(caller.key, { name: 'r', type, state: true }), '/type');
      expect(await total(caller.key)).toBe(0);
    });

    it('rejects a missing type (400 /type)', async () => {
      const caller = await app().account();
      expectInvalid(await create(caller.key, { name: 'r', state: true }), '/type');
    });

    it('accepts attributes of exactly 16 KiB as JSON and rejects one byte more (400 /attributes)', async () => {
      const caller = await app().account();
      // {"a":"…"} is 8 bytes plus the string.
      const fits = { a: 'x'.repeat(16 * 1024 - 8) };
      expect(Buffer.byteLength(JSON.stringify(fits))).toBe(16 * 1024);
      const created = await createOk(caller.key, { ...base, name: 'big', attributes: fits });
      expect(created.attributes).toEqual(fits);

      const before = await footprint(caller.key);
      const tooBig = { a: 'x'.repeat(16 * 1024 - 7) };
      expectInvalid(await create(caller.key, { ...base, name: 'too big', attributes: tooBig }), '/attributes');
      expectInvalid(await patch(caller.key, created.id, { attributes: tooBig }), '/attributes');
      expect(await footprint(caller.key)).toEqual(before);
      expect((await get(caller.key, created.id)).json.version).toBe(1);
    });

    it.each([[[]], [[1, 2]], ['text'], [5], [null], [true]])('rejects attributes %j that are not an object (400 /attributes)', async (attributes) => {
      const caller = await app().account();
      expectInvalid(await create(caller.key, { ...base, name: 'r', attributes }), '/attributes');
      expect(await total(caller.key)).toBe(0);
    });

    it.each([
      ['21 tags', Array.from({ length: 21 }, (_, i) => `t${i}`)],
      ['a duplicate', ['a', 'b', 'a']],
      ['an empty tag', ['ok', '']],
      ['a 65-character tag', ['x'.repeat(65)]],
      ['a non-string tag', ['a', 1]],
      ['a string instead of an array', 'a'],
      ['null', null],
    ])('rejects tags with %s (400 /tags)', async (_label, tags) => {
      const caller = await app().account();
      const before = await footprint(caller.key);
      expectInvalid(await create(caller.key, { ...base, name: 'r', tags }), '/tags', { prefix: true });
      expect(await footprint(caller.key)).toEqual(before);
    });

    it('accepts 20 unique tags and 64-character tags', async () => {
      const caller = await app().account();
      const twenty = Array.from({ length: 20 }, (_, i) => `tag-${i}`);
      expect((await createOk(caller.key, { ...base, name: 'r', tags: twenty })).tags).toEqual(twenty);
      const long = ['x'.repeat(64), 'y'];
      expect((await createOk(caller.key, { ...base, name: 'r', tags: long })).tags).toEqual(long);
    });

    it('checks tags on PATCH too', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { ...base, name: 'r', tags: ['keep'] });
      for (const tags of [Array.from({ length: 21 }, (_, i) => `t${i}`), ['a', 'a'], [''], ['x'.repeat(65)]]) {
        expectInvalid(await patch(caller.key, created.id, { tags }), '/tags', { prefix: true });
      }
      expect((await get(caller.key, created.id)).json).toEqual(created);
    });

    it('rejects an unknown field, naming it (400)', async () => {
      const caller = await app().account();
      expectInvalid(await create(caller.key, { ...base, name: 'r', color: 'red' }), '/color');
      expectInvalid(await create(caller.key, { ...base, name: 'r', version: 7 }), '/version');
      expect(await total(caller.key)).toBe(0);

      const created = await createOk(caller.key, { ...base, name: 'r' });
      expectInvalid(await patch(caller.key, created.id, { state: 2, color: 'red' }), '/color');
      expectInvalid(await patch(caller.key, created.id, { version: 9 }), '/version');
      expect((await get(caller.key, created.id)).json).toEqual(created);
    });

    it('rejects a body that is not a JSON object', async () => {
      const caller = await app().account();
      for (const body of [[], 'null', '"text"']) {
        const response = await app().request({
          method: 'POST',
          url: '/api/v1/resources',
          key: caller.key,
          headers: { 'content-type': 'application/json' },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        });
        expectError(response, 400, 'invalid_request');
      }
      const malformed = await app().request({
        method: 'POST',
        url: '/api/v1/resources',
        key: caller.key,
        headers: { 'content-type': 'application/json' },
        body: '{"name":',
      });
      expectError(malformed, 400, 'invalid_request');
      expect(await total(caller.key)).toBe(0);
    });
  });

  describe('PATCH /api/v1/resources/{id}', () => {
    it('changes only the sent fields and raises the version by one each time', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, {
        name: 'Thermostat',
        type: 'sensor',
        state: 19,
        attributes: { unit_of_measurement: '°C' },
        tags: ['heating'],
      });

      const first = await patch(caller.key, created.id, { state: 20.5 });
      expect(first.status, first.body).toBe(200);
      expect(first.headers.etag).toBe('"2"');
      expect(first.json).toEqual({ ...created, state: 20.5, version: 2, updatedAt: expect.stringMatching(ISO_MS) });
      expect(Date.parse(first.json.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));

      const second = await patch(caller.key, created.id, { name: 'Hall thermostat' });
      expect(second.headers.etag).toBe('"3"');
      expect(second.json).toEqual({ ...first.json, name: 'Hall thermostat', version: 3, updatedAt: expect.stringMatching(ISO_MS) });

      const third = await patch(caller.key, created.id, { attributes: { unit_of_measurement: 'K' }, tags: ['heating', 'hall'] });
      expect(third.headers.etag).toBe('"4"');
      expect(third.json).toEqual({
        ...second.json,
        attributes: { unit_of_measurement: 'K' },
        tags: ['heating', 'hall'],
        version: 4,
        updatedAt: expect.stringMatching(ISO_MS),
      });

      // Attributes and tags are replaced as a whole.
      const fourth = await patch(caller.key, created.id, { attributes: {}, tags: [] });
      expect(fourth.json).toMatchObject({ attributes: {}, tags: [], version: 5, name: 'Hall thermostat', state: 20.5 });

      // A sensor may change between a number and text.
      const fifth = await patch(caller.key, created.id, { state: 'unavailable' });
      expect(fifth.json).toMatchObject({ state: 'unavailable', version: 6 });

      const read = await get(caller.key, created.id);
      expect(read.headers.etag).toBe('"6"');
      expect(read.json).toEqual(fifth.json);
      expect(read.json.id).toBe(created.id);
      expect(read.json.createdAt).toBe(created.createdAt);
      expect(read.json.type).toBe('sensor');
    });

    it('raises the version even when the value does not change', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'Switch', type: 'switch', state: false });
      const same = await patch(caller.key, created.id, { state: false });
      expect(same.status, same.body).toBe(200);
      expect(same.json).toMatchObject({ state: false, version: 2 });
      expect(same.headers.etag).toBe('"2"');
      const again = await patch(caller.key, created.id, { name: 'Switch' });
      expect(again.json.version).toBe(3);
      expect(again.headers.etag).toBe('"3"');
      // Each accepted PATCH wrote one resource.updated event.
      const log = await events(caller.key);
      expect(log.map((event) => event.type)).toEqual(['resource.created', 'resource.updated', 'resource.updated']);
    });

    it('sets a boolean state to false (not mistaken for "absent")', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'Door', type: 'binary_sensor', state: true });
      const closed = await patch(caller.key, created.id, { state: false });
      expect(closed.json.state).toBe(false);
      expect((await get(caller.key, created.id)).json.state).toBe(false);
      const text = await createOk(caller.key, { name: 'Note', type: 'text', state: 'x' });
      expect((await patch(caller.key, text.id, { state: '' })).json.state).toBe('');
      const sensor = await createOk(caller.key, { name: 'Level', type: 'sensor', state: 3 });
      expect((await patch(caller.key, sensor.id, { state: 0 })).json.state).toBe(0);
    });

    it.each([['sensor'], ['switch']])('refuses type in the body (400 /type), even the same type %s', async (type) => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'r', type: 'sensor', state: 1 });
      const before = await footprint(caller.key);
      expectInvalid(await patch(caller.key, created.id, { type }), '/type');
      expectInvalid(await patch(caller.key, created.id, { type, state: 2 }), '/type');
      expect((await get(caller.key, created.id)).json).toEqual(created);
      expect(await footprint(caller.key)).toEqual(before);
    });

    it('refuses a body with no updatable field (400)', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'r', type: 'sensor', state: 1 });
      const before = await footprint(caller.key);
      expectError(await patch(caller.key, created.id, {}), 400, 'invalid_request');
      expect((await get(caller.key, created.id)).json).toEqual(created);
      expect(await footprint(caller.key)).toEqual(before);
    });

    it('accepts If-Match as "n", W/"n" and n', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'r', type: 'sensor', state: 1 });
      const quoted = await patch(caller.key, created.id, { state: 2 }, { 'if-match': '"1"' });
      expect(quoted.status, quoted.body).toBe(200);
      expect(quoted.json.version).toBe(2);
      const weak = await patch(caller.key, created.id, { state: 3 }, { 'if-match': 'W/"2"' });
      expect(weak.status, weak.body).toBe(200);
      expect(weak.json.version).toBe(3);
      const bare = await patch(caller.key, created.id, { state: 4 }, { 'if-match': '3' });
      expect(bare.status, bare.body).toBe(200);
      expect(bare.json).toMatchObject({ state: 4, version: 4 });
      expect(bare.headers.etag).toBe('"4"');
      // The ETag of a response is directly usable as the next If-Match.
      const chained = await patch(caller.key, created.id, { state: 5 }, { 'if-match': bare.headers.etag as string });
      expect(chained.json.version).toBe(5);
    });

    it('refuses a stale If-Match with 412 precondition_failed giving the current version, changing nothing', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'r', type: 'sensor', state: 1 });
      const updated = await patch(caller.key, created.id, { state: 2 });
      expect(updated.json.version).toBe(2);
      const before = await footprint(caller.key);

      for (const ifMatch of ['"1"', 'W/"1"', '1', '"3"', '"20"']) {
        const response = await patch(caller.key, created.id, { state: 99 }, { 'if-match': ifMatch });
        expectError(response, 412, 'precondition_failed');
        const details: Record<string, unknown>[] = response.json.error.details ?? [];
        expect(details.length, response.body).toBeGreaterThan(0);
        // The current version is given in the details.
        expect(
          details.some((detail) => Object.values(detail).includes(2) || String(detail.message).includes('2')),
          response.body,
        ).toBe(true);
      }

      const read = await get(caller.key, created.id);
      expect(read.json).toEqual(updated.json);
      expect(read.headers.etag).toBe('"2"');
      expect(await footprint(caller.key)).toEqual(before);
    });

    it('is 404 for an unknown id', async () => {
      const caller = await app().account();
      expectError(await patch(caller.key, 'res_doesnotexist', { state: 1 }), 404, 'not_found');
      expect((await events(caller.key)).length).toBe(0);
    });
  });

  describe('conditional GET and DELETE', () => {
    it('answers If-None-Match with the current version with 304 and an empty body', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'r', type: 'text', state: 'a' });
      await patch(caller.key, created.id, { state: 'b' });

      for (const tag of ['"2"', 'W/"2"']) {
        const notModified = await get(caller.key, created.id, { 'if-none-match': tag });
        expect(notModified.status).toBe(304);
        expect(notModified.body).toBe('');
        expect(notModified.headers.etag).toBe('"2"');
      }

      const stale = await get(caller.key, created.id, { 'if-none-match': '"1"' });
      expect(stale.status).toBe(200);
      expect(stale.headers.etag).toBe('"2"');
      expect(stale.json).toMatchObject({ id: created.id, state: 'b', version: 2 });
    });

    it('honours If-Match on DELETE: a stale version gives 412 and keeps the resource, the current one deletes it', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'r', type: 'switch', state: true });
      await patch(caller.key, created.id, { state: false });
      const before = await footprint(caller.key);

      const stale = await remove(caller.key, created.id, { 'if-match': '"1"' });
      expectError(stale, 412, 'precondition_failed');
      expect((await get(caller.key, created.id)).json.version).toBe(2);
      expect(await footprint(caller.key)).toEqual(before);

      const current = await remove(caller.key, created.id, { 'if-match': '"2"' });
      expect(current.status, current.body).toBe(204);
      expect(current.body).toBe('');
      expectError(await get(caller.key, created.id), 404, 'not_found');
    });
  });

  describe('DELETE /api/v1/resources/{id}', () => {
    it('deletes (204); afterwards GET, PATCH and DELETE are 404', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'r', type: 'sensor', state: 1 });
      const keep = await createOk(caller.key, { name: 'keep', type: 'sensor', state: 2 });

      const deleted = await remove(caller.key, created.id);
      expect(deleted.status, deleted.body).toBe(204);
      expect(deleted.body).toBe('');

      expectError(await get(caller.key, created.id), 404, 'not_found');
      expectError(await patch(caller.key, created.id, { state: 3 }), 404, 'not_found');
      expectError(await remove(caller.key, created.id), 404, 'not_found');

      const listed = await list(caller.key);
      expect(listed.json.total).toBe(1);
      expect(listed.json.data.map((r: { id: string }) => r.id)).toEqual([keep.id]);
      // One created event for each, one deleted event; the failed requests wrote nothing.
      expect((await events(caller.key)).map((event) => event.type)).toEqual(['resource.created', 'resource.created', 'resource.deleted']);
    });

    it('is 404 for an id that never existed', async () => {
      const caller = await app().account();
      expectError(await remove(caller.key, 'res_doesnotexist'), 404, 'not_found');
      expectError(await get(caller.key, 'res_doesnotexist'), 404, 'not_found');
    });

    it('removes the deleted resource from tag filters', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'r', type: 'sensor', state: 1, tags: ['gone'] });
      expect((await list(caller.key, '?tag=gone')).json.total).toBe(1);
      await remove(caller.key, created.id);
      expect((await list(caller.key, '?tag=gone')).json).toMatchObject({ data: [], total: 0 });
    });
  });

  describe('concurrency', () => {
    it('lets exactly one of two PATCHes with the same If-Match win (repeated)', async () => {
      const caller = await app().account();
      for (let round = 0; round < 8; round++) {
        const created = await createOk(caller.key, { name: `race ${round}`, type: 'sensor', state: 0 });
        const responses = await Promise.all([
          patch(caller.key, created.id, { state: 1 }, { 'if-match': '"1"' }),
          patch(caller.key, created.id, { state: 2 }, { 'if-match': '"1"' }),
        ]);
        expect(responses.map((r) => r.status).sort()).toEqual([200, 412]);
        const winner = responses.find((r) => r.status === 200)!;
        const loser = responses.find((r) => r.status === 412)!;
        expect(loser.json.error.code).toBe('precondition_failed');
        const read = await get(caller.key, created.id);
        expect(read.json.version).toBe(2);
        expect(read.json.state).toBe(winner.json.state);
      }
      // Per round: one created and one updated event.
      const log = await events(caller.key);
      expect(log.filter((event) => event.type === 'resource.updated')).toHaveLength(8);
      expect(log.filter((event) => event.type === 'resource.created')).toHaveLength(8);
    });

    it('applies 50 concurrent PATCHes without If-Match, one version each, with dense event ids', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'counter', type: 'sensor', state: 0 });
      const count = 50;
      const responses = await Promise.all(Array.from({ length: count }, (_, i) => patch(caller.key, created.id, { state: i + 1 })));
      expect(responses.map((r) => r.status)).toEqual(Array.from({ length: count }, () => 200));
      expect(responses.map((r) => r.json.version).sort((a: number, b: number) => a - b)).toEqual(Array.from({ length: count }, (_, i) => i + 2));
      for (const response of responses) expect(response.headers.etag).toBe(`"${response.json.version}"`);

      const read = await get(caller.key, created.id);
      expect(read.json.version).toBe(1 + count);
      // The final state is the one written by the PATCH that got the last version.
      const last = responses.find((r) => r.json.version === 1 + count)!;
      expect(read.json.state).toBe(last.json.state);

      const log = await events(caller.key);
      expect(log).toHaveLength(1 + count);
      const ids = log.map((event) => event.id);
      expect(ids).toEqual(Array.from({ length: 1 + count }, (_, i) => ids[0] + i));
      expect(ids[0]).toBe(1);
      expect(log[0].type).toBe('resource.created');
      for (const [index, event] of log.slice(1).entries()) {
        expect(event.type).toBe('resource.updated');
        // Events follow the order of the versions.
        expect(event.data.resource.version).toBe(index + 2);
        expect(event.data.resource.id).toBe(created.id);
      }
    });
  });

  describe('events', () => {
    it('writes resource.created, resource.updated and resource.deleted with the resource', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'Porch', type: 'binary_sensor', state: false, attributes: { area: 'outside' }, tags: ['door'] });
      const updated = await patch(caller.key, created.id, { state: true, tags: ['door', 'front'] });
      expect(updated.status).toBe(200);
      const renamed = await patch(caller.key, created.id, { name: 'Front porch', attributes: { area: 'front' } });
      expect(renamed.status).toBe(200);
      expect((await remove(caller.key, created.id)).status).toBe(204);

      const log = await events(caller.key);
      expect(log.map((event) => event.type)).toEqual(['resource.created', 'resource.updated', 'resource.updated', 'resource.deleted']);
      expect(log.map((event) => event.id)).toEqual([1, 2, 3, 4]);
      for (const event of log) {
        expect(Object.keys(event).sort()).toEqual(['createdAt', 'data', 'id', 'type']);
        expect(event.createdAt).toMatch(ISO_MS);
      }

      const [createdEvent, firstUpdate, secondUpdate, deletedEvent] = log;
      expect(createdEvent.data).toEqual({ resource: created });

      expect(firstUpdate.data).toEqual({ resource: updated.json, changed: expect.any(Array) });
      expect([...firstUpdate.data.changed].sort()).toEqual(['state', 'tags']);

      expect(secondUpdate.data).toEqual({ resource: renamed.json, changed: expect.any(Array) });
      expect([...secondUpdate.data.changed].sort()).toEqual(['attributes', 'name']);

      // The deleted resource as it was.
      expect(deletedEvent.data).toEqual({ resource: renamed.json });
    });

    it('lists in `changed` no field that was not sent', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'n', type: 'sensor', state: 1 });
      await patch(caller.key, created.id, { state: 1 });
      const [, event] = await events(caller.key);
      expect(event.type).toBe('resource.updated');
      expect(event.data.resource).toMatchObject({ id: created.id, version: 2, state: 1 });
      expect(Array.isArray(event.data.changed)).toBe(true);
      for (const field of event.data.changed) expect(['state']).toContain(field);
    });

    it('writes no event for a refused request', async () => {
      const caller = await app().account();
      const created = await createOk(caller.key, { name: 'n', type: 'sensor', state: 1 });
      await patch(caller.key, created.id, { state: true });
      await patch(caller.key, created.id, { state: 2 }, { 'if-match': '"7"' });
      await patch(caller.key, created.id, {});
      await remove(caller.key, created.id, { 'if-match': '"7"' });
      await remove(caller.key, 'res_doesnotexist');
      // The next event follows on directly: no id was used up by the refusals.
      await patch(caller.key, created.id, { state: 3 });
      const log = await events(caller.key);
      expect(log.map((event) => [event.id, event.type])).toEqual([
        [1, 'resource.created'],
        [2, 'resource.updated'],
      ]);
    });
  });

  describe('GET /api/v1/resources', () => {
    it('lists each resource exactly as it reads alone, whatever its name, state and attributes hold', async () => {
      const caller = await app().account();
      const awkward = await createOk(caller.key, {
        name: 'Büro "Nord" \\ 🌍',
        type: 'text',
        state: 'line "one"\\two \u2028',
        attributes: { unit: '°C', nested: { list: [1e21, -0.25, null, true] }, '1': 'x' },
        tags: ['ä', 'with space'],
      });
      const number = await createOk(caller.key, { name: 'n', type: 'sensor', state: 1e-7 });
      const listed = await list(caller.key);
      expect(listed.json.data).toEqual([awkward, number]);
      expect((await app().request({ url: `/api/v1/resources/${awkward.id}`, key: caller.key })).json).toEqual(awkward);
    });

    it('lists in creation order in the envelope, with filters by type and tag', async () => {
      const caller = await app().account();
      const a = await createOk(caller.key, { name: 'a', type: 'sensor', state: 1, tags: ['home', 'kitchen'] });
      const b = await createOk(caller.key, { name: 'b', type: 'switch', state: true, tags: ['home'] });
      const c = await createOk(caller.key, { name: 'c', type: 'text', state: 't', tags: ['kitchen'] });
      const d = await createOk(caller.key, { name: 'd', type: 'sensor', state: 2 });
      // Updating does not move a resource in the order.
      const aUpdated = (await patch(caller.key, a.id, { state: 5 })).json;

      const all = await list(caller.key);
      expect(all.status).toBe(200);
      expect(Object.keys(all.json).sort()).toEqual(['data', 'hasMore', 'limit', 'offset', 'total']);
      expect(all.json).toEqual({ data: [aUpdated, b, c, d], limit: 50, offset: 0, total: 4, hasMore: false });

      const sensors = await list(caller.key, '?type=sensor');
      expect(sensors.json).toMatchObject({ total: 2, hasMore: false });
      expect(sensors.json.data.map((r: { id: string }) => r.id)).toEqual([a.id, d.id]);
      expect((await list(caller.key, '?type=binary_sensor')).json).toMatchObject({ data: [], total: 0, hasMore: false });

      const home = await list(caller.key, '?tag=home');
      expect(home.json.data.map((r: { id: string }) => r.id)).toEqual([a.id, b.id]);
      expect(home.json.total).toBe(2);

      const both = await list(caller.key, '?tag=home&tag=kitchen');
      expect(both.json.data.map((r: { id: string }) => r.id)).toEqual([a.id]);
      expect(both.json.total).toBe(1);

      const bothWithType = await list(caller.key, '?tag=kitchen&type=text');
      expect(bothWithType.json.data.map((r: { id: string }) => r.id)).toEqual([c.id]);

      expect((await list(caller.key, '?tag=nothing')).json).toMatchObject({ data: [], total: 0, hasMore: false });
      expect((await list(caller.key, '?tag=home&tag=nothing')).json).toMatchObject({ data: [], total: 0 });
    });

    it('follows tag changes made by PATCH', async () => {
      const caller = await app().account();
      const r = await createOk(caller.key, { name: 'r', type: 'sensor', state: 1, tags: ['old'] });
      await patch(caller.key, r.id, { tags: ['new', 'other'] });
      expect((await list(caller.key, '?tag=old')).json.total).toBe(0);
      expect((await list(caller.key, '?tag=new&tag=other')).json.data.map((x: { id: string }) => x.id)).toEqual([r.id]);
      // A PATCH of other fields keeps the tags.
      await patch(caller.key, r.id, { state: 2 });
      expect((await list(caller.key, '?tag=new')).json.total).toBe(1);
    });

    it('pages with limit and offset (default limit 50)', async () => {
      const caller = await app().account();
      const ids: string[] = [];
      for (let i = 0; i < 55; i++) ids.push((await createOk(caller.key, { name: `r${i}`, type: 'sensor', state: i })).id);

      const first = await list(caller.key);
      expect(first.json).toMatchObject({ limit: 50, offset: 0, total: 55, hasMore: true });
      expect(first.json.data.map((r: { id: string }) => r.id)).toEqual(ids.slice(0, 50));

      const rest = await list(caller.key, '?offset=50');
      expect(rest.json).toMatchObject({ limit: 50, offset: 50, total: 55, hasMore: false });
      expect(rest.json.data.map((r: { id: string }) => r.id)).toEqual(ids.slice(50));

      const pages: string[] = [];
      for (let offset = 0; offset < 55; offset += 20) {
        const page = await list(caller.key, `?limit=20&offset=${offset}`);
        expect(page.json).toMatchObject({ limit: 20, offset, total: 55, hasMore: offset + 20 < 55 });
        pages.push(...page.json.data.map((r: { id: string }) => r.id));
      }
      expect(pages).toEqual(ids);

      const exact = await list(caller.key, '?limit=5&offset=50');
      expect(exact.json).toMatchObject({ limit: 5, offset: 50, total: 55, hasMore: false });
      expect(exact.json.data).toHaveLength(5);

      const one = await list(caller.key, '?limit=1');
      expect(one.json).toMatchObject({ limit: 1, total: 55, hasMore: true });
      expect(one.json.data.map((r: { id: string }) => r.id)).toEqual([ids[0]]);

      const max = await list(caller.key, '?limit=500');
      expect(max.json).toMatchObject({ limit: 500, total: 55, hasMore: false });
      expect(max.json.data).toHaveLength(55);

      const beyond = await list(caller.key, '?offset=100');
      expect(beyond.json).toEqual({ data: [], limit: 50, offset: 100, total: 55, hasMore: false });
    });

    it.each([
      ['limit=0', '/limit'],
      ['limit=501', '/limit'],
      ['limit=-1', '/limit'],
      ['limit=abc', '/limit'],
      ['limit=1.5', '/limit'],
      ['offset=-1', '/offset'],
      ['type=light', '/type'],
    ])('rejects ?%s (400)', async (query, path) => {
      const caller = await app().account();
      const response = await list(caller.key, `?${query}`);
      expectInvalid(response, path, { prefix: true });
    });
  });

  describe('scopes', () => {
    it('resources:read may read but not write (403 insufficient_scope)', async () => {
      const owner = await app().account();
      const created = await createOk(owner.key, { name: 'r', type: 'sensor', state: 1 });
      const reader = await scopedKey(owner, ['resources:read']);

      expect((await get(reader, created.id)).json).toEqual(created);
      expect((await list(reader)).json.total).toBe(1);

      const attempts = [
        await create(reader, { name: 'x', type: 'sensor', state: 1 }),
        await patch(reader, created.id, { state: 2 }),
        await remove(reader, created.id),
      ];
      for (const response of attempts) {
        expectError(response, 403, 'insufficient_scope');
        expect(response.headers['www-authenticate']).toContain('error="insufficient_scope"');
        expect(response.headers['www-authenticate']).toContain('scope="resources:write"');
      }
      expect((await get(owner.key, created.id)).json).toEqual(created);
      expect(await footprint(owner.key)).toEqual({ resources: 1, events: 1 });
    });

    it('resources:write may write but not read (403)', async () => {
      const owner = await app().account();
      const writer = await scopedKey(owner, ['resources:write']);
      const created = await createOk(writer, { name: 'w', type: 'switch', state: true });
      expect((await patch(writer, created.id, { state: false })).status).toBe(200);

      for (const response of [await get(writer, created.id), await list(writer)]) {
        expectError(response, 403, 'insufficient_scope');
        expect(response.headers['www-authenticate']).toContain('scope="resources:read"');
      }
      expect((await remove(writer, created.id)).status).toBe(204);
    });

    it('needs a credential (401)', async () => {
      const owner = await app().account();
      const created = await createOk(owner.key, { name: 'r', type: 'sensor', state: 1 });
      const anonymous = [
        await app().request({ url: '/api/v1/resources' }),
        await app().request({ url: `/api/v1/resources/${created.id}` }),
        await app().request({ method: 'POST', url: '/api/v1/resources', body: { name: 'x', type: 'sensor', state: 1 } }),
        await app().request({ method: 'PATCH', url: `/api/v1/resources/${created.id}`, body: { state: 2 } }),
        await app().request({ method: 'DELETE', url: `/api/v1/resources/${created.id}` }),
      ];
      for (const response of anonymous) {
        expectError(response, 401, 'unauthorized');
        expect(response.headers['www-authenticate']).toBe('Bearer realm="devdata"');
      }
      const invalid = await list('ddk_not-a-real-key');
      expectError(invalid, 401, 'unauthorized');
      expect(invalid.headers['www-authenticate']).toContain('error="invalid_token"');
      expect((await get(owner.key, created.id)).json).toEqual(created);
      expect(await footprint(owner.key)).toEqual({ resources: 1, events: 1 });
    });
  });

  describe('isolation between accounts', () => {
    it("hides one account's resources from another (404) and leaves them unchanged", async () => {
      const a = await app().account();
      const b = await app().account();
      const mine = await createOk(a.key, { name: 'private', type: 'text', state: 'secret', tags: ['shared-tag'] });
      const theirs = await createOk(b.key, { name: 'theirs', type: 'text', state: 'other', tags: ['shared-tag'] });

      expectError(await get(b.key, mine.id), 404, 'not_found');
      expectError(await patch(b.key, mine.id, { state: 'stolen' }), 404, 'not_found');
      expectError(await patch(b.key, mine.id, { state: 'stolen' }, { 'if-match': '"1"' }), 404, 'not_found');
      expectError(await remove(b.key, mine.id), 404, 'not_found');
      expectError(await remove(b.key, mine.id, { 'if-match': '"1"' }), 404, 'not_found');

      for (const query of ['', '?tag=shared-tag', '?type=text']) {
        const listed = await list(b.key, query);
        expect(listed.json.total).toBe(1);
        expect(listed.json.data.map((r: { id: string }) => r.id)).toEqual([theirs.id]);
        expect(listed.body).not.toContain(mine.id);
        expect(listed.body).not.toContain('secret');
      }

      const read = await get(a.key, mine.id);
      expect(read.json).toEqual(mine);
      expect(read.headers.etag).toBe('"1"');
      expect((await list(a.key)).json.data.map((r: { id: string }) => r.id)).toEqual([mine.id]);

      // Neither account sees the other's events, and B's refused attempts wrote none.
      const aEvents = await events(a.key);
      expect(aEvents.map((event) => [event.id, event.type])).toEqual([[1, 'resource.created']]);
      expect(JSON.stringify(aEvents)).not.toContain(theirs.id);
      const bEvents = await events(b.key);
      expect(bEvents.map((event) => [event.id, event.type])).toEqual([[1, 'resource.created']]);
      expect(JSON.stringify(bEvents)).not.toContain(mine.id);
    });
  });
});
