// devdata.batch and devdata.batchAll through the real server: results typed by their operations,
// a refusal naming the operation, and a long list written as consecutive batches, each with a key
// of its own, its progress reported, and a failing batch said in terms of the whole list.
import { BATCH_MAX_OPERATIONS, BatchFailure, type BatchOperation, DevdataClient, DevdataError, type Resource } from '@devdata/client';
import { beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { useTestApp } from '../support/app.js';
import { thrown } from './support.js';

describe('devdata.batch and devdata.batchAll', () => {
  const app = useTestApp();
  let base: string;

  beforeAll(async () => {
    base = await app().listen();
  });

  /** A client of a new account, and the Idempotency-Key of each batch it sends. */
  async function client() {
    const account = await app().account();
    const keys: string[] = [];
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      if (request.url.endsWith('/api/v1/batch')) keys.push(request.headers.get('idempotency-key') ?? '');
      return fetch(request);
    };
    return { devdata: new DevdataClient({ baseUrl: base, apiKey: account.key, fetch: recording }), keys, account };
  }

  async function eventIds(key: string): Promise<number[]> {
    const ids: number[] = [];
    for (let after = 0; ; ) {
      const page = (await app().request({ url: `/api/v1/events?after=${after}&limit=1000`, key })).json;
      ids.push(...page.data.map((event: { id: number }) => event.id));
      if (!page.hasMore) return ids;
      after = page.cursor;
    }
  }

  it('writes a batch and types each result by its operation', async () => {
    const { devdata } = await client();
    const lamp = await devdata.createResource({ body: { name: 'Lamp', type: 'switch', state: false } });
    const { results, cursor } = await devdata.batch([
      { op: 'create', name: 'Hall', type: 'sensor', state: 19.5, tags: ['hall'] },
      { op: 'update', id: lamp.id, ifMatch: 1, state: true },
      { op: 'publish', type: 'custom.door', data: { open: true } },
      { op: 'delete', id: lamp.id },
    ]);
    expectTypeOf(results[0].resource).toEqualTypeOf<Resource>();
    expectTypeOf(results[2].event.type).toEqualTypeOf<`custom.${string}`>();
    expectTypeOf(results[3]).not.toHaveProperty('resource');
    expect(results[0]).toMatchObject({ op: 'create', status: 201, resource: { name: 'Hall', state: 19.5, version: 1 } });
    expect(results[1]).toMatchObject({ op: 'update', status: 200, resource: { id: lamp.id, state: true, version: 2 } });
    expect(results[2]).toMatchObject({ op: 'publish', status: 201, event: { type: 'custom.door', data: { open: true } } });
    expect(results[3]).toEqual({ op: 'delete', status: 204 });
    expect(cursor).toBe(results[2].event.id + 1);
  });

  it('throws the refusal of a batch with the failing operation named, and writes nothing of it', async () => {
    const { devdata, account } = await client();
    const refused = await thrown(
      devdata.batch([
        { op: 'create', name: 'Kept?', type: 'text', state: 'x' },
        { op: 'delete', id: 'res_missing' },
      ]),
      DevdataError,
    );
    expect(refused).toMatchObject({ status: 404, code: 'not_found' });
    expect(refused.details[0]).toMatchObject({ index: 1, path: '/operations/1' });
    expect((await app().request({ url: '/api/v1/resources', key: account.key })).json.total).toBe(0);
  });

  it('writes a long list in batches in order, each with its own key, reporting progress', async () => {
    const { devdata, keys, account } = await client();
    const operations: BatchOperation[] = Array.from({ length: 2_345 }, (_, index) => ({ op: 'create', name: `Sensor ${index}`, type: 'sensor', state: index }));
    const progress: Array<[number, number, number, number]> = [];
    const { results, cursor } = await devdata.batchAll(operations, {
      onProgress: ({ done, total, batch, batches }) => progress.push([done, total, batch, batches]),
    });
    expect(progress).toEqual([
      [1000, 2345, 1, 3],
      [2000, 2345, 2, 3],
      [2345, 2345, 3, 3],
    ]);
    expect(results.map((result) => (result.op === 'create' ? result.resource.state : undefined))).toEqual(operations.map((_, index) => index));
    expect(cursor).toBe(2_345);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(3);
    expect(await eventIds(account.key)).toEqual(Array.from({ length: 2_345 }, (_, index) => index + 1));

    const small = await devdata.batchAll(operations.slice(0, 5), { size: 2 });
    expect(small.results).toHaveLength(5);
    expect(keys.slice(3)).toHaveLength(3);
    await expect(devdata.batchAll(operations.slice(0, 5), { size: BATCH_MAX_OPERATIONS + 1 })).rejects.toThrow(RangeError);
    expect(keys).toHaveLength(6);
  });

  it('says which batch and which operation of the whole list failed, and how many were written before it', async () => {
    const { devdata, keys, account } = await client();
    const operations: BatchOperation[] = Array.from({ length: 2_500 }, (_, index) => ({ op: 'create', name: `Row ${index}`, type: 'text', state: `${index}` }));
    operations[1_234] = { op: 'update', id: 'res_gone', state: 'x' };
    const failure = await thrown(devdata.batchAll(operations), BatchFailure);
    expect(failure).toBeInstanceOf(DevdataError);
    expect(failure).toMatchObject({ status: 404, code: 'not_found', batch: 1, batches: 3, operationIndex: 1_234, done: 1_000 });
    expect(failure.details[0]).toMatchObject({ index: 1_234, path: '/operations/1234' });
    expect(failure.message).toMatch(/^Batch 2 of 3 failed at operation 1234, after 1000 operations were written: /);
    // The first batch was written, the failing one not at all, the third never sent.
    expect(keys).toHaveLength(2);
    expect((await app().request({ url: '/api/v1/resources?limit=1', key: account.key })).json.total).toBe(1_000);
  });
});
