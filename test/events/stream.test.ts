// GET /api/v1/events/stream over a real socket, read by a real SSE client (the `eventsource`
// package) and by plain fetch: replay then live with no gap or duplicate at the seam,
// Last-Event-ID, type filters, headers, the per-account cap, heartbeats and shutdown (docs/decisions.md: "Events and streams").
import Fastify from 'fastify';
import { EventSource } from 'eventsource';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventRoutes, eventSchemas } from '../../src/areas/events/routes.js';
import { StreamHub } from '../../src/areas/events/stream.js';
import { resourceSchemas } from '../../src/areas/resources/routes.js';
import { scheduleSchemas } from '../../src/areas/schedules/routes.js';
import { ErrorSchema } from '../../src/platform/schemas.js';
import { installValidation } from '../../src/platform/validation.js';
import { TestApp, useTestApp, type TestAccount, type TestResponse } from '../support/app.js';
import { sleep } from '../support/wait.js';

interface EventBody {
  id: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: string;
}

interface Received {
  /** The SSE `id` field as the client recorded it. */
  lastEventId: string;
  /** The SSE `event` field (the listener it was dispatched to). */
  type: string;
  data: EventBody;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Waits for a condition; the deadline only catches a hang, on a busy machine too. */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Cleanup of every stream a test opened, even when it fails half way. */
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** An EventSource with the key in a header; named events are dispatched only to named listeners. */
function subscribe(url: string, key: string, types: string[], extraHeaders: Record<string, string> = {}) {
  const received: Received[] = [];
  const unnamed: unknown[] = [];
  const errors: Array<{ code: number | undefined; message: string | undefined; readyState: number }> = [];
  const source = new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...extraHeaders, ...init?.headers, Authorization: `Bearer ${key}` } }),
  });
  cleanups.push(() => source.close());
  for (const type of types) {
    source.addEventListener(type, (event: MessageEvent) => {
      received.push({ lastEventId: event.lastEventId, type: event.type, data: JSON.parse(String(event.data)) as EventBody });
    });
  }
  source.addEventListener('message', (event: MessageEvent) => unnamed.push(event.data));
  source.addEventListener('error', (event) => errors.push({ code: event.code, message: event.message, readyState: source.readyState }));
  const opened = new Promise<void>((resolve, reject) => {
    source.addEventListener('open', () => resolve());
    source.addEventListener('error', (event) => reject(new Error(`stream failed to open: ${event.code} ${event.message}`)));
  });
  opened.catch(() => undefined);
  return {
    source,
    received,
    unnamed,
    errors,
    opened,
    ids: () => received.map((message) => message.data.id),
    waitForId: (id: number, timeoutMs?: number) => waitFor(() => received.some((message) => message.data.id === id), `event ${id}`, timeoutMs),
  };
}

interface SseMessage {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/** A stream read with plain fetch, parsed by hand: messages, comment lines, and its end. */
async function openRaw(url: string, key: string | undefined, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    signal: controller.signal,
  });
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  /** Ids sent without data: the opening position and a filtered stream's heartbeats. */
  const positions: string[] = [];
  let raw = '';
  let ended = false;
  const close = () => controller.abort();
  cleanups.push(close);
  const pump = (async () => {
    if (response.status !== 200 || !response.body) return;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const text = decoder.decode(value, { stream: true });
        raw += text;
        buffer += text;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const message: SseMessage = { id: undefined, event: undefined, data: '' };
          let isMessage = false;
          const dataLines: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line);
            else {
              const colon = line.indexOf(':');
              const field = colon < 0 ? line : line.slice(0, colon);
              const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
              isMessage = true;
              if (field === 'id') message.id = value;
              else if (field === 'event') message.event = value;
              else if (field === 'data') dataLines.push(value);
            }
          }
          message.data = dataLines.join('\n');
          // A block without data (the stream's opening id) sets Last-Event-ID and dispatches nothing.
          if (isMessage && dataLines.length > 0) messages.push(message);
          else if (message.id !== undefined) positions.push(message.id);
        }
      }
    } catch {
      // Aborted by the test.
    } finally {
      ended = true;
    }
  })();
  return {
    response,
    messages,
    comments,
    positions,
    raw: () => raw,
    ended: () => ended,
    pump,
    close,
    ids: () => messages.map((message) => Number(message.id)),
  };
}

