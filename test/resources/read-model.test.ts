// The in-memory resource read model (src/areas/resources/read-model.ts): loading an account,
// following its events, and the races and gaps after which it reads the account again. The HTTP
// tests in read-models.test.ts compare what it serves with storage through the real server.
import { describe, expect, it } from 'vitest';
import { InMemoryResourceReadModel, NoResourceReadModel, RESOURCES_PER_VIEW, type LoadResources, type ResourceReadModel } from '../../src/areas/resources/read-model.js';
import type { Event } from '../../src/areas/events/event.js';
import type { Resource, ResourceRecord } from '../../src/areas/resources/store.js';

const resource = (id: string, version = 1, extra: Partial<Resource> = {}): Resource => ({
  id,
  name: `Resource ${id}`,
  type: 'sensor',
  state: version,
  attributes: { unit_of_measurement: '°C' },
  tags: ['a'],
  version,
  createdAt: '2026-11-23T10:00:00.000Z',
  updatedAt: '2026-11-23T10:00:00.000Z',
  ...extra,
});

const record = (value: Resource, createdSeq: number): ResourceRecord => ({
  id: value.id,
  type: value.type,
  tags: value.tags,
  version: value.version,
  createdSeq,
  json: Buffer.from(JSON.stringify(value)),
});

const resourceEvent = (id: number, type: string, value: Resource): Event => ({ id, type, data: { resource: value }, createdAt: value.updatedAt });

/** A loader over a fixed account, counting its calls; `gates[n]` holds the n-th load (from 0) until released. */
function fakeStorage(records: ResourceRecord[], newestEventId: number) {
  const state = { records, newestEventId, loads: 0, gates: [] as Array<Promise<void> | undefined> };
  const load: LoadResources = async (_accountId, limit) => {
    const gate = state.gates[state.loads++];
    const snapshot = { records: state.records.slice(0, limit), newestEventId: state.newestEventId };
    await gate;
    return snapshot;
  };
  return { state, load };
}

async function viewOf(model: InMemoryResourceReadModel, accountId = 'acc_1') {
  const view = await model.view(accountId);
  if (!view) throw new Error('no view');
  return view;
}

