// The client's live stream against the real server: replay then live, no repeat, AbortSignal,
// 401 and 410 reported rather than retried, and a server restart survived with no event lost or
// repeated (the same database, a new process on the same port).
import { DevdataClient, DevdataError, type DevdataEvent } from '@devdata/client';
import { describe, expect, it } from 'vitest';
import { sharedDatabase, TestApp, useTestApp, type TestAccount } from '../support/app.js';
import { until } from '../support/wait.js';
import { restart } from './support.js';

/** Reads a stream in the background, keeping what arrived, until its signal fires. */
function follow(stream: AsyncIterable<DevdataEvent>) {
  const received: DevdataEvent[] = [];
  const done = (async () => {
    for await (const event of stream) received.push(event);
  })();
  // A test that fails first must not leave an unhandled rejection behind.
  done.catch(() => {});
  return { received, done, ids: () => received.map((event) => event.id) };
}

async function publish(t: TestApp, key: string, count: number, type = 'custom.tick'): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await t.request({ method: 'POST', url: '/api/v1/events', key, body: { type, data: { i } } });
    expect(response.status, response.body).toBe(201);
    ids.push(response.json.id);
  }
  return ids;
}

describe('DevdataClient.streamEvents', () => {
  const app = useTestApp({ env: { EVENT_RETENTION: '10', STREAM_LIMIT_PER_ACCOUNT: '1' } });
  let base: string;

  async function setup(): Promise<{ account: TestAccount; devdata: DevdataClient }> {
    base ??= await app().listen();
    const account = await app().account(['events:read', 'events:write']);
    return { account, devdata: new DevdataClient({ baseUrl: base, apiKey: account.key }) };
  }

  it('replays after a cursor, then follows live, and stops on its AbortSignal', async () => {
    const { account, devdata } = await setup();
    await publish(app(), account.key, 3);
    const controller = new AbortController();
    const stream = devdata.streamEvents({ after: 1, signal: controller.signal });
    const reader = follow(stream);
    await until(() => reader.received.length === 2, 'the replay');
    await publish(app(), account.key, 2);
    await until(() => reader.received.length === 4, 'the live events');
    expect(reader.ids()).toEqual([2, 3, 4, 5]);
    expect(stream.lastEventId).toBe(5);
    controller.abort();
    await reader.done;
    expect(reader.received[3]).toMatchObject({ id: 5, type: 'custom.tick', data: { i: 1 } });
  });

  it('filters by type and keeps its place past events it does not show', async () => {
    const { account, devdata } = await setup();
    const controller = new AbortController();
    const reader = follow(devdata.streamEvents({ after: 0, type: 'custom.wanted', signal: controller.signal }));
    await publish(app(), account.key, 2, 'custom.other');
    const [wanted] = await publish(app(), account.key, 1, 'custom.wanted');
    await until(() => reader.received.length === 1, 'the matching event');
    expect(reader.received.map((event) => [event.id, event.type])).toEqual([[wanted, 'custom.wanted']]);
    controller.abort();
    await reader.done;
  });

  it('reports 401 and 410 instead of retrying them', async () => {
    const { account, devdata } = await setup();
    const refused = await follow(new DevdataClient({ baseUrl: base, apiKey: 'ddk_wrong' }).streamEvents({ after: 0 })).done.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(DevdataError);
    expect(refused).toMatchObject({ status: 401, code: 'unauthorized' });

    await publish(app(), account.key, 15);
    const expired = (await follow(devdata.streamEvents({ after: 1 })).done.then(
      () => undefined,
      (error: unknown) => error,
    )) as DevdataError;
    expect(expired).toMatchObject({ status: 410, code: 'cursor_expired', oldestCursor: 5 });
    expect(expired.message).toContain('the oldest cursor still retained is 5');
  });

  it('ends when the loop breaks, closing its connection', async () => {
    const { account, devdata } = await setup();
    await publish(app(), account.key, 3);
    const seen: number[] = [];
    for await (const event of devdata.streamEvents({ after: 0 })) {
      seen.push(event.id);
      if (seen.length === 2) break;
    }
    expect(seen).toEqual([1, 2]);
    // The connection was closed: the account's one stream slot is free again.
    await until(async () => {
      const controller = new AbortController();
      const response = await fetch(`${base}/api/v1/events/stream`, { headers: { authorization: `Bearer ${account.key}` }, signal: controller.signal });
      controller.abort();
      return response.status === 200;
    }, 'a free stream slot');
  });
});

