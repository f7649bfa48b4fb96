// @devdata/client's safe retries of writes, through the real server behind a proxy that loses
// responses: every POST, PATCH and DELETE carries an Idempotency-Key (fresh per call, or the
// caller's), a write whose answer was lost is sent again with the same key, the server replays its
// first answer (Idempotent-Replayed: true), and the write took effect exactly once.
import { DevdataClient, DevdataError, IDEMPOTENCY_KEPT_HOURS, type Resource } from '@devdata/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { LossyProxy, requestTo } from './proxy.js';
import { thrown } from './support.js';

describe('@devdata/client retries writes with their Idempotency-Key', () => {
  const app = useTestApp();
  const proxy = new LossyProxy();
  let through: string;

  beforeAll(async () => {
    through = await proxy.start(await app().listen());
  });

  afterAll(async () => {
    await proxy.close();
  });

  async function client(retry: ConstructorParameters<typeof DevdataClient>[0]['retry'] = { initialDelayMs: 5 }) {
    const account = await app().account();
    return { devdata: new DevdataClient({ baseUrl: through, apiKey: account.key, retry }), account };
  }

  /** What the server holds, read past the proxy. */
  async function serverSide(key: string, url: string) {
    return (await app().request({ url, key })).json;
  }

  // Each write of the API whose answer is lost once: the client sends it again, with the same key.
  const writes: Array<{
    name: string;
    method: string;
    path: string;
    write: (devdata: DevdataClient, sensor: Resource) => Promise<unknown>;
    /** The events the write makes (a delete's replayed 204, not a second try's 404). */
    events: string[];
  }> = [
    {
      name: 'createResource',
      method: 'POST',
      path: '/api/v1/resources',
      write: (d) => d.createResource({ body: { name: 'Hall', type: 'text', state: 'x' } }),
      events: ['resource.created'],
    },
    {
      name: 'updateResource',
      method: 'PATCH',
      path: '/api/v1/resources/',
      write: (d, s) => d.updateResource({ path: { id: s.id }, body: { state: 5 } }),
      events: ['resource.updated'],
    },
    {
      name: 'deleteResource',
      method: 'DELETE',
      path: '/api/v1/resources/',
      write: (d, s) => d.deleteResource({ path: { id: s.id } }),
      events: ['resource.deleted'],
    },
    {
      name: 'publishEvent',
      method: 'POST',
      path: '/api/v1/events',
      write: (d) => d.publishEvent({ body: { type: 'custom.once', data: { n: 1 } } }),
      events: ['custom.once'],
    },
    {
      name: 'batch',
      method: 'POST',
      path: '/api/v1/batch',
      write: (d, s) =>
        d.batch([
          { op: 'update', id: s.id, state: 6 },
          { op: 'publish', type: 'custom.batched', data: {} },
        ]),
      events: ['resource.updated', 'custom.batched'],
    },
  ];

  for (const { name, method, path, write, events } of writes) {
    it(`${name}: the answer lost, sent again with the same key, replayed, written once`, async () => {
      const { devdata, account } = await client();
      const sensor = await devdata.createResource({ body: { name: 'Sensor', type: 'sensor', state: 1 } });
      const before = proxy.exchanges.length;
      proxy.drop(requestTo(method, path));
      await write(devdata, sensor);
      const tries = proxy.exchanges.slice(before);
      expect(tries.map((exchange) => [exchange.method, exchange.outcome, exchange.replayed])).toEqual([
        [method, 'dropped', false],
        [method, 'passed', true],
      ]);
      expect(tries[0]!.key).toMatch(/^[\x21-\x7e]{1,255}$/);
      expect(tries[1]!.key).toBe(tries[0]!.key);
      expect(tries[1]!.status).toBe(tries[0]!.status);
      const log = await serverSide(account.key, '/api/v1/events?limit=1000');
      expect(log.data.map((event: { type: string }) => event.type)).toEqual(['resource.created', ...events]);
      expect(log.data.map((event: { id: number }) => event.id)).toEqual(log.data.map((_: unknown, index: number) => index + 1));
    });
  }

  it('knows how long the service keeps a key, from its document: what GET /api/v1/capabilities says', async () => {
    const capabilities = (await app().request({ url: '/api/v1/capabilities' })).json as { features: Record<string, { keptHours?: number }> };
    expect(IDEMPOTENCY_KEPT_HOURS).toBe(capabilities.features.idempotency?.keptHours);
    expect(IDEMPOTENCY_KEPT_HOURS).toBe(24);
  });

  it('sends a fresh key with each call, and the caller’s own key makes a repeated call take effect once', async () => {
    const { devdata, account } = await client();
    const before = proxy.exchanges.length;
    const first = await devdata.createResource({ body: { name: 'One', type: 'text', state: 'a' } });
    await devdata.createResource({ body: { name: 'One', type: 'text', state: 'a' } });
    const [a, b] = proxy.exchanges.slice(before);
    expect(a!.key).not.toBe(b!.key);

    const again = { idempotencyKey: `order-${first.id}` };
    const made = await devdata.createResource({ body: { name: 'Two', type: 'text', state: 'b' } }, again);
    const repeated = await devdata.createResource({ body: { name: 'Two', type: 'text', state: 'b' } }, again);
    expect(repeated).toEqual(made);
    expect(proxy.exchanges.slice(-2).map((exchange) => [exchange.key, exchange.replayed])).toEqual([
      [again.idempotencyKey, false],
      [again.idempotencyKey, true],
    ]);
    expect((await serverSide(account.key, '/api/v1/resources')).total).toBe(3);

    // The same key with another body is a mistake of the caller's, not retried.
    const reused = await thrown(devdata.createResource({ body: { name: 'Three', type: 'text', state: 'c' } }, again), DevdataError);
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    // Reads carry no key.
    await devdata.listResources();
    expect(proxy.exchanges.at(-1)).toMatchObject({ method: 'GET', key: undefined });
  });

  /** A batch that takes the server a while: 1,000 creations with 2 KiB of attributes each. */
  const bulk = (label: string) =>
    Array.from({ length: 1000 }, (_, index) => ({
      op: 'create' as const,
      name: `${label} ${index}`,
      type: 'text' as const,
      state: 'x',
      attributes: { index, note: 'y'.repeat(2000) },
    }));

  /**
   * Two clients send the same batch with the same key at once, as two processes retrying one
   * request would: the server runs one, and the other hears 409 if it arrives while that one runs,
   * else the replay. Whether they overlap is the machine's timing, so rounds are run until one does
   * (each round checked all the same).
   */
  async function sameKeyAtOnce<T>(retry: { keyInUse: number }, check: (outcomes: Array<PromiseSettledResult<unknown>>, statuses: number[]) => T) {
    const { account } = await client();
    for (let round = 0; round < 20; round++) {
      const operations = bulk(`Round ${round}`);
      const options = { idempotencyKey: `bulk-${round}-${account.accountId}` };
      const before = proxy.exchanges.length;
      const send = () => new DevdataClient({ baseUrl: through, apiKey: account.key, retry: { ...retry, initialDelayMs: 1 } }).batch(operations, options);
      const outcomes = await Promise.allSettled([send(), send()]);
      const statuses = proxy.exchanges.slice(before).map((exchange) => exchange.status);
      const found = check(outcomes, statuses);
      expect((await serverSide(account.key, '/api/v1/resources?limit=1')).total).toBe(1000 * (round + 1));
      if (statuses.includes(409)) return found;
    }
    throw new Error('no two requests with one key overlapped in 20 rounds');
  }

  it('waits out a 409 idempotency_key_in_use (the same key still running) and gets the first request’s answer', async () => {
    await sameKeyAtOnce({ keyInUse: 5 }, (outcomes, statuses) => {
      const [first, second] = outcomes as Array<PromiseFulfilledResult<unknown>>;
      expect([first!.status, second!.status]).toEqual(['fulfilled', 'fulfilled']);
      expect(second!.value).toEqual(first!.value);
      // One ran; the other was replayed, at once or after a 409.
      expect(statuses.filter((status) => status !== 409)).toEqual([200, 200]);
    });
  });

  it('gives up on a 409 idempotency_key_in_use after retry.keyInUse tries, and on a network failure after retry.network', async () => {
    const inUse = await sameKeyAtOnce({ keyInUse: 0 }, (outcomes, statuses) => {
      const refused = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
      expect(refused).toHaveLength(statuses.includes(409) ? 1 : 0);
      return refused[0]?.reason as DevdataError | undefined;
    });
    expect(inUse).toBeInstanceOf(DevdataError);
    expect(inUse).toMatchObject({ status: 409, code: 'idempotency_key_in_use' });
    expect(inUse!.retryAfterSeconds).toBe(1);

    const { devdata } = await client({ initialDelayMs: 1 });
    proxy.drop(requestTo('POST', '/api/v1/events'), 3);
    const lost = await thrown(devdata.publishEvent({ body: { type: 'custom.lost', data: {} } }), DevdataError);
    expect(lost).toMatchObject({ status: 0, code: 'connection_error' });
    const tries = proxy.of(requestTo('POST', '/api/v1/events')).slice(-3);
    expect(tries.map((exchange) => exchange.outcome)).toEqual(['dropped', 'dropped', 'dropped']);
    expect(new Set(tries.map((exchange) => exchange.key)).size).toBe(1);
  });
});