describe('InMemoryResourceReadModel', () => {
  it('reads an account once, then answers from memory and follows its events', async () => {
    const storage = fakeStorage([record(resource('res_a'), 1), record(resource('res_b'), 2)], 2);
    const model = new InMemoryResourceReadModel(storage.load);
    expect((await viewOf(model)).get('res_a')?.version).toBe(1);
    // Kept: the next read is answered without a promise or a load.
    const kept = model.view('acc_1');
    expect(kept).not.toBeInstanceOf(Promise);
    expect(storage.state.loads).toBe(1);

    const updated = resource('res_a', 2, { tags: ['a', 'b'], name: 'Renamed' });
    model.committed('acc_1', [
      resourceEvent(3, 'resource.updated', updated),
      resourceEvent(4, 'resource.created', resource('res_c')),
      { id: 5, type: 'custom.note', data: {}, createdAt: updated.updatedAt },
      resourceEvent(6, 'resource.deleted', resource('res_b')),
    ]);
    const view = await viewOf(model);
    expect(JSON.parse(view.get('res_a')!.json.toString())).toEqual(updated);
    expect(view.get('res_b')).toBeUndefined();
    expect(view.list({ tags: [], limit: 10, offset: 0 }).data.map((json) => JSON.parse(json.toString()).id)).toEqual(['res_a', 'res_c']);
    expect(view.list({ tags: ['b'], limit: 10, offset: 0 })).toEqual({ data: [Buffer.from(JSON.stringify(updated))], total: 1 });
    expect(view.list({ type: 'text', tags: [], limit: 10, offset: 0 })).toEqual({ data: [], total: 0 });
    expect(view.list({ tags: [], limit: 1, offset: 1 }).total).toBe(2);
    expect(storage.state.loads).toBe(1);
  });

  it('skips events the load already saw, and reads the account again after a gap', async () => {
    const storage = fakeStorage([record(resource('res_a', 3), 1)], 7);
    const model = new InMemoryResourceReadModel(storage.load);
    await viewOf(model);
    // Event 7 committed before the load read storage but is announced after it.
    model.committed('acc_1', [resourceEvent(7, 'resource.updated', resource('res_a', 2))]);
    expect((await viewOf(model)).get('res_a')?.version).toBe(3);
    expect(storage.state.loads).toBe(1);

    // Event 9 is announced before event 8: the account is forgotten, not patched over a hole.
    model.committed('acc_1', [resourceEvent(9, 'resource.updated', resource('res_a', 5))]);
    storage.state.records = [record(resource('res_a', 5), 1)];
    storage.state.newestEventId = 9;
    expect((await viewOf(model)).get('res_a')?.version).toBe(5);
    expect(storage.state.loads).toBe(2);
  });

  it('does not keep a load that a commit overtook, and later readers do not wait on it', async () => {
    const storage = fakeStorage([record(resource('res_a'), 1)], 1);
    let release = () => {};
    storage.state.gates[0] = new Promise<void>((resolve) => (release = resolve));
    const model = new InMemoryResourceReadModel(storage.load);
    const first = model.view('acc_1');
    const joined = model.view('acc_1');
    expect(storage.state.loads).toBe(1);
    // Event 2 commits while the load is under way (after it read storage).
    model.committed('acc_1', [resourceEvent(2, 'resource.updated', resource('res_a', 2))]);
    storage.state.records = [record(resource('res_a', 2), 1)];
    storage.state.newestEventId = 2;
    const after = model.view('acc_1');
    expect(storage.state.loads).toBe(2);
    // The fresh load finishes first; the overtaken one after it.
    expect((await after)?.get('res_a')?.version).toBe(2);
    release();
    // The readers that came before the commit see the snapshot they waited for; the one after sees the commit.
    expect((await first)?.get('res_a')?.version).toBe(1);
    expect((await joined)?.get('res_a')?.version).toBe(1);
    // The stale snapshot did not replace the fresh one.
    expect((await viewOf(model)).get('res_a')?.version).toBe(2);
    expect(storage.state.loads).toBe(2);
  });

  it('keeps a load when the events committed meanwhile are ones it already read', async () => {
    const storage = fakeStorage([record(resource('res_a', 2), 1)], 2);
    let release = () => {};
    storage.state.gates[0] = new Promise<void>((resolve) => (release = resolve));
    const model = new InMemoryResourceReadModel(storage.load);
    const loading = model.view('acc_1');
    // Event 2 had committed before the load read storage; it is announced while the load is under way.
    model.committed('acc_1', [resourceEvent(2, 'resource.updated', resource('res_a', 2))]);
    release();
    expect((await loading)?.get('res_a')?.version).toBe(2);
    expect(model.view('acc_1')).not.toBeInstanceOf(Promise);
    expect(storage.state.loads).toBe(1);
  });

  const accountOf = (count: number) =>
    fakeStorage(
      Array.from({ length: count }, (_, index) => record(resource(`res_${index}`), index + 1)),
      count,
    );

  it('keeps an account of exactly RESOURCES_PER_VIEW resources, complete', async () => {
    const storage = accountOf(RESOURCES_PER_VIEW);
    const model = new InMemoryResourceReadModel(storage.load);
    const view = await viewOf(model);
    expect(view.list({ tags: [], limit: 1, offset: 0 }).total).toBe(RESOURCES_PER_VIEW);
    expect(view.get(`res_${RESOURCES_PER_VIEW - 1}`)).toBeDefined();
    expect(model.view('acc_1')).not.toBeInstanceOf(Promise);
  });

  it('leaves an account one resource larger to storage, from its very first readers on', async () => {
    // The load stops at RESOURCES_PER_VIEW + 1 rows: a view of them would miss the rest of the account.
    const storage = accountOf(RESOURCES_PER_VIEW + 5);
    const model = new InMemoryResourceReadModel(storage.load);
    let release = () => {};
    storage.state.gates[0] = new Promise<void>((resolve) => (release = resolve));
    const concurrent = [model.view('acc_1'), model.view('acc_1'), model.view('acc_1')];
    release();
    expect(await Promise.all(concurrent)).toEqual([undefined, undefined, undefined]);
    expect(model.view('acc_1')).toBeUndefined();
    expect(storage.state.loads).toBe(1);
  });

  it('reads a too-large account again once its mark runs out, and keeps it when it has shrunk', async () => {
    const storage = accountOf(RESOURCES_PER_VIEW + 1);
    const model = new InMemoryResourceReadModel(storage.load, undefined, undefined, 20);
    expect(await model.view('acc_1')).toBeUndefined();
    expect(model.view('acc_1')).toBeUndefined();
    storage.state.records = storage.state.records.slice(0, RESOURCES_PER_VIEW);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect((await viewOf(model)).list({ tags: [], limit: 1, offset: 0 }).total).toBe(RESOURCES_PER_VIEW);
    expect(storage.state.loads).toBe(2);
  });

  it('forgets the least recently used accounts past its memory budget', async () => {
    // About 1,200 each: four fit in 5,000, a fifth does not.
    const storage = fakeStorage([record(resource('res_a', 1, { attributes: { text: 'x'.repeat(850) } }), 1)], 1);
    const model = new InMemoryResourceReadModel(storage.load, undefined, 5_000);
    for (const accountId of ['acc_1', 'acc_2', 'acc_3', 'acc_4', 'acc_1', 'acc_5']) await viewOf(model, accountId);
    expect(storage.state.loads).toBe(5);
    // acc_2 was used least recently, so it went.
    for (const accountId of ['acc_1', 'acc_3', 'acc_4', 'acc_5']) expect(model.view(accountId)).not.toBeInstanceOf(Promise);
    expect(model.view('acc_2')).toBeInstanceOf(Promise);
  });
});

describe('NoResourceReadModel (several processes)', () => {
  it('keeps nothing, so every read goes to storage', () => {
    const model: ResourceReadModel = new NoResourceReadModel();
    model.committed('acc_1', [resourceEvent(1, 'resource.created', resource('res_a'))]);
    expect(model.view('acc_1')).toBeUndefined();
  });
});