describe('event stream', () => {
  const app = useTestApp();
  let base: string;

  beforeAll(async () => {
    base = await app().listen();
  });

  async function publish(key: string, type: string, data: Record<string, unknown> = {}): Promise<EventBody> {
    const response = await app().request({ method: 'POST', url: '/api/v1/events', key, body: { type, data } });
    expect(response.status, response.body).toBe(201);
    return response.json as EventBody;
  }

  async function createResource(key: string, name: string): Promise<{ id: string }> {
    const response = await app().request({ method: 'POST', url: '/api/v1/resources', key, body: { name, type: 'sensor', state: 0 } });
    expect(response.status, response.body).toBe(201);
    return response.json;
  }

  async function allEvents(key: string, after = 0, type?: string): Promise<EventBody[]> {
    const events: EventBody[] = [];
    for (;;) {
      const response = await app().request({ url: `/api/v1/events?after=${after}&limit=1000${type ? `&type=${type}` : ''}`, key });
      expect(response.status, response.body).toBe(200);
      events.push(...(response.json.data as EventBody[]));
      after = response.json.cursor;
      if (!response.json.hasMore) return events;
    }
  }

  function expectMessagesMatchLog(received: Received[], log: EventBody[]): void {
    expect(received.map((message) => message.data.id)).toEqual(log.map((event) => event.id));
    received.forEach((message, index) => {
      const event = log[index] as EventBody;
      expect(message.lastEventId).toBe(String(event.id));
      expect(message.type).toBe(event.type);
      expect(message.data).toEqual(event);
    });
  }

  // Two rounds: the races at the seam depend on timing, so each round opens its streams while
  // writers are already busy (events commit during subscribe, the newest-id read and the replay),
  // then adds a burst of concurrent writes right after the streams are open.
  it.each([1, 2])('replays from ?after, then follows live writers with no gap and no duplicate at the seam (round %i)', async () => {
    const caller = await app().account();
    const resources: Array<{ id: string }> = [];
    for (let i = 0; i < 5; i++) resources.push(await createResource(caller.key, `r${i}`));
    for (let i = 0; i < 45; i++) await publish(caller.key, 'custom.seed', { i });

    const write = (n: number): Promise<TestResponse> =>
      n % 4 === 3
        ? app().request({ method: 'PATCH', url: `/api/v1/resources/${resources[n % 5]?.id}`, key: caller.key, body: { state: n } })
        : app().request({ method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.live', data: { n } } });
    const statuses: number[] = [];
    // Four chains of 25 sequential writes, running while the streams connect.
    const chains = Promise.all(
      [0, 1, 2, 3].map(async (chain) => {
        for (let step = 0; step < 25; step++) statuses.push((await write(chain * 100 + step)).status);
      }),
    );

    const types = ['custom.seed', 'custom.live', 'resource.created', 'resource.updated', 'resource.deleted'];
    const stream = subscribe(`${base}/api/v1/events/stream?after=10`, caller.key, types);
    const late = subscribe(`${base}/api/v1/events/stream?after=45`, caller.key, types);
    await Promise.all([stream.opened, late.opened]);

    // More writers start as soon as the streams are open, while they may still be replaying.
    const burst = await Promise.all(Array.from({ length: 80 }, (_, i) => write(1000 + i)));
    await chains;
    for (const status of [...statuses, ...burst.map((response) => response.status)]) expect(status).toBeLessThan(300);

    const last = 50 + 100 + 80;
    await Promise.all([stream.waitForId(last), late.waitForId(last)]);
    await sleep(100); // anything repeated after the last id would show up here

    const log = await allEvents(caller.key, 10);
    expect(log.map((event) => event.id)).toEqual(range(11, last));
    expect(stream.ids()).toEqual(range(11, last));
    expectMessagesMatchLog(stream.received, log);
    expectMessagesMatchLog(
      late.received,
      log.filter((event) => event.id > 45),
    );
    expect(stream.received.filter((message) => message.type === 'resource.updated')).toHaveLength(
      log.filter((event) => event.type === 'resource.updated').length,
    );
    expect(stream.received.filter((message) => message.type === 'resource.updated').length).toBeGreaterThan(20);
    expect(stream.unnamed).toEqual([]);
    expect(stream.errors).toEqual([]);
  });

  it('stays exact when notifications repeat, arrive late and out of order, or get lost', async () => {
    // The bus only hints that events exist (docs/decisions.md: "Events and streams"; across processes notifications can be
    // repeated, reordered or lost): the stream must still send every id once, in order.
    const caller = await app().account();
    const resource = await createResource(caller.key, 'flaky');
    for (let i = 0; i < 20; i++) await publish(caller.key, 'custom.seed', { i });
    const bus = app().context.services.events.bus;
    const original = bus.publish.bind(bus);
    let calls = 0;
    bus.publish = (accountId, events) => {
      if (accountId !== caller.accountId) return original(accountId, events);
      const n = ++calls;
      if (n % 7 === 0) return; // lost
      if (n % 3 === 0) {
        setTimeout(() => original(accountId, events), 1 + (n % 4) * 3); // late, overtaken by later ones
        return;
      }
      original(accountId, events);
      if (n % 2 === 0) setTimeout(() => original(accountId, events), 0); // repeated
    };
    const types = ['custom.seed', 'custom.live', 'custom.end', 'resource.created', 'resource.updated'];
    let last = 0;
    let stream: ReturnType<typeof subscribe> | undefined;
    try {
      stream = subscribe(`${base}/api/v1/events/stream?after=5`, caller.key, types);
      await stream.opened;
      // In waves of four at once: on PostgreSQL writes waiting together commit together, and the
      // waves keep the commits (and so the flaky announcements) many.
      for (let wave = 0; wave < 30; wave++) {
        const writes = await Promise.all(
          Array.from({ length: 4 }, (_, index) => {
            const i = wave * 4 + index;
            return i % 5 === 4
              ? app().request({ method: 'PATCH', url: `/api/v1/resources/${resource.id}`, key: caller.key, body: { state: i } })
              : app().request({ method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.live', data: { i } } });
          }),
        );
        for (const response of writes) expect(response.status, response.body).toBeLessThan(300);
      }
    } finally {
      bus.publish = original;
    }
    // A last event announced normally: whatever was lost before it is read from the log.
    last = (await publish(caller.key, 'custom.end', {})).id;
    expect(last).toBe(21 + 120 + 1);
    await stream.waitForId(last);
    await sleep(50); // late and repeated notifications have all fired by now
    // Each commit is one call.
    expect(calls).toBeGreaterThan(20);
    const log = await allEvents(caller.key, 5);
    expect(stream.ids()).toEqual(range(6, last));
    expectMessagesMatchLog(stream.received, log);
  });

  it('ends a stream whose re-read of the log fails, without an unhandled rejection, and the client can resume', async () => {
    const caller = await app().account(['events:read', 'events:write']);
    const { eventReads: events } = app().context.services;
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    const originalRead = events.read.bind(events);
    try {
      const raw = await openRaw(`${base}/api/v1/events/stream`, caller.key);
      expect(raw.response.status).toBe(200);
      await sleep(50); // the stream is live
      // A notification that arrives ahead of a missing id makes the stream re-read the log, and
      // that read fails (a storage hiccup).
      events.read = async (accountId, query) => {
        if (accountId === caller.accountId) throw new Error('storage unavailable (injected by the test)');
        return originalRead(accountId, query);
      };
      events.bus.publish(caller.accountId, [{ id: 2, type: 'custom.ahead', data: {}, createdAt: new Date().toISOString() }]);
      await waitFor(() => raw.ended(), 'the failed stream to end');
      expect(raw.ids()).toEqual([]);
    } finally {
      events.read = originalRead;
      await sleep(50);
      process.off('unhandledRejection', onRejection);
    }
    expect(rejections).toEqual([]);

    // The server carries on; the client reconnects with Last-Event-ID and loses nothing.
    await publish(caller.key, 'custom.a', { n: 1 });
    await publish(caller.key, 'custom.b', { n: 2 });
    const resumed = await openRaw(`${base}/api/v1/events/stream`, caller.key, { 'last-event-id': '0' });
    expect(resumed.response.status).toBe(200);
    await waitFor(() => resumed.ids().includes(2), 'the replay after reconnecting');
    expect(resumed.ids()).toEqual([1, 2]);
  });

  it('resumes after Last-Event-ID, which wins over ?after', async () => {
    const caller = await app().account(['events:read', 'events:write']);
    for (let i = 1; i <= 30; i++) await publish(caller.key, 'custom.n', { i });

    const raw = await openRaw(`${base}/api/v1/events/stream?after=5`, caller.key, { 'last-event-id': '20' });
    expect(raw.response.status).toBe(200);
    await waitFor(() => raw.ids().includes(30), 'event 30 (raw)');
    expect(raw.ids()).toEqual(range(21, 30));
    for (const message of raw.messages) {
      expect(message.event).toBe('custom.n');
      expect(JSON.parse(message.data)).toMatchObject({ id: Number(message.id), type: 'custom.n', data: { i: Number(message.id) } });
    }
    raw.close();

    // Even when ?after is ahead of it: a reconnecting client keeps its original URL.
    const behind = await openRaw(`${base}/api/v1/events/stream?after=25`, caller.key, { 'last-event-id': '20' });
    await waitFor(() => behind.ids().includes(30), 'event 30 (after=25)');
    expect(behind.ids()).toEqual(range(21, 30));
    behind.close();

    // The same through the EventSource client.
    const source = subscribe(`${base}/api/v1/events/stream?after=5`, caller.key, ['custom.n'], { 'Last-Event-ID': '20' });
    await source.opened;
    const live = await publish(caller.key, 'custom.n', { i: 31 });
    await source.waitForId(live.id);
    expect(source.ids()).toEqual(range(21, 31));
    expect(source.received.at(-1)?.lastEventId).toBe('31');

    // An empty Last-Event-ID falls back to ?after.
    const empty = await openRaw(`${base}/api/v1/events/stream?after=28`, caller.key, { 'last-event-id': '' });
    await waitFor(() => empty.ids().includes(31), 'event 31 (empty Last-Event-ID)');
    expect(empty.ids()).toEqual([29, 30, 31]);
  });

  it('starts at the newest event without a cursor: only new events arrive', async () => {
    const caller = await app().account(['events:read', 'events:write']);
    for (let i = 1; i <= 5; i++) await publish(caller.key, 'custom.old', { i });
    const source = subscribe(`${base}/api/v1/events/stream`, caller.key, ['custom.old', 'custom.new']);
    await source.opened;
    await publish(caller.key, 'custom.new', { i: 6 });
    await publish(caller.key, 'custom.new', { i: 7 });
    await source.waitForId(7);
    await sleep(50);
    expect(source.ids()).toEqual([6, 7]);
    expect(source.received.map((message) => message.type)).toEqual(['custom.new', 'custom.new']);
  });

  it('names its starting position at once, so a client without a cursor can resume before its first event', async () => {
    const caller = await app().account(['events:read', 'events:write']);
    for (let i = 1; i <= 3; i++) await publish(caller.key, 'custom.old', { i });
    const first = await openRaw(`${base}/api/v1/events/stream`, caller.key);
    await waitFor(() => first.positions.length > 0, 'the opening id');
    expect(first.positions).toEqual(['3']);
    expect(first.messages).toEqual([]);
    first.close();
    // Written while no stream was open: a client resuming from the opening id misses nothing.
    await publish(caller.key, 'custom.gap', { i: 4 });
    const resumed = await openRaw(`${base}/api/v1/events/stream`, caller.key, { 'last-event-id': first.positions[0] as string });
    await waitFor(() => resumed.ids().includes(4), 'the event written in between');
    expect(resumed.positions).toEqual(['3']);
    expect(resumed.ids()).toEqual([4]);
    resumed.close();
  });

  it('delivers only matching events with ?type, across replay and live', async () => {
    const caller = await app().account();
    const resource = await createResource(caller.key, 'lamp');
    for (let i = 0; i < 10; i++) {
      await publish(caller.key, i % 2 === 0 ? 'custom.even' : 'custom.odd', { i });
      const patched = await app().request({ method: 'PATCH', url: `/api/v1/resources/${resource.id}`, key: caller.key, body: { state: i } });
      expect(patched.status).toBe(200);
    }
    const types = ['custom.even', 'custom.odd', 'custom.end', 'resource.created', 'resource.updated'];
    const custom = subscribe(`${base}/api/v1/events/stream?after=0&type=custom.*`, caller.key, types);
    const resourceOnly = subscribe(`${base}/api/v1/events/stream?after=0&type=resource.updated`, caller.key, types);
    await Promise.all([custom.opened, resourceOnly.opened]);

    const writes = [];
    for (let i = 10; i < 30; i++) {
      writes.push(publish(caller.key, i % 2 === 0 ? 'custom.even' : 'custom.odd', { i }));
      writes.push(app().request({ method: 'PATCH', url: `/api/v1/resources/${resource.id}`, key: caller.key, body: { state: i } }));
    }
    await Promise.all(writes);
    const end = await publish(caller.key, 'custom.end', {});
    const lastUpdate = await app().request({ method: 'PATCH', url: `/api/v1/resources/${resource.id}`, key: caller.key, body: { state: -1 } });
    const lastUpdateId = end.id + 1;
    expect(lastUpdate.status).toBe(200);

    await custom.waitForId(end.id);
    await resourceOnly.waitForId(lastUpdateId);
    await sleep(50);

    const log = await allEvents(caller.key);
    expectMessagesMatchLog(
      custom.received,
      log.filter((event) => event.type.startsWith('custom.')),
    );
    expectMessagesMatchLog(
      resourceOnly.received,
      log.filter((event) => event.type === 'resource.updated'),
    );
    expect(custom.received).toHaveLength(31);
    expect(resourceOnly.received).toHaveLength(31);
  });

  it('answers with text/event-stream, X-Request-Id and the RateLimit headers', async () => {
    const caller = await app().account(['events:read']);
    const given = await openRaw(`${base}/api/v1/events/stream`, caller.key, { 'x-request-id': 'stream-check-1' });
    expect(given.response.status).toBe(200);
    const headers = given.response.headers;
    expect(headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(headers.get('x-request-id')).toBe('stream-check-1');
    expect(headers.get('ratelimit-limit')).toMatch(/^\d+$/);
    expect(headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
    expect(headers.get('ratelimit-reset')).toMatch(/^\d+$/);
    expect(Number(headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
    expect(headers.get('cache-control')).toContain('no-store');
    given.close();

    const generated = await openRaw(`${base}/api/v1/events/stream`, caller.key);
    expect(generated.response.headers.get('x-request-id')).toMatch(/^\S{1,128}$/);
    expect(generated.response.headers.get('x-request-id')).not.toBe('stream-check-1');
    // CORS: any origin may read the stream; the headers are exposed.
    const cors = await openRaw(`${base}/api/v1/events/stream`, caller.key, { origin: 'https://example.com' });
    expect(cors.response.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('refuses a missing credential (401) and scope (403) with a JSON error before streaming', async () => {
    const writer = await app().account(['events:write']);
    const anonymous = await openRaw(`${base}/api/v1/events/stream`, undefined);
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(anonymous.response.headers.get('www-authenticate')).toBe('Bearer realm="devdata"');
    expect(((await anonymous.response.json()) as { error: { code: string } }).error.code).toBe('unauthorized');

    const forbidden = await openRaw(`${base}/api/v1/events/stream`, writer.key);
    expect(forbidden.response.status).toBe(403);
    expect(((await forbidden.response.json()) as { error: { code: string } }).error.code).toBe('insufficient_scope');

    const source = subscribe(`${base}/api/v1/events/stream`, writer.key, []);
    await expect(source.opened).rejects.toThrow();
    expect(source.errors[0]?.code).toBe(403);
    expect(source.source.readyState).toBe(EventSource.CLOSED);
  });

  it('never shows one account the events of another', async () => {
    const a = await app().account(['events:read', 'events:write']);
    const b = await app().account(['events:read', 'events:write']);
    await publish(a.key, 'custom.secret', { owner: 'a' });
    const types = ['custom.secret', 'custom.mine'];
    const streamB = subscribe(`${base}/api/v1/events/stream?after=0`, b.key, types);
    const streamA = subscribe(`${base}/api/v1/events/stream?after=0`, a.key, types);
    await Promise.all([streamA.opened, streamB.opened]);
    await Promise.all([...range(1, 5).map((i) => publish(a.key, 'custom.secret', { owner: 'a', i })), publish(b.key, 'custom.mine', { owner: 'b' })]);
    await publish(b.key, 'custom.mine', { owner: 'b' });
    await Promise.all([streamB.waitForId(2), streamA.waitForId(6)]);
    await sleep(100);
    expect(streamB.ids()).toEqual([1, 2]);
    expect(streamB.received.every((message) => message.data.data.owner === 'b')).toBe(true);
    expect(streamA.ids()).toEqual(range(1, 6));
    expect(streamA.received.every((message) => message.data.data.owner === 'a')).toBe(true);
  });
});

describe('event stream with EVENT_RETENTION=5', () => {
  const app = useTestApp({ env: { EVENT_RETENTION: '5' } });

  it('refuses an expired cursor with 410 before the stream starts', async () => {
    const base = await app().listen();
    const caller = await app().account(['events:read', 'events:write']);
    for (let i = 1; i <= 12; i++) {
      expect((await app().request({ method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.r', data: { i } } })).status).toBe(201);
    }
    for (const [query, headers] of [
      ['?after=3', {}],
      ['?after=6', {}],
      ['?after=0', {}],
      ['?after=12', { 'last-event-id': '1' }],
    ] as Array<[string, Record<string, string>]>) {
      const refused = await openRaw(`${base}/api/v1/events/stream${query}`, caller.key, headers);
      expect(refused.response.status).toBe(410);
      expect(refused.response.headers.get('content-type')).toMatch(/^application\/json/);
      expect(refused.response.headers.get('x-request-id')).toEqual(expect.any(String));
      const body = (await refused.response.json()) as { error: { code: string; requestId: string } };
      expect(body.error.code).toBe('cursor_expired');
      expect(body.error.requestId).toBe(refused.response.headers.get('x-request-id'));
    }

    // An EventSource sees the failure and does not reconnect.
    const source = subscribe(`${base}/api/v1/events/stream?after=1`, caller.key, ['custom.r']);
    await expect(source.opened).rejects.toThrow();
    expect(source.errors[0]?.code).toBe(410);
    expect(source.source.readyState).toBe(EventSource.CLOSED);
    expect(source.received).toEqual([]);

    // The oldest cursor still served works.
    const ok = await openRaw(`${base}/api/v1/events/stream?after=7`, caller.key);
    expect(ok.response.status).toBe(200);
    await waitFor(() => ok.ids().includes(12), 'event 12');
    expect(ok.ids()).toEqual([8, 9, 10, 11, 12]);
  });
});

describe('event stream cap (STREAM_LIMIT_PER_ACCOUNT=2)', () => {
  const app = useTestApp({ env: { STREAM_LIMIT_PER_ACCOUNT: '2' } });

  it('allows two open streams per account, refuses a third with 429, and frees a slot on close', async () => {
    const base = await app().listen();
    const a: TestAccount = await app().account(['events:read', 'events:write']);
    const b: TestAccount = await app().account(['events:read']);
    const url = `${base}/api/v1/events/stream`;

    const first = await openRaw(url, a.key);
    const second = await openRaw(url, a.key);
    expect(first.response.status).toBe(200);
    expect(second.response.status).toBe(200);

    const third = await openRaw(url, a.key);
    expect(third.response.status).toBe(429);
    expect(third.response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(third.response.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(third.response.headers.get('x-request-id')).toEqual(expect.any(String));
    expect(third.response.headers.get('ratelimit-limit')).toMatch(/^\d+$/);
    const body = (await third.response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('rate_limited');

    // The other account is not affected.
    const other = await openRaw(url, b.key);
    expect(other.response.status).toBe(200);

    // The open streams still work.
    const event = await app().request({ method: 'POST', url: '/api/v1/events', key: a.key, body: { type: 'custom.ping', data: {} } });
    expect(event.status).toBe(201);
    await waitFor(() => first.ids().includes(event.json.id) && second.ids().includes(event.json.id), 'the ping on both streams');

    // Closing one frees its slot (the server notices the disconnect shortly).
    first.close();
    let reopened: Awaited<ReturnType<typeof openRaw>> | undefined;
    const deadline = Date.now() + 30_000;
    while (!reopened && Date.now() < deadline) {
      const attempt = await openRaw(url, a.key);
      if (attempt.response.status === 200) reopened = attempt;
      else {
        expect(attempt.response.status).toBe(429);
        await attempt.response.body?.cancel();
        await sleep(50);
      }
    }
    expect(reopened?.response.status).toBe(200);

    // Full again.
    const again = await openRaw(url, a.key);
    expect(again.response.status).toBe(429);
    await again.response.body?.cancel();

    // An EventSource refused by the cap sees the 429 and stops.
    const source = subscribe(url, a.key, []);
    await expect(source.opened).rejects.toThrow();
    expect(source.errors[0]?.code).toBe(429);
    expect(source.source.readyState).toBe(EventSource.CLOSED);
  });
});

describe('event stream heartbeat', () => {
  const app = useTestApp();

  it('writes a comment line on each heartbeat, between messages', async () => {
    // The app's heartbeat is 15 s; the same routes and hub with a 50 ms one show what is sent.
    const { accountId, key } = await app().account(['events:write', 'events:read']);
    const { events, eventReads } = app().context.services;
    const hub = new StreamHub(eventReads, 5, async (credentials) => new Set(credentials.map((credential) => credential.id)), 50);
    const server = Fastify({ logger: false });
    installValidation(server);
    // The event schemas refer to the Resource and ScheduleAction components, the routes' errors to Error.
    for (const schema of [ErrorSchema, ...resourceSchemas, ...scheduleSchemas, ...eventSchemas]) server.addSchema(schema);
    server.decorateRequest('credential', undefined);
    server.addHook('onRequest', async (request) => {
      request.credential = {
        kind: 'api_key',
        id: 'key_test',
        accountId,
        accountName: 'heartbeat',
        scopes: ['events:read'],
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
        rateLimitKey: 'key_test',
      };
    });
    server.addHook('preClose', async () => hub.closeAll());
    await server.register(eventRoutes, { events, reads: eventReads, streams: hub });
    try {
      const address = await server.listen({ port: 0, host: '127.0.0.1' });
      const stream = await openRaw(`${address}/api/v1/events/stream`, key);
      expect(stream.response.status).toBe(200);
      await waitFor(() => stream.comments.length >= 2, 'two heartbeats');
      expect(stream.comments.every((line) => line.startsWith(':'))).toBe(true);
      expect(stream.messages).toEqual([]);

      const published = await app().request({ method: 'POST', url: '/api/v1/events', key, body: { type: 'custom.beat', data: {} } });
      await waitFor(() => stream.ids().includes(published.json.id), 'the event after heartbeats');
      expect(stream.messages).toEqual([{ id: String(published.json.id), event: 'custom.beat', data: JSON.stringify(published.json) }]);
      // Every block of the stream is a comment or a message.
      for (const block of stream
        .raw()
        .split('\n\n')
        .filter((part) => part !== '')) {
        expect(block.startsWith(':') || block.startsWith('id: ')).toBe(true);
      }
    } finally {
      await server.close();
    }
  });
});

describe('event stream on shutdown', () => {
  it('ends open streams so that closing the app finishes promptly', async () => {
    const t = await TestApp.start();
    let closed = false;
    try {
      const base = await t.listen();
      const caller = await t.account(['events:read', 'events:write']);
      const source = subscribe(`${base}/api/v1/events/stream`, caller.key, ['custom.live']);
      const raw = await openRaw(`${base}/api/v1/events/stream`, caller.key);
      await source.opened;
      expect(raw.response.status).toBe(200);
      const event: TestResponse = await t.request({ method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.live', data: {} } });
      await source.waitForId(event.json.id);
      await waitFor(() => raw.ids().includes(event.json.id), 'event on the raw stream');

      // Streams never end by themselves: a close() that waited for them would never finish, so a
      // bound that a busy machine meets tells the two apart.
      await Promise.race([t.close(), sleep(30_000).then(() => Promise.reject(new Error('app.close() did not finish within 30 s')))]);
      closed = true;

      // Both clients see the connection end.
      await waitFor(() => raw.ended(), 'the raw stream to end');
      await waitFor(() => source.errors.length > 0, 'the EventSource to notice');
      expect(source.source.readyState).not.toBe(EventSource.OPEN);
      source.source.close();
    } finally {
      if (!closed) {
        // Let the clients go first so that a hanging close can still finish.
        for (const cleanup of cleanups.splice(0)) cleanup();
        await t.close().catch(() => undefined);
      }
    }
  });
});

describe('event stream and its credential', () => {
  const app = useTestApp();

  it('ends the stream of a key the moment the key is revoked', async () => {
    const base = await app().listen();
    const owner = await app().account(['events:read', 'events:write', 'keys:manage']);
    const created = await app().request({ method: 'POST', url: '/api/v1/keys', key: owner.key, body: { name: 'streamer', scopes: ['events:read'] } });
    const raw = await openRaw(`${base}/api/v1/events/stream`, created.json.key);
    expect(raw.response.status).toBe(200);
    const event = await app().request({ method: 'POST', url: '/api/v1/events', key: owner.key, body: { type: 'custom.before', data: {} } });
    await waitFor(() => raw.ids().includes(event.json.id), 'the event before revocation');

    const revoked = await app().request({ method: 'DELETE', url: `/api/v1/keys/${created.json.id}`, key: owner.key });
    expect(revoked.status).toBe(204);
    // At once: well before the next heartbeat (15 s) that would find the key revoked.
    await waitFor(() => raw.ended(), 'the stream of the revoked key to end', 10_000);
    await app().request({ method: 'POST', url: '/api/v1/events', key: owner.key, body: { type: 'custom.after', data: {} } });
    expect(raw.messages.map((message) => message.event)).not.toContain('custom.after');
  });
});