describe('DevdataClient.streamEvents across a server restart', () => {
  it('resumes with Last-Event-ID after the server restarts: no event lost, none repeated', async () => {
    const database = await sharedDatabase();
    let server = await TestApp.start({ env: { DATABASE_URL: database.url } });
    try {
      const base = await server.listen();
      const account = await server.account(['events:read', 'events:write']);
      const reconnects: Array<{ lastEventId: number | undefined; delayMs: number }> = [];
      const connects: Array<{ lastEventId: number | undefined; reconnected: boolean }> = [];
      const controller = new AbortController();
      const devdata = new DevdataClient({ baseUrl: base, apiKey: account.key });
      const reader = follow(
        devdata.streamEvents({
          after: 0,
          signal: controller.signal,
          reconnectDelayMs: 200,
          onReconnect: ({ lastEventId, delayMs }) => reconnects.push({ lastEventId, delayMs }),
          onConnect: (info) => connects.push(info),
        }),
      );
      const before = await publish(server, account.key, 5);
      await until(() => reader.received.length === 5, 'the events before the restart');

      // The first server goes away (its streams are ended); the second writes events before the
      // client has reconnected, then listens on the same port.
      const restarted = await restart(server, database.url, (next) => publish(next, account.key, 4));
      server = restarted.next;
      const after = await publish(server, account.key, 3);

      await until(() => reader.received.length >= 12, 'every event after the restart');
      controller.abort();
      await reader.done;
      expect(reader.ids()).toEqual([...before, ...restarted.result, ...after]);
      expect(reader.ids()).toEqual(Array.from({ length: 12 }, (_unused, index) => index + 1));
      // Told before each attempt where it resumes and how long it waits (200 ms ±25%, then doubling),
      // and once connected again.
      expect(reconnects.length).toBeGreaterThan(0);
      expect(reconnects[0]?.lastEventId).toBe(5);
      expect(reconnects[0]?.delayMs).toBeGreaterThanOrEqual(150);
      expect(reconnects[0]?.delayMs).toBeLessThanOrEqual(250);
      expect(connects).toEqual([
        { lastEventId: 0, reconnected: false },
        { lastEventId: 5, reconnected: true },
      ]);
    } finally {
      await server.close();
      await database.drop();
    }
  });

  it('without a cursor, resumes from where it started even when cut off before its first event', async () => {
    const database = await sharedDatabase();
    let server = await TestApp.start({ env: { DATABASE_URL: database.url } });
    try {
      const base = await server.listen();
      const account = await server.account(['events:read', 'events:write']);
      await publish(server, account.key, 2);
      const controller = new AbortController();
      const stream = new DevdataClient({ baseUrl: base, apiKey: account.key }).streamEvents({ signal: controller.signal, reconnectDelayMs: 200 });
      const reader = follow(stream);
      // Connected: the stream has told the client where it starts (the newest event, 2).
      await until(() => stream.lastEventId === 2, 'the opening position');
      const restarted = await restart(server, database.url, (next) => publish(next, account.key, 2));
      server = restarted.next;
      await until(() => reader.received.length === 2, 'the events written while disconnected');
      controller.abort();
      await reader.done;
      expect(reader.ids()).toEqual(restarted.result);
    } finally {
      await server.close();
      await database.drop();
    }
  });
});
