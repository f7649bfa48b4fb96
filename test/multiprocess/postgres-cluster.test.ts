// Several `devdata serve` processes on one PostgreSQL database (docs/decisions.md: "Operator CLI", "HTTP contract", "Events and streams"): concurrent
// migrations at start, event ids dense and in commit order across processes, a cursor poller and
// a stream that never skip an event held back by a slow writer, live streams fed by writes made in
// other processes, key revocation seen by every process within 100 ms (at once while notifications are down), and one
// shared rate limit (exact for small allowances, a bounded overshoot for large ones).
// Runs only when TEST_DATABASE_URL is a postgres:// URL; each run uses a fresh schema.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../src/storage/migrations/index.js';
import { CLI, cleanEnv, killAll, ROOT, run, ServerProcess } from '../support/processes.js';
import { sleep, until } from '../support/wait.js';

const BASE_URL = process.env.TEST_DATABASE_URL ?? '';
const ON_POSTGRES = /^postgres(ql)?:\/\//.test(BASE_URL);

interface ApiResponse {
  status: number;
  headers: Headers;
  json: any;
}

interface EventBody {
  id: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: string;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, index) => from + index);
}

async function api(base: string, method: string, path: string, options: { key?: string; body?: unknown } = {}): Promise<ApiResponse> {
  const headers: Record<string, string> = {};
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, headers: response.headers, json };
}

/** A Server-Sent Events client over fetch: every message with its id, event and data fields. */
class SseClient {
  readonly messages: Array<{ id: string | undefined; event: string | undefined; data: string }> = [];
  ended = false;

  private constructor(private readonly abort: AbortController) {}

  static async open(base: string, path: string, key: string): Promise<SseClient> {
    const abort = new AbortController();
    const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, signal: abort.signal });
    expect(response.status, await (response.status === 200 ? Promise.resolve('') : response.text())).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const client = new SseClient(abort);
    void client.read(response);
    return client;
  }

  private async read(response: Response): Promise<void> {
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer = (buffer + decoder.decode(value, { stream: true })).replace(/\r\n?/g, '\n');
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let id: string | undefined;
          let event: string | undefined;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line === '' || line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') id = value;
            else if (field === 'event') event = value;
            else if (field === 'data') data.push(value);
          }
          if (data.length > 0) this.messages.push({ id, event, data: data.join('\n') });
        }
      }
    } catch {
      // Aborted by close().
    } finally {
      this.ended = true;
    }
  }

  /** The events received: checks that each message's id and event fields agree with its data. */
  events(): EventBody[] {
    return this.messages.map((message) => {
      const event = JSON.parse(message.data) as EventBody;
      expect(message.id).toBe(String(event.id));
      expect(message.event).toBe(event.type);
      return event;
    });
  }

  close(): void {
    this.abort.abort();
  }
}

