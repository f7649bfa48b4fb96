// The account's event log over HTTP: publishing custom events, polling by cursor with type
// filters, retention (410 and physical pruning), scopes and isolation (docs/decisions.md: "HTTP contract", "Events and streams").
import { describe, expect, it } from 'vitest';
import { TestApp, useTestApp, type TestAccount, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface EventBody {
  id: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: string;
}

describe('events', () => {
  const app = useTestApp();

  function publish(key: string, type: string, data: unknown = {}): Promise<TestResponse> {
    return app().request({ method: 'POST', url: '/api/v1/events', key, body: { type, data } });
  }

  async function published(key: string, type: string, data: Record<string, unknown> = {}): Promise<EventBody> {
    const response = await publish(key, type, data);
    expect(response.status, response.body).toBe(201);
    return response.json as EventBody;
  }

  function poll(key: string, query = ''): Promise<TestResponse> {
    return app().request({ url: `/api/v1/events${query}`, key });
  }

  async function page(key: string, query = ''): Promise<{ data: EventBody[]; cursor: number; hasMore: boolean; oldestCursor: number }> {
    const response = await poll(key, query);
    expect(response.status, response.body).toBe(200);
    return response.json;
  }

  const ids = (events: EventBody[]) => events.map((event) => event.id);

  describe('POST /api/v1/events', () => {
    it('publishes a custom event (201) with id, type, data and createdAt', async () => {
      const caller = await app().account(['events:write', 'events:read']);
      const before = Date.now();
      const response = await publish(caller.key, 'custom.door_bell', { floor: 2, nested: { ok: true, list: [1, 'a', null] } });
      expect(response.status, response.body).toBe(201);
      expect(response.json).toEqual({
        id: 1,
        type: 'custom.door_bell',
        data: { floor: 2, nested: { ok: true, list: [1, 'a', null] } },
        createdAt: expect.stringMatching(ISO_MS),
      });
      expect(Date.parse(response.json.createdAt)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(response.json.createdAt)).toBeLessThanOrEqual(Date.now() + 1);
      expect(response.headers['x-request-id']).toEqual(expect.any(String));

      // The log holds exactly the event that was returned.
      const list = await page(caller.key);
      expect(list.data).toEqual([response.json]);
    });

    it('pages back exactly the data it stored, whatever JSON it holds', async () => {
      const caller = await app().account(['events:write', 'events:read']);
      const data = {
        quote: 'say "hi"\\ \u0001\n\u2028',
        unicode: 'Zürich 🌍 日本',
        numbers: [0, -1.5, 1e21, 1e-7, 9007199254740991],
        '2': 'integer-like key first',
        __proto__key: { deep: [[{}], []] },
        empty: '',
      };
      const event = await published(caller.key, 'custom.awkward', data);
      expect(event.data).toEqual(data);
      expect((await page(caller.key)).data).toEqual([event]);
    });

    it('accepts an empty data object', async () => {
      const caller = await app().account(['events:write']);
      const event = await published(caller.key, 'custom.empty', {});
      expect(event.data).toEqual({});
    });

    it.each([['custom.a'], ['custom.A_b.c:d-e'], ['custom.0'], ['custom....'], [`custom.${'x'.repeat(100)}`]])('accepts the type %s', async (type) => {
      const caller = await app().account(['events:write']);
      const response = await publish(caller.key, type, { n: 1 });
      expect(response.status, response.body).toBe(201);
      expect(response.json.type).toBe(type);
    });

    it.each([
      ['custom.', 'custom.'],
      ['x.y', 'x.y'],
      ['resource.created', 'resource.created'],
      ['resource.updated', 'resource.updated'],
      ['schedule.executed', 'schedule.executed'],
      ['custom.with space', 'custom.with space'],
      ['custom.slash/x', 'custom.slash/x'],
      ['custom.é', 'custom.é'],
      ['Custom.a', 'Custom.a'],
      ['custom', 'custom'],
      ['101 characters after custom.', `custom.${'x'.repeat(101)}`],
      ['an empty string', ''],
      ['a trailing newline', 'custom.a\n'],
    ])('rejects the type %s with 400', async (_label, type) => {
      const caller = await app().account(['events:write', 'events:read']);
      const response = await publish(caller.key, type, {});
      expectError(response, 400, 'invalid_request');
      expect(response.json.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/type' })]));
      // Nothing was written, and no id was spent.
      expect((await page(caller.key)).data).toEqual([]);
      expect((await published(caller.key, 'custom.after')).id).toBe(1);
    });

    it.each([
      ['an array', [1, 2]],
      ['a string', 'hello'],
      ['a number', 3],
      ['null', null],
      ['a boolean', true],
    ])('rejects data that is %s with 400', async (_label, data) => {
      const caller = await app().account(['events:write']);
      const response = await publish(caller.key, 'custom.x', data);
      expectError(response, 400, 'invalid_request');
      expect(response.json.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/data' })]));
    });

    it('rejects a missing data or type, and unknown fields, with 400', async () => {
      const caller = await app().account(['events:write', 'events:read']);
      const cases: Array<[unknown, string]> = [
        [{ type: 'custom.x' }, '/data'],
        [{ data: {} }, '/type'],
        [{ type: 'custom.x', data: {}, id: 5 }, '/id'],
        [{ type: 'custom.x', data: {}, createdAt: '2026-01-01T00:00:00.000Z' }, '/createdAt'],
      ];
      for (const [body, path] of cases) {
        const response = await app().request({ method: 'POST', url: '/api/v1/events', key: caller.key, body });
        expectError(response, 400, 'invalid_request');
        expect(response.json.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
      }
      const malformed = await app().request({
        method: 'POST',
        url: '/api/v1/events',
        key: caller.key,
        headers: { 'content-type': 'application/json' },
        body: '{"type":"custom.x",',
      });
      expectError(malformed, 400, 'invalid_request');
      const notJson = await app().request({
        method: 'POST',
        url: '/api/v1/events',
        key: caller.key,
        headers: { 'content-type': 'text/plain' },
        body: '{"type":"custom.x","data":{}}',
      });
      expectError(notJson, 415, 'unsupported_media_type');
      expect((await page(caller.key)).data).toEqual([]);
    });

    it('takes a body up to 64 KiB and refuses a larger one with 413', async () => {
      const caller = await app().account(['events:write', 'events:read']);
      const envelope = JSON.stringify({ type: 'custom.big', data: { blob: '' } }).length;
      const fits = await publish(caller.key, 'custom.big', { blob: 'x'.repeat(64 * 1024 - envelope) });
      expect(fits.status, fits.body.slice(0, 300)).toBe(201);

      const tooLarge = await publish(caller.key, 'custom.big', { blob: 'x'.repeat(64 * 1024 - envelope + 1) });
      expectError(tooLarge, 413, 'payload_too_large');
      const wayTooLarge = await publish(caller.key, 'custom.big', { blob: 'x'.repeat(200 * 1024) });
      expectError(wayTooLarge, 413, 'payload_too_large');

      expect(ids((await page(caller.key)).data)).toEqual([1]);
    });

    it('needs events:write (403 insufficient_scope) and a credential (401)', async () => {
      const reader = await app().account(['events:read', 'resources:write']);
      const forbidden = await publish(reader.key, 'custom.x', {});
      expectError(forbidden, 403, 'insufficient_scope');
      expect(forbidden.headers['www-authenticate']).toContain('error="insufficient_scope"');
      expect(forbidden.headers['www-authenticate']).toContain('scope="events:write"');

      const anonymous = await app().request({ method: 'POST', url: '/api/v1/events', body: { type: 'custom.x', data: {} } });
      expectError(anonymous, 401, 'unauthorized');
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="devdata"');

      const bogus = await app().request({ method: 'POST', url: '/api/v1/events', key: 'ddk_nope', body: { type: 'custom.x', data: {} } });
      expectError(bogus, 401, 'unauthorized');
      expect(bogus.headers['www-authenticate']).toContain('error="invalid_token"');

      // The refused attempts wrote nothing.
      expect((await page(reader.key)).data).toEqual([]);
    });
  });

  describe('event ids', () => {
    it('are 1, 2, 3… per account, and a second account starts again at 1', async () => {
      const a = await app().account(['events:write', 'events:read']);
      const b = await app().account(['events:write', 'events:read']);
      expect((await published(a.key, 'custom.a')).id).toBe(1);
      expect((await published(a.key, 'custom.a')).id).toBe(2);
      expect((await published(b.key, 'custom.b')).id).toBe(1);
      expect((await published(a.key, 'custom.a')).id).toBe(3);
      expect((await published(b.key, 'custom.b')).id).toBe(2);
      expect(ids((await page(a.key)).data)).toEqual([1, 2, 3]);
      expect(ids((await page(b.key)).data)).toEqual([1, 2]);
    });

    it('stay dense under 100 concurrent publishes, and GET returns them in order', async () => {
      const caller = await app().account(['events:write', 'events:read']);
      const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => publish(caller.key, `custom.n${i}`, { i })));
      for (const response of responses) expect(response.status, response.body).toBe(201);
      const returned = responses.map((response) => response.json as EventBody);
      expect(returned.map((event) => event.id).sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));

      const list = await page(caller.key, '?limit=1000');
      expect(ids(list.data)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      expect(list.cursor).toBe(100);
      expect(list.hasMore).toBe(false);
      // Each stored event is exactly what its publisher was told, and time never runs back along the ids.
      const byId = new Map(returned.map((event) => [event.id, event]));
      for (const event of list.data) expect(event).toEqual(byId.get(event.id));
      const times = list.data.map((event) => event.createdAt);
      expect(times).toEqual([...times].sort());
    });

    it('are shared with resource events and mixed writers stay dense', async () => {
      const caller = await app().account(['events:write', 'events:read', 'resources:write']);
      const writes = Array.from({ length: 40 }, (_, i) =>
        i % 2 === 0
          ? publish(caller.key, 'custom.mixed', { i })
          : app().request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: `r${i}`, type: 'sensor', state: i } }),
      );
      for (const response of await Promise.all(writes)) expect(response.status, response.body).toBe(201);
      const list = await page(caller.key, '?limit=1000');
      expect(ids(list.data)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(list.data.filter((event) => event.type === 'resource.created')).toHaveLength(20);
    });
  });

  describe('resource events', () => {
    it('carry the resource after the change, the changed fields, and the deleted resource as it was', async () => {
      const caller = await app().account(['events:read', 'resources:write']);
      const created = await app().request({
        method: 'POST',
        url: '/api/v1/resources',
        key: caller.key,
        body: { name: 'Kitchen', type: 'sensor', state: 20.5, attributes: { unit_of_measurement: '°C' }, tags: ['home'] },
      });
      expect(created.status).toBe(201);
      const id = created.json.id as string;
      const updated = await app().request({ method: 'PATCH', url: `/api/v1/resources/${id}`, key: caller.key, body: { state: 21, tags: ['home'] } });
      expect(updated.status).toBe(200);
      const removed = await app().request({ method: 'DELETE', url: `/api/v1/resources/${id}`, key: caller.key });
      expect(removed.status).toBe(204);

      const list = await page(caller.key);
      expect(list.data).toEqual([
        { id: 1, type: 'resource.created', data: { resource: created.json }, createdAt: expect.stringMatching(ISO_MS) },
        { id: 2, type: 'resource.updated', data: { resource: updated.json, changed: ['state'] }, createdAt: expect.stringMatching(ISO_MS) },
        { id: 3, type: 'resource.deleted', data: { resource: updated.json }, createdAt: expect.stringMatching(ISO_MS) },
      ]);
    });
  });

  describe('GET /api/v1/events', () => {
    it('answers an account without events with an empty page at cursor 0', async () => {
      const caller = await app().account(['events:read']);
      expect(await page(caller.key)).toEqual({ data: [], cursor: 0, hasMore: false, oldestCursor: 0 });
    });

    it('pages with after (default 0) and limit (default 100), cursor = last returned id', async () => {
      const caller = await app().account(['events:write', 'events:read']);
      for (let i = 0; i < 120; i++) await published(caller.key, 'custom.p', { i });

      const first = await page(caller.key);
      expect(ids(first.data)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      expect(first).toMatchObject({ cursor: 100, hasMore: true, oldestCursor: 0 });

      const second = await page(caller.key, `?after=${first.cursor}`);
      expect(ids(second.data)).toEqual(Array.from({ length: 20 }, (_, i) => i + 101));
      expect(second).toMatchObject({ cursor: 120, hasMore: false, oldestCursor: 0 });

      const small = await page(caller.key, '?after=5&limit=3');
      expect(ids(small.data)).toEqual([6, 7, 8]);
      expect(small).toMatchObject({ cursor: 8, hasMore: true });

      // Exactly at the end: the last page has no more.
      const last = await page(caller.key, '?after=117&limit=3');
      expect(ids(last.data)).toEqual([118, 119, 120]);
      expect(last).toMatchObject({ cursor: 120, hasMore: false });

      const one = await page(caller.key, '?limit=1');
      expect(ids(one.data)).toEqual([1]);
      const max = await page(caller.key, '?limit=1000');
      expect(max.data).toHaveLength(120);

      // Past the newest id: nothing, and the cursor stays where the caller is.
      const beyond = await page(caller.key, '?after=500');
      expect(beyond).toEqual({ data: [], cursor: 500, hasMore: false, oldestCursor: 0 });
      // At the newest id: nothing, cursor = newest.
      expect(await page(caller.key, '?after=120')).toEqual({ data: [], cursor: 120, hasMore: false, oldestCursor: 0 });
    });

    it.each([['limit=0'], ['limit=1001'], ['limit=-1'], ['limit=abc'], ['limit=1.5'], ['after=-1'], ['after=abc'], ['after=1.5'], ['type=']])(
      'rejects %s with 400',
      async (query) => {
        const caller = await app().account(['events:read']);
        expectError(await poll(caller.key, `?${query}`), 400, 'invalid_request');
      },
    );

    describe('type filter', () => {
      let caller: TestAccount;
      // 1 resource.created, 2 custom.a, 3 custom.b, 4 resource.updated, 5 custom.a, 6 custom.ab,
      // 7 custom.a_b, 8 custom.aXb, 9 resource.deleted, 10 custom.z
      async function seed(): Promise<void> {
        caller = await app().account(['events:write', 'events:read', 'resources:write']);
        const created = await app().request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'r', type: 'switch', state: false } });
        expect(created.status).toBe(201);
        await published(caller.key, 'custom.a');
        await published(caller.key, 'custom.b');
        const patched = await app().request({ method: 'PATCH', url: `/api/v1/resources/${created.json.id}`, key: caller.key, body: { state: true } });
        expect(patched.status).toBe(200);
        await published(caller.key, 'custom.a');
        await published(caller.key, 'custom.ab');
        await published(caller.key, 'custom.a_b');
        await published(caller.key, 'custom.aXb');
        const deleted = await app().request({ method: 'DELETE', url: `/api/v1/resources/${created.json.id}`, key: caller.key });
        expect(deleted.status).toBe(204);
        await published(caller.key, 'custom.z');
      }

      it('matches an exact type only', async () => {
        await seed();
        const exact = await page(caller.key, '?type=custom.a');
        expect(ids(exact.data)).toEqual([2, 5]);
        expect(exact.data.every((event) => event.type === 'custom.a')).toBe(true);
        expect(exact).toMatchObject({ cursor: 5, hasMore: false });

        // `_` is a literal character, not a wildcard.
        expect(ids((await page(caller.key, '?type=custom.a_b')).data)).toEqual([7]);
        expect(ids((await page(caller.key, '?type=resource.updated')).data)).toEqual([4]);
      });

      it('matches a prefix written with .*', async () => {
        await seed();
        const custom = await page(caller.key, '?type=custom.*');
        expect(ids(custom.data)).toEqual([2, 3, 5, 6, 7, 8, 10]);
        expect(custom).toMatchObject({ cursor: 10, hasMore: false });

        const resource = await page(caller.key, '?type=resource.*');
        expect(ids(resource.data)).toEqual([1, 4, 9]);
        expect(resource.data.map((event) => event.type)).toEqual(['resource.created', 'resource.updated', 'resource.deleted']);
        expect(resource).toMatchObject({ cursor: 9, hasMore: false });

        // Only a trailing `.*` makes a prefix; a `*` anywhere else would match nothing, so it is refused.
        expect(ids((await page(caller.key, '?type=custom.a_b.')).data)).toEqual([]);
      });

      it.each(['custom.a_*', 'custom.a*', 'resource*', '*', '.*', '*.created', 'custom.*.x', 'custom.%', 'custom.a b', 'custom.é'])(
        'refuses ?type=%s with 400 naming /type and the form a filter takes, on the page and the stream',
        async (type) => {
          const reader = await app().account(['events:read']);
          for (const path of ['/api/v1/events', '/api/v1/events/stream']) {
            const response = await app().request({ url: `${path}?type=${encodeURIComponent(type)}`, key: reader.key });
            expectError(response, 400, 'invalid_request');
            expect(response.json.error.details).toEqual([{ path: '/type', message: expect.stringContaining('a prefix ending in `.*`') }]);
          }
        },
      );

      it('compares prefixes literally (`_` is no wildcard)', async () => {
        const own = await app().account(['events:write', 'events:read']);
        await published(own.key, 'custom.a_b.one');
        await published(own.key, 'custom.aXb.one');
        await published(own.key, 'custom.a_b');
        await published(own.key, 'custom.a_b.two');
        expect(ids((await page(own.key, '?type=custom.a_b.*')).data)).toEqual([1, 4]);
        // `%` is no character of a type: refused rather than matched literally.
        expectError(await poll(own.key, `?type=${encodeURIComponent('custom.%.*')}`), 400, 'invalid_request');
        expect(ids((await page(own.key, '?type=custom.a.b.*')).data)).toEqual([]);
        expect(ids((await page(own.key, '?type=custom.a_b.one')).data)).toEqual([1]);
      });

      it('has hasMore respect the filter', async () => {
        await seed();
        const first = await page(caller.key, '?type=custom.a&limit=1');
        expect(ids(first.data)).toEqual([2]);
        expect(first).toMatchObject({ cursor: 2, hasMore: true });
        const second = await page(caller.key, `?type=custom.a&limit=1&after=${first.cursor}`);
        expect(ids(second.data)).toEqual([5]);
        // Events 6-10 exist, but none is a custom.a.
        expect(second).toMatchObject({ cursor: 5, hasMore: false });
        const third = await page(caller.key, `?type=custom.a&limit=1&after=${second.cursor}`);
        expect(third.data).toEqual([]);
        expect(third).toMatchObject({ cursor: 10, hasMore: false });

        const resources = await page(caller.key, '?type=resource.*&limit=2');
        expect(ids(resources.data)).toEqual([1, 4]);
        expect(resources).toMatchObject({ cursor: 4, hasMore: true });
      });

      it('moves the cursor to the newest id when nothing matches, so a poll moves on', async () => {
        await seed();
        const none = await page(caller.key, '?type=schedule.executed');
        expect(none).toEqual({ data: [], cursor: 10, hasMore: false, oldestCursor: 0 });
        const nonePrefix = await page(caller.key, '?type=custom.nothing.*&after=3');
        expect(nonePrefix).toEqual({ data: [], cursor: 10, hasMore: false, oldestCursor: 0 });
        // `after` larger than the newest id wins.
        expect(await page(caller.key, '?type=schedule.executed&after=50')).toEqual({ data: [], cursor: 50, hasMore: false, oldestCursor: 0 });

        // A filtered poll loop reaches the end and then picks up only new matches.
        await published(caller.key, 'custom.other');
        await published(caller.key, 'custom.schedule.executed');
        const next = await page(caller.key, `?type=custom.schedule.executed&after=${none.cursor}`);
        expect(ids(next.data)).toEqual([12]);
        expect(next.cursor).toBe(12);
      });
    });

    it('needs events:read (403) and a credential (401)', async () => {
      const writer = await app().account(['events:write', 'resources:read']);
      const forbidden = await poll(writer.key);
      expectError(forbidden, 403, 'insufficient_scope');
      expect(forbidden.headers['www-authenticate']).toContain('scope="events:read"');
      const anonymous = await app().request({ url: '/api/v1/events' });
      expectError(anonymous, 401, 'unauthorized');
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="devdata"');
    });
  });

  describe('GET /api/v1/events/stream refusals (before any stream starts)', () => {
    it('needs events:read (403) and a credential (401)', async () => {
      const writer = await app().account(['events:write']);
      const forbidden = await app().request({ url: '/api/v1/events/stream', key: writer.key });
      expectError(forbidden, 403, 'insufficient_scope');
      expect(forbidden.headers['www-authenticate']).toContain('scope="events:read"');
      const anonymous = await app().request({ url: '/api/v1/events/stream' });
      expectError(anonymous, 401, 'unauthorized');
      const bogus = await app().request({ url: '/api/v1/events/stream', key: 'ddk_unknown' });
      expectError(bogus, 401, 'unauthorized');
    });

    it('rejects a malformed after, type or Last-Event-ID with 400', async () => {
      const reader = await app().account(['events:read']);
      for (const request of [
        { url: '/api/v1/events/stream?after=-1' },
        { url: '/api/v1/events/stream?after=x' },
        { url: '/api/v1/events/stream?type=' },
        { url: '/api/v1/events/stream', headers: { 'last-event-id': 'abc' } },
        { url: '/api/v1/events/stream', headers: { 'last-event-id': '-3' } },
      ]) {
        expectError(await app().request({ ...request, key: reader.key }), 400, 'invalid_request');
      }
    });
  });

  describe('isolation', () => {
    it('never shows one account the events of another', async () => {
      const a = await app().account(['events:write', 'events:read', 'resources:write']);
      const b = await app().account(['events:write', 'events:read']);
      await published(a.key, 'custom.secret', { owner: 'a' });
      await app().request({ method: 'POST', url: '/api/v1/resources', key: a.key, body: { name: 'a-only', type: 'text', state: 'x' } });
      await published(a.key, 'custom.secret', { owner: 'a' });

      const empty = await page(b.key);
      expect(empty).toEqual({ data: [], cursor: 0, hasMore: false, oldestCursor: 0 });
      expect(await page(b.key, '?type=custom.*')).toEqual({ data: [], cursor: 0, hasMore: false, oldestCursor: 0 });
      expect(await page(b.key, '?type=resource.*')).toEqual({ data: [], cursor: 0, hasMore: false, oldestCursor: 0 });

      const own = await published(b.key, 'custom.mine', { owner: 'b' });
      expect(own.id).toBe(1);
      const list = await page(b.key);
      expect(list.data).toEqual([own]);
      expect(JSON.stringify(list)).not.toContain('"owner":"a"');
      expect(ids((await page(a.key)).data)).toEqual([1, 2, 3]);
    });
  });
});