describe.skipIf(!ON_POSTGRES)('several serve processes on one PostgreSQL database', () => {
  const schema = `mp_${randomBytes(8).toString('hex')}`;
  let databaseUrl: string;
  let admin: pg.Client;
  const servers: ServerProcess[] = [];
  let A: string;
  let B: string;
  let C: string;
  let accountId: string;
  let key: string;
  const streams: SseClient[] = [];

  const serverEnv = (overrides: Record<string, string> = {}) =>
    cleanEnv({
      DATABASE_URL: databaseUrl,
      PORT: '0',
      // The "listening" line that ServerProcess.listening() reads is logged at info.
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_MINUTE: '100000',
      RATE_LIMIT_ANON_PER_MINUTE: '100000',
      ...overrides,
    });

  /** Every event after `after`, paging with limit 50 through the given processes in turn. */
  async function readAll(after: number, via: string[] = [A, B, C]): Promise<{ events: EventBody[]; cursor: number }> {
    const events: EventBody[] = [];
    let cursor = after;
    for (let page = 0; ; page += 1) {
      const response = await api(via[page % via.length] as string, 'GET', `/api/v1/events?after=${cursor}&limit=50`, { key });
      expect(response.status, JSON.stringify(response.json)).toBe(200);
      events.push(...(response.json.data as EventBody[]));
      expect(response.json.cursor).toBeGreaterThanOrEqual(cursor);
      cursor = response.json.cursor;
      if (!response.json.hasMore) return { events, cursor };
    }
  }

  const newestId = async () => (await admin.query<{ n: string }>('select event_seq as n from accounts where id = $1', [accountId])).rows[0]?.n;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: BASE_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    const url = new URL(BASE_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    databaseUrl = url.toString();
    await admin.query(`set search_path = ${schema}`);

    // Three servers at once on the empty schema: they race to apply the migrations.
    for (let index = 0; index < 3; index += 1) servers.push(new ServerProcess(serverEnv(), ROOT));
    [A, B, C] = (await Promise.all(servers.map((server) => server.listening()))) as [string, string, string];

    const created = await run(process.execPath, [CLI, 'accounts', 'create', '--name', 'Cluster test', '--json'], { env: serverEnv() });
    expect(created.code, created.stderr).toBe(0);
    const provisioned = JSON.parse(created.stdout.trim().split('\n').at(-1) as string);
    accountId = provisioned.account.id;
    key = provisioned.apiKey.key;
  }, 60_000);

  afterAll(async () => {
    for (const stream of streams) stream.close();
    await killAll();
    if (admin) {
      await admin.query(`drop schema if exists ${schema} cascade`).catch(() => undefined);
      await admin.end();
    }
  }, 30_000);

  it('three servers started together on an empty schema all come up, each migration applied once', async () => {
    expect(servers).toHaveLength(3);
    for (const server of servers) expect(server.child.exitCode).toBeNull();
    const applied = await admin.query<{ name: string }>('select name from kysely_migration order by name');
    expect(applied.rows.map((row) => row.name)).toEqual(Object.keys(migrations).sort());
    for (const base of [A, B, C]) {
      const health = await api(base, 'GET', '/api/v1/health');
      expect(health.status).toBe(200);
      expect(health.json.status).toBe('ready');
      const me = await api(base, 'GET', '/api/v1/auth/me', { key });
      expect(me.status).toBe(200);
      expect(me.json.account.id).toBe(accountId);
    }
  });

  it('150 concurrent writes over three processes give ids 1..N: dense, ascending, no repeat', async () => {
    const bases = [A, B, C];
    // A few resources first (one resource.created event each), created through different processes.
    const resourceIds: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const created = await api(bases[index] as string, 'POST', '/api/v1/resources', {
        key,
        body: { name: `Sensor ${index}`, type: 'sensor', state: 0 },
      });
      expect(created.status, JSON.stringify(created.json)).toBe(201);
      resourceIds.push(created.json.id);
    }

    const WRITES = 150;
    const patchesPerResource = new Map<string, number>();
    const results = await Promise.all(
      range(0, WRITES - 1).map(async (index) => {
        const base = bases[index % 3] as string;
        if (index % 5 === 0) {
          const resourceId = resourceIds[index % resourceIds.length] as string;
          patchesPerResource.set(resourceId, (patchesPerResource.get(resourceId) ?? 0) + 1);
          const patched = await api(base, 'PATCH', `/api/v1/resources/${resourceId}`, { key, body: { state: index } });
          expect(patched.status, JSON.stringify(patched.json)).toBe(200);
          return { index, kind: 'patch' as const, id: undefined };
        }
        const published = await api(base, 'POST', '/api/v1/events', { key, body: { type: 'custom.load', data: { index } } });
        expect(published.status, JSON.stringify(published.json)).toBe(201);
        return { index, kind: 'event' as const, id: published.json.id as number };
      }),
    );

    const N = resourceIds.length + WRITES;
    const { events, cursor } = await readAll(0);
    expect(events.map((event) => event.id)).toEqual(range(1, N));
    expect(cursor).toBe(N);
    expect(Number(await newestId())).toBe(N);

    // Each published event is in the log under the id its POST returned, with its own data.
    const byId = new Map(events.map((event) => [event.id, event]));
    const publishedIds = results.flatMap((result) => (result.kind === 'event' ? [result.id as number] : []));
    expect(new Set(publishedIds).size).toBe(publishedIds.length);
    for (const result of results) {
      if (result.kind !== 'event') continue;
      expect(byId.get(result.id as number)).toMatchObject({ type: 'custom.load', data: { index: result.index } });
    }
    expect(events.filter((event) => event.type === 'resource.created')).toHaveLength(resourceIds.length);
    expect(events.filter((event) => event.type === 'resource.updated')).toHaveLength(WRITES / 5);

    // The updates of each resource ran one at a time in id order: versions 2, 3, … with no repeat.
    for (const resourceId of resourceIds) {
      const versions = events
        .filter((event) => event.type === 'resource.updated' && (event.data.resource as { id: string }).id === resourceId)
        .map((event) => (event.data.resource as { version: number }).version);
      expect(versions).toEqual(range(2, 1 + (patchesPerResource.get(resourceId) ?? 0)));
      const current = await api(B, 'GET', `/api/v1/resources/${resourceId}`, { key });
      expect(current.json.version).toBe(versions.length + 1);
    }
  });

  it('60 concurrent PATCHes of one sensor over three processes leave one point per millisecond: the state of its newest version', async () => {
    const created = await api(A, 'POST', '/api/v1/resources', { key, body: { name: 'History', type: 'sensor', state: 0 } });
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    const patched = await Promise.all(
      Array.from({ length: 60 }, (_, index) => api([A, B, C][index % 3]!, 'PATCH', `/api/v1/resources/${id}`, { key, body: { state: index + 1 } })),
    );
    expect(patched.map((response) => response.status)).toEqual(patched.map(() => 200));
    // Of the versions written in one millisecond, the newest is the point kept.
    const newest = new Map<string, { version: number; state: unknown }>();
    for (const { json } of [created, ...patched]) {
      const seen = newest.get(json.updatedAt as string);
      if (!seen || seen.version < (json.version as number)) newest.set(json.updatedAt as string, { version: json.version as number, state: json.state });
    }
    const expected = [...newest].sort(([a], [b]) => a.localeCompare(b)).map(([at, { state }]) => ({ at, state }));
    for (const base of [A, B, C]) {
      const history = await api(base, 'GET', `/api/v1/resources/${id}/history?limit=1000`, { key });
      expect(history.status).toBe(200);
      expect(history.json.data).toEqual(expected);
    }
  });

  it('a slow writer holds later writers back, and a poller and a stream on another process skip nothing', async () => {
    const before = (await readAll(0)).cursor;

    // A stream on B and a poller on C, both following from `before`.
    const stream = await SseClient.open(B, `/api/v1/events/stream?after=${before}`, key);
    streams.push(stream);
    const polled: number[] = [];
    const pollErrors: string[] = [];
    let polling = true;
    let pollCursor = before;
    const poller = (async () => {
      while (polling) {
        const page = await api(C, 'GET', `/api/v1/events?after=${pollCursor}&limit=1000`, { key });
        if (page.status !== 200) pollErrors.push(`${page.status} ${JSON.stringify(page.json)}`);
        else {
          polled.push(...(page.json.data as EventBody[]).map((event) => event.id));
          pollCursor = page.json.cursor;
          if (page.json.hasMore) continue;
        }
        await sleep(50);
      }
    })();

    // The slow writer: takes the next id and inserts its event, then keeps the transaction open.
    const slow = new pg.Client({ connectionString: databaseUrl });
    await slow.connect();
    let slowId = 0;
    const OTHER_WRITES = 12;
    let settled = 0;
    let writes: Array<Promise<number>> = [];
    try {
      const pid = (await slow.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid;
      const began = Date.now();
      await slow.query('begin');
      const taken = await slow.query<{ event_seq: string }>('update accounts set event_seq = event_seq + 1 where id = $1 returning event_seq', [accountId]);
      slowId = Number(taken.rows[0]?.event_seq);
      expect(slowId).toBe(before + 1);
      await slow.query('insert into events (account_id, id, type, data, created_at) values ($1, $2, $3, $4, $5)', [
        accountId,
        slowId,
        'custom.slow',
        JSON.stringify({ slow: true }),
        new Date().toISOString(),
      ]);

      // Other writes through A and B meanwhile: each must wait behind the account row's lock.
      writes = range(0, OTHER_WRITES - 1).map(async (index) => {
        const published = await api(index % 2 === 0 ? A : B, 'POST', '/api/v1/events', { key, body: { type: 'custom.after_slow', data: { index } } });
        settled += 1;
        expect(published.status, JSON.stringify(published.json)).toBe(201);
        return published.json.id as number;
      });
      // All of them wait: one writer of each process (A and B) at the account's row lock, blocked by
      // the slow transaction, and the others behind it in their process's queue (AccountQueue).
      await until(async () => {
        const blocked = await admin.query<{ n: number }>(
          `with recursive blocked(pid) as (
             select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid))
             union
             select activity.pid from pg_stat_activity activity join blocked on blocked.pid = any(pg_blocking_pids(activity.pid))
           ) select count(*)::int as n from blocked`,
          [pid],
        );
        return (blocked.rows[0]?.n ?? 0) >= 2;
      }, 'a writer of A and one of B blocked behind the slow transaction');
      await sleep(Math.max(0, 1_500 - (Date.now() - began)));

      // While it is open: no write overtook it, and the readers neither saw nor stepped past it.
      expect(settled).toBe(0);
      expect(polled).toEqual([]);
      expect(pollCursor).toBe(before);
      expect(stream.messages).toEqual([]);
      await slow.query('commit');
    } catch (error) {
      await slow.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      await slow.end();
    }

    const writtenIds = await Promise.all(writes);
    const expected = range(before + 1, before + 1 + OTHER_WRITES);
    for (const id of writtenIds) expect(id).toBeGreaterThan(slowId);
    expect([slowId, ...writtenIds].sort((a, b) => a - b)).toEqual(expected);

    try {
      await until(() => polled.length >= expected.length, 'the poller to reach the last write');
    } finally {
      polling = false;
      await poller;
    }
    expect(pollErrors).toEqual([]);
    expect(polled).toEqual(expected);
    expect(pollCursor).toBe(before + 1 + OTHER_WRITES);

    await until(() => stream.messages.length >= expected.length, 'the stream on B to deliver every event');
    await sleep(200);
    const streamed = stream.events();
    expect(streamed.map((event) => event.id)).toEqual(expected);
    expect(streamed[0]).toMatchObject({ id: slowId, type: 'custom.slow', data: { slow: true } });
    stream.close();
  });

  it('a stream on B delivers, in order and within seconds, the events written through A and C', async () => {
    const before = (await readAll(0)).cursor;
    const stream = await SseClient.open(B, `/api/v1/events/stream?after=${before}`, key);
    streams.push(stream);

    const THROUGH_A = 100;
    const THROUGH_C = 20;
    const published = new Map<number, EventBody>();
    const publish = async (base: string, data: Record<string, unknown>) => {
      const response = await api(base, 'POST', '/api/v1/events', { key, body: { type: 'custom.streamed', data } });
      expect(response.status, JSON.stringify(response.json)).toBe(201);
      published.set(response.json.id, response.json);
    };
    // Ten at a time through A, with the writes through C interleaved.
    const fromC = Promise.all(range(0, THROUGH_C - 1).map((index) => sleep(index * 20).then(() => publish(C, { via: 'C', index }))));
    for (let batch = 0; batch < THROUGH_A; batch += 10) {
      await Promise.all(range(batch, batch + 9).map((index) => publish(A, { via: 'A', index })));
    }
    await fromC;
    const written = Date.now();

    const total = THROUGH_A + THROUGH_C;
    await until(() => stream.messages.length >= total, `the stream to deliver ${total} events`, 5_000);
    const lag = Date.now() - written;
    await sleep(300);
    expect(stream.ended).toBe(false);
    const streamed = stream.events();
    expect(streamed.map((event) => event.id)).toEqual(range(before + 1, before + total));
    for (const event of streamed) expect(event).toEqual(published.get(event.id));
    expect(lag).toBeLessThan(5_000);
    stream.close();
  });

  /**
   * Polls `base` with `read` until `fresh` holds; the latest request that still got a stale answer
   * was sent how long after `since` (-1: none)? Once fresh, it must stay fresh.
   */
  async function staleFor(base: string, since: number, read: () => Promise<ApiResponse>, fresh: (response: ApiResponse) => boolean): Promise<number> {
    let stale = -1;
    for (;;) {
      const sent = Date.now() - since;
      const response = await read();
      if (fresh(response)) {
        for (let index = 0; index < 3; index += 1) expect(fresh(await read()), `${base} went stale again`).toBe(true);
        return stale;
      }
      expect(sent, `${base} still answers ${JSON.stringify(response.json)}`).toBeLessThan(2_000);
      stale = sent;
    }
  }

  // Every process keeps accounts' resources in memory and hears the others' commits (decisions:
  // "Resources kept in memory on PostgreSQL"): a write through one process is
  // read through the others within 100 ms, and at once while their notifications are down.
  it('a resource written through A is read through B and C within 100 ms: created, updated, listed, deleted', async () => {
    const get = (base: string, id: string) => () => api(base, 'GET', `/api/v1/resources/${id}`, { key });
    const list = (base: string) => () => api(base, 'GET', '/api/v1/resources?type=sensor&limit=100', { key });
    const created = await api(A, 'POST', '/api/v1/resources', { key, body: { name: 'Shared', type: 'sensor', state: 0, tags: ['shared'] } });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const id = created.json.id as string;
    const latest: number[] = [];
    // B and C hold the account from here on (their first read reads it whole).
    for (const base of [B, C]) latest.push(await staleFor(base, Date.now(), get(base, id), (response) => response.status === 200));
    for (let round = 1; round <= 10; round += 1) {
      const patched = await api(A, 'PATCH', `/api/v1/resources/${id}`, { key, body: { state: round } });
      expect(patched.status, JSON.stringify(patched.json)).toBe(200);
      const at = Date.now();
      const isPatched = (response: ApiResponse) => response.json?.state === round && response.json?.version === round + 1;
      latest.push(...(await Promise.all([B, C].map((base) => staleFor(base, at, get(base, id), isPatched)))));
      const listed = (response: ApiResponse) =>
        (response.json?.data as Array<{ id: string; state: unknown }>)?.some((each) => each.id === id && each.state === round);
      latest.push(...(await Promise.all([B, C].map((base) => staleFor(base, at, list(base), listed)))));
    }
    // A resource created through C, read through B, and deleted through B: gone on A and C.
    const other = await api(C, 'POST', '/api/v1/resources', { key, body: { name: 'From C', type: 'switch', state: true } });
    expect(other.status).toBe(201);
    latest.push(await staleFor(B, Date.now(), get(B, other.json.id), (response) => response.status === 200));
    expect((await api(B, 'DELETE', `/api/v1/resources/${other.json.id}`, { key })).status).toBe(204);
    const deletedAt = Date.now();
    latest.push(...(await Promise.all([A, C].map((base) => staleFor(base, deletedAt, get(base, other.json.id), (response) => response.status === 404)))));
    // A write through B builds on A's last write: the writer reads the resource under the account's lock, not a stale copy.
    const onB = await api(B, 'PATCH', `/api/v1/resources/${id}`, { key, body: { state: 99 } });
    expect(onB.json).toMatchObject({ state: 99, version: 12 });
    // B holds the account's newest events from its own write on; a page there shows A's next event within 100 ms too.
    const ownPage = await api(B, 'GET', '/api/v1/events?limit=1000', { key });
    const fromB = ownPage.json.cursor as number;
    for (let round = 1; round <= 5; round += 1) {
      const published = await api(A, 'POST', '/api/v1/events', { key, body: { type: 'custom.cross', data: { round } } });
      expect(published.status).toBe(201);
      const at = Date.now();
      const page = () => api(B, 'GET', `/api/v1/events?after=${fromB}&limit=100`, { key });
      latest.push(await staleFor(B, at, page, (response) => (response.json?.data as EventBody[])?.some((each) => each.id === published.json.id)));
    }
    expect(Math.max(...latest), `stale answers up to ${latest.join(', ')} ms after the write`).toBeLessThan(100);

    // Every listening connection cut: B and C keep nothing and read storage, so they see A's write at once.
    const cut = await admin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'devdata-notifications'`,
    );
    expect(cut.rowCount).toBeGreaterThanOrEqual(3);
    await sleep(200);
    expect((await api(A, 'PATCH', `/api/v1/resources/${id}`, { key, body: { state: -1 } })).status).toBe(200);
    for (const base of [B, C]) expect((await get(base, id)()).json.state).toBe(-1);
    await until(
      async () =>
        (await admin.query(`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'devdata-notifications'`))
          .rows[0].n >= 3,
      'listeners back',
    );
  });

  it('pages from cursors older than the recent events, kept in chunks by B and C, stay exact while A writes', async () => {
    const publish = async (base: string, count: number, tag: string, together: number) => {
      for (let start = 0; start < count; start += together) {
        await Promise.all(
          range(start, Math.min(count, start + together) - 1).map(async (index) => {
            const published = await api(base, 'POST', '/api/v1/events', { key, body: { type: 'custom.older', data: { tag, index } } });
            expect(published.status, JSON.stringify(published.json)).toBe(201);
          }),
        );
      }
    };
    // More than the newest 1,000 that memory keeps: most cursors below are older than that.
    await publish(A, 1_300, 'first', 25);
    const log = (await readAll(0, [A])).events;
    const byId = new Map(log.map((event) => [event.id, event]));
    const newest = log.at(-1)!.id;
    const cursors = range(0, 24).map((index) => Math.floor((index * (newest - 1_100)) / 24));
    const exact = (after: number, page: ApiResponse) => {
      expect(page.status, JSON.stringify(page.json)).toBe(200);
      const ids = (page.json.data as EventBody[]).map((event) => event.id);
      expect(ids, `after ${after}`).toEqual(range(after + 1, after + ids.length));
      for (const event of page.json.data as EventBody[]) if (event.id <= newest) expect(event).toEqual(byId.get(event.id));
      return ids;
    };
    // Read twice through B and C: the first fills their chunks, the second is answered from them.
    for (let round = 0; round < 2; round += 1) {
      for (const after of cursors) for (const base of [B, C]) exact(after, await api(base, 'GET', `/api/v1/events?after=${after}&limit=100`, { key }));
    }
    expect((await readAll(newest - 1_100, [B, C])).events.map((event) => event.id)).toEqual(range(newest - 1_099, newest));
    // While A writes more, pages that run from the chunks into the newest events miss nothing: the
    // chunk at the head, not yet complete, is never kept.
    const writing = publish(A, 300, 'second', 3);
    let reachedNew = 0;
    for (let round = 0; round < 20; round += 1) {
      for (const base of [B, C]) {
        const after = newest - 150 + round * 10;
        const ids = exact(after, await api(base, 'GET', `/api/v1/events?after=${after}&limit=1000`, { key }));
        if (ids.at(-1)! > newest) reachedNew += 1;
      }
    }
    await writing;
    expect(reachedNew).toBeGreaterThan(0);
    const all = await readAll(newest - 1_200, [B, C]);
    expect(all.events.map((event) => event.id)).toEqual(range(newest - 1_199, newest + 300));
  });

  // Each process caches keys; a revocation's notification makes the others forget it (decisions:
  // "Credentials cached on PostgreSQL"): refused everywhere within 100 ms, and within a second
  // (the cache's time to live) whatever happens to the notifications.
  it('a key revoked through A, cached by B and C, is refused by them within 100 ms, and by A at once', async () => {
    const created = await api(A, 'POST', '/api/v1/keys', { key, body: { name: 'Second key', scopes: ['events:read'] } });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const second = created.json.key as string;
    expect(second).toMatch(/^ddk_/);

    for (const base of [B, C]) {
      const response = await api(base, 'GET', '/api/v1/events?limit=1', { key: second });
      expect(response.status, JSON.stringify(response.json)).toBe(200);
    }

    const revoked = await api(A, 'DELETE', `/api/v1/keys/${created.json.id}`, { key });
    expect(revoked.status).toBe(204);
    const revokedAt = Date.now();
    const first = await api(A, 'GET', '/api/v1/events?limit=1', { key: second });
    expect(first.status, JSON.stringify(first.json)).toBe(401);
    // B and C polled at once: the latest request each still served was sent how long after the revocation?
    const lastServed = await Promise.all(
      [B, C].map(async (base) => {
        let served = -1;
        for (;;) {
          const sent = Date.now() - revokedAt;
          const response = await api(base, 'GET', '/api/v1/events?limit=1', { key: second });
          if (response.status === 200 && sent < 2_000) {
            served = sent;
            continue;
          }
          expect(response.status, `${base}: ${JSON.stringify(response.json)}`).toBe(401);
          expect(response.json.error.code).toBe('unauthorized');
          expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm="devdata".*error="invalid_token"/);
          // Once refused, never served again.
          for (let index = 0; index < 5; index += 1) expect((await api(base, 'GET', '/api/v1/events?limit=1', { key: second })).status).toBe(401);
          return served;
        }
      }),
    );
    expect(Math.max(...lastServed), `B and C last served the revoked key to requests sent ${lastServed.join(' and ')} ms after its revocation`).toBeLessThan(
      100,
    );
    const listed = await api(C, 'GET', '/api/v1/keys', { key });
    expect((listed.json.data as Array<{ id: string }>).map((item) => item.id)).not.toContain(created.json.id);
  });

  it('while their notification connections are down, B and C cache nothing: a key revoked meanwhile is refused at once', async () => {
    const created = await api(A, 'POST', '/api/v1/keys', { key, body: { name: 'Third key', scopes: ['events:read'] } });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const third = created.json.key as string;
    for (const base of [B, C]) expect((await api(base, 'GET', '/api/v1/events?limit=1', { key: third })).status).toBe(200);

    // Every process's listening connection is cut (they reconnect a second later): the revocation's
    // notification below reaches nobody.
    const cut = await admin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'devdata-notifications'`,
    );
    expect(cut.rowCount).toBeGreaterThanOrEqual(3);
    await sleep(200);
    expect((await api(A, 'DELETE', `/api/v1/keys/${created.json.id}`, { key })).status).toBe(204);
    for (const base of [B, C]) {
      const response = await api(base, 'GET', '/api/v1/events?limit=1', { key: third });
      expect(response.status, `${base}: ${JSON.stringify(response.json)}`).toBe(401);
    }
    // Reconnected, they cache again and still hear revocations.
    await until(
      async () =>
        (await admin.query(`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'devdata-notifications'`))
          .rows[0].n >= 3,
      'listeners back',
    );
    const again = await api(A, 'POST', '/api/v1/keys', { key, body: { name: 'Fourth key', scopes: ['events:read'] } });
    for (const base of [B, C]) expect((await api(base, 'GET', '/api/v1/events?limit=1', { key: again.json.key })).status).toBe(200);
    expect((await api(A, 'DELETE', `/api/v1/keys/${again.json.id}`, { key })).status).toBe(204);
    await sleep(100);
    for (const base of [B, C]) expect((await api(base, 'GET', '/api/v1/events?limit=1', { key: again.json.key })).status).toBe(401);
  });

  it('two more servers with a limit of 10 per minute share one allowance per key', async () => {
    // The account's own allowance (10x by default) is lifted: this account has spent more than 100
    // requests in this minute already, and the key's shared count is what is measured here.
    const limitedEnv = () => serverEnv({ RATE_LIMIT_PER_MINUTE: '10', RATE_LIMIT_ACCOUNT_PER_MINUTE: '1000000' });
    const limited = [new ServerProcess(limitedEnv(), ROOT), new ServerProcess(limitedEnv(), ROOT)];
    servers.push(...limited);
    const [D, E] = (await Promise.all(limited.map((server) => server.listening()))) as [string, string];

    const attempt = async () => {
      // A fresh key each attempt, created through an unlimited server: its window starts empty.
      const created = await api(A, 'POST', '/api/v1/keys', { key, body: { name: 'Limited key', scopes: ['events:read'] } });
      expect(created.status).toBe(201);
      // Start well inside a window: with under 10 s left in this minute, wait for the next one.
      const left = 60_000 - (Date.now() % 60_000);
      if (left < 10_000) await sleep(left + 100);
      const window = Math.floor(Date.now() / 60_000);
      const responses: ApiResponse[] = [];
      for (let index = 0; index < 16; index += 1) {
        responses.push(await api(index % 2 === 0 ? D : E, 'GET', '/api/v1/events?limit=1', { key: created.json.key }));
      }
      return { responses, sameWindow: Math.floor(Date.now() / 60_000) === window };
    };

    let { responses, sameWindow } = await attempt();
    if (!sameWindow) ({ responses, sameWindow } = await attempt());
    expect(sameWindow).toBe(true);

    const statuses = responses.map((response) => response.status);
    const bodies = responses.map((response) => `${response.status} ${JSON.stringify(response.json).slice(0, 160)}`).join('\n');
    expect(
      statuses.filter((status) => status >= 200 && status < 300),
      bodies,
    ).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(6);
    expect(statuses).toEqual([...Array<number>(10).fill(200), ...Array<number>(6).fill(429)]);
    responses.forEach((response, index) => {
      expect(response.headers.get('ratelimit-limit')).toBe('10');
      expect(response.headers.get('ratelimit-remaining')).toBe(String(Math.max(0, 9 - index)));
      const reset = Number(response.headers.get('ratelimit-reset'));
      expect(reset).toBeGreaterThanOrEqual(1);
      expect(reset).toBeLessThanOrEqual(60);
    });
    for (const response of responses.slice(10)) {
      expect(response.json.error.code).toBe('rate_limited');
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    // Both servers refused some and served some: the count is shared, not per process.
    expect(responses.filter((_, index) => index % 2 === 0).map((response) => response.status)).toContain(429);
    expect(responses.filter((_, index) => index % 2 === 1).map((response) => response.status)).toContain(429);
  });

  // Allowances of 1,000 or more are counted in memory and merged every 100 ms (decisions: "Rate
  // limits on PostgreSQL"): the overshoot is what the other process admits between merges.
  it('two servers with a limit of 1,500 per minute, under concurrent load, admit 1,500 and at most a fifth more in all', async () => {
    const limited = [
      new ServerProcess(serverEnv({ RATE_LIMIT_PER_MINUTE: '1500' }), ROOT),
      new ServerProcess(serverEnv({ RATE_LIMIT_PER_MINUTE: '1500' }), ROOT),
    ];
    servers.push(...limited);
    const bases = (await Promise.all(limited.map((server) => server.listening()))) as [string, string];

    const attempt = async () => {
      const created = await api(A, 'POST', '/api/v1/keys', { key, body: { name: 'Busy key', scopes: ['events:read'] } });
      expect(created.status).toBe(201);
      const left = 60_000 - (Date.now() % 60_000);
      if (left < 25_000) await sleep(left + 100);
      const window = Math.floor(Date.now() / 60_000);
      // 3,000 requests, 16 at a time on each server: each alone would admit all of its 1,500.
      const statuses: number[][] = [[], []];
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async (_, worker) => {
          const server = worker % 2;
          while (next < 3_000) {
            next += 1;
            statuses[server]!.push((await api(bases[server]!, 'GET', '/api/v1/events?limit=1', { key: created.json.key })).status);
          }
        }),
      );
      return { statuses, sameWindow: Math.floor(Date.now() / 60_000) === window };
    };

    let { statuses, sameWindow } = await attempt();
    if (!sameWindow) ({ statuses, sameWindow } = await attempt());
    expect(sameWindow).toBe(true);
    const all = statuses.flat();
    expect(all.filter((status) => status !== 200 && status !== 429)).toEqual([]);
    const admitted = all.filter((status) => status === 200).length;
    expect(admitted).toBeGreaterThanOrEqual(1_500);
    expect(admitted).toBeLessThanOrEqual(1_800);
    for (const own of statuses) expect(own).toContain(429);
  }, 120_000);

  it('no server exited or logged an error', () => {
    for (const server of servers) {
      expect(server.child.exitCode, server.output).toBeNull();
      const errors = server.logLines().filter((line) => typeof line.level === 'number' && line.level >= 50);
      expect(errors, server.stdout).toEqual([]);
    }
  });
});