describe('event retention (EVENT_RETENTION=5)', () => {
  it('expires cursors by the retention rule (410) and prunes old rows physically', async () => {
    const t = await TestApp.start({ env: { EVENT_RETENTION: '5' } });
    try {
      const { key, accountId } = await t.account(['events:write', 'events:read']);
      const other = await t.account(['events:write', 'events:read']);
      for (let i = 1; i <= 12; i++) {
        const response = await t.request({ method: 'POST', url: '/api/v1/events', key, body: { type: 'custom.r', data: { i } } });
        expect(response.status).toBe(201);
        expect(response.json.id).toBe(i);
      }
      for (let i = 1; i <= 3; i++) {
        expect((await t.request({ method: 'POST', url: '/api/v1/events', key: other.key, body: { type: 'custom.o', data: { i } } })).status).toBe(201);
      }

      // Before pruning: the answer already follows the rule, not the rows present.
      const checkAnswers = async () => {
        const latest = await t.request({ url: '/api/v1/events?after=11', key });
        expect(latest.status).toBe(200);
        expect(latest.json).toMatchObject({ cursor: 12, hasMore: false, oldestCursor: 7 });

        for (const after of [0, 3, 6]) {
          const expired = await t.request({ url: `/api/v1/events?after=${after}`, key });
          expectError(expired, 410, 'cursor_expired');
        }
        const expiredNoAfter = await t.request({ url: '/api/v1/events', key });
        expectError(expiredNoAfter, 410, 'cursor_expired');
        const expiredFiltered = await t.request({ url: '/api/v1/events?after=6&type=custom.nothing', key });
        expectError(expiredFiltered, 410, 'cursor_expired');

        const ok = await t.request({ url: '/api/v1/events?after=7', key });
        expect(ok.status, ok.body).toBe(200);
        expect(ok.json.data.map((event: EventBody) => event.id)).toEqual([8, 9, 10, 11, 12]);
        expect(ok.json.data.map((event: EventBody) => event.data)).toEqual([{ i: 8 }, { i: 9 }, { i: 10 }, { i: 11 }, { i: 12 }]);
        expect(ok.json).toMatchObject({ cursor: 12, hasMore: false, oldestCursor: 7 });

        // The stream refuses an expired cursor with 410 before any stream starts, in JSON.
        for (const request of [
          { url: '/api/v1/events/stream?after=3' },
          { url: '/api/v1/events/stream?after=6' },
          { url: '/api/v1/events/stream?after=20', headers: { 'last-event-id': '2' } },
        ]) {
          const stream = await t.request({ ...request, key });
          expectError(stream, 410, 'cursor_expired');
          expect(stream.headers['content-type']).toMatch(/^application\/json/);
        }

        // The other account, with fewer events than the retention, is untouched.
        const otherPage = await t.request({ url: '/api/v1/events', key: other.key });
        expect(otherPage.status).toBe(200);
        expect(otherPage.json).toMatchObject({ cursor: 3, oldestCursor: 0 });
        expect(otherPage.json.data).toHaveLength(3);
      };

      const storedIds = async (account: string) =>
        (await t.context.storage.db.selectFrom('events').select('id').where('account_id', '=', account).orderBy('id').execute()).map((row) => Number(row.id));

      await checkAnswers();

      await t.context.services.events.prune();
      expect(await storedIds(accountId)).toEqual([8, 9, 10, 11, 12]);
      expect(await storedIds(other.accountId)).toEqual([1, 2, 3]);
      await checkAnswers();

      // The window slides with new events; pruning again deletes the next ones.
      const thirteenth = await t.request({ method: 'POST', url: '/api/v1/events', key, body: { type: 'custom.r', data: { i: 13 } } });
      expect(thirteenth.json.id).toBe(13);
      expectError(await t.request({ url: '/api/v1/events?after=7', key }), 410, 'cursor_expired');
      const at8 = await t.request({ url: '/api/v1/events?after=8', key });
      expect(at8.status).toBe(200);
      expect(at8.json).toMatchObject({ cursor: 13, oldestCursor: 8 });
      expect(at8.json.data.map((event: EventBody) => event.id)).toEqual([9, 10, 11, 12, 13]);
      await t.context.services.events.prune();
      expect(await storedIds(accountId)).toEqual([9, 10, 11, 12, 13]);
    } finally {
      await t.close();
    }
  });
});
