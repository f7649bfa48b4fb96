// The in-memory resource read model (src/areas/resources/read-model.ts): loading an account,
// following its events, and the races and gaps after which it reads the account again. The HTTP
// tests in read-models.test.ts compare what it serves with storage through the real server.
import { describe, expect, it, vi } from 'vitest';
import { InMemoryResourceReadModel, type LoadResources, type OtherProcesses } from '../../src/areas/resources/read-model.js';
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
  const load: LoadResources = async (_accountId, limit, afterSeq = 0, orderLimit) => {
    const gate = state.gates[state.loads++];
    const records = state.records.filter((each) => each.createdSeq > afterSeq).slice(0, limit);
    // As the service: the creation order with a first read that is a full chunk.
    const creationOrder = orderLimit !== undefined && records.length === limit ? state.records.slice(0, orderLimit).map((each) => each.createdSeq) : undefined;
    const snapshot = { records, newestEventId: state.newestEventId, creationOrder };
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

/** An account of `count` resources, every tenth tagged `tenth`. */
const accountOf = (count: number) =>
  fakeStorage(
    Array.from({ length: count }, (_, index) => record(resource(`res_${index}`, 1, { tags: index % 10 === 0 ? ['tenth'] : [] }), index + 1)),
    count,
  );

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

  it('applies a commit made while it reads to what it read, so readers after the commit see it, with one read', async () => {
    const storage = fakeStorage([record(resource('res_a'), 1)], 1);
    let release = () => {};
    storage.state.gates[0] = new Promise<void>((resolve) => (release = resolve));
    const model = new InMemoryResourceReadModel(storage.load);
    const first = model.view('acc_1');
    // Event 2 commits while the load is under way (after it read storage).
    model.committed('acc_1', [resourceEvent(2, 'resource.updated', resource('res_a', 2))]);
    const after = model.view('acc_1');
    release();
    expect((await first)?.get('res_a')?.version).toBe(2);
    expect((await after)?.get('res_a')?.version).toBe(2);
    expect((await viewOf(model)).lastEventId).toBe(2);
    expect(storage.state.loads).toBe(1);
  });

  it('does not keep what it read when an event committed meanwhile was never announced (a gap)', async () => {
    const storage = fakeStorage([record(resource('res_a'), 1)], 1);
    let release = () => {};
    storage.state.gates[0] = new Promise<void>((resolve) => (release = resolve));
    const model = new InMemoryResourceReadModel(storage.load);
    const first = model.view('acc_1');
    model.committed('acc_1', [resourceEvent(3, 'resource.updated', resource('res_a', 3))]);
    release();
    // Storage answers those readers; the next reader reads again.
    expect(await first).toBeUndefined();
    storage.state.records = [record(resource('res_a', 3), 1)];
    storage.state.newestEventId = 3;
    expect((await viewOf(model)).get('res_a')?.version).toBe(3);
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

  /** An account of `count` read 10 at a time, its second read held until `release`. */
  const readInChunksOf10 = (count: number) => {
    const storage = accountOf(count);
    const model = new InMemoryResourceReadModel(storage.load, { chunk: 10 });
    let release = () => {};
    storage.state.gates[1] = new Promise<void>((resolve) => (release = resolve));
    return { storage, model, release };
  };

  const idsOf = (page: { data: Buffer[] }) => page.data.map((json) => (JSON.parse(json.toString()) as Resource).id);

  it('reads an account that fits one chunk at once, its first readers waiting for it', async () => {
    const storage = accountOf(9);
    const model = new InMemoryResourceReadModel(storage.load, { chunk: 10 });
    const view = await viewOf(model);
    expect(view.list({ tags: [], limit: 1, offset: 8 })).toMatchObject({ total: 9 });
    expect(storage.state.loads).toBe(1);
  });

  it('reads a larger account in chunks while storage answers, applying the commits made meanwhile', async () => {
    const { storage, model, release } = readInChunksOf10(25);
    // The first chunk is not the whole account: its readers, and those after them, go to storage.
    expect(await model.view('acc_1')).toBeUndefined();
    expect(model.view('acc_1')).toBeUndefined();
    // Between chunks: res_3 changes, res_20 (not read yet) goes, and a resource is created.
    const changed = resource('res_3', 2, { tags: ['tenth', 'new'] });
    model.committed('acc_1', [
      resourceEvent(26, 'resource.updated', changed),
      resourceEvent(27, 'resource.updated', resource('res_20', 2)),
      resourceEvent(28, 'resource.deleted', resource('res_20', 2)),
      resourceEvent(29, 'resource.created', resource('res_new')),
    ]);
    // The later chunks see the deletion and the creation (committed before they read).
    storage.state.records = [...storage.state.records.filter((each) => each.id !== 'res_20'), record(resource('res_new'), 29)];
    release();
    await vi.waitFor(() => expect(model.view('acc_1')).toBeDefined());
    const view = await viewOf(model);
    expect(view.lastEventId).toBe(29);
    const all = view.list({ tags: [], limit: 100, offset: 0 });
    expect(all.total).toBe(25);
    expect(idsOf(all)).toEqual([...Array.from({ length: 25 }, (_, index) => `res_${index}`).filter((id) => id !== 'res_20'), 'res_new']);
    expect(view.get('res_3')?.version).toBe(2);
    expect(idsOf(view.list({ tags: ['tenth'], limit: 100, offset: 0 }))).toEqual(['res_0', 'res_3', 'res_10']);
    expect(idsOf(view.list({ tags: ['new'], limit: 100, offset: 0 }))).toEqual(['res_3']);
    expect(view.list({ tags: ['tenth', 'new'], limit: 100, offset: 0 }).total).toBe(1);
    expect(idsOf(view.list({ tags: [], limit: 2, offset: 23 }))).toEqual(['res_24', 'res_new']);
  });

  it('reads the rest in larger chunks when told to (several processes), and stops at the first short one', async () => {
    const storage = accountOf(37);
    const asked: number[] = [];
    const model = new InMemoryResourceReadModel(
      async (accountId, limit, afterSeq, orderLimit) => {
        asked.push(limit);
        return storage.load(accountId, limit, afterSeq, orderLimit);
      },
      { chunk: 10, laterChunk: 15 },
    );
    expect(await model.view('acc_1')).toBeUndefined();
    await vi.waitFor(() => expect(model.view('acc_1')).toBeDefined());
    // 10, then 15 and 15 of which 12 came: the account is read, with no read past its end.
    expect(asked).toEqual([10, 15, 15]);
    const view = await viewOf(model);
    expect(view.list({ tags: [], limit: 100, offset: 0 }).total).toBe(37);
    expect(idsOf(view.list({ tags: ['tenth'], limit: 100, offset: 0 }))).toEqual(['res_0', 'res_10', 'res_20', 'res_30']);
  });

  it('knows where each position of the whole account starts while reading it, until a deletion is announced', async () => {
    const { storage, model, release } = readInChunksOf10(25);
    expect(await model.view('acc_1')).toBeUndefined();
    // Past the first chunk (10) too: the order covers the whole account.
    expect([0, 9, 10, 24].map((offset) => model.reading('acc_1')?.creationSeqAt(offset))).toEqual([1, 10, 11, 25]);
    expect(model.reading('acc_1')?.creationSeqAt(25)).toBeUndefined();
    expect(model.reading('acc_2')?.creationSeqAt(0)).toBeUndefined();
    // Updates and creations leave every position where it was.
    model.committed('acc_1', [resourceEvent(26, 'resource.updated', resource('res_3', 2)), resourceEvent(27, 'resource.created', resource('res_new'))]);
    expect(model.reading('acc_1')?.creationSeqAt(24)).toBe(25);
    model.committed('acc_1', [resourceEvent(28, 'resource.deleted', resource('res_5'))]);
    expect(model.reading('acc_1')?.creationSeqAt(0)).toBeUndefined();
    storage.state.records = [...storage.state.records.filter((each) => each.id !== 'res_5'), record(resource('res_new'), 27)];
    release();
    await vi.waitFor(() => expect(model.held('acc_1')).toBeDefined());
    // Read: memory answers, and nothing is kept of the order.
    expect(model.reading('acc_1')?.creationSeqAt(0)).toBeUndefined();
    expect((await viewOf(model)).list({ tags: [], limit: 1, offset: 24 }).total).toBe(25);
  });

  it('answers from what is read so far while nothing changed, and leaves the rest to storage', async () => {
    const { model, release } = readInChunksOf10(25);
    expect(await model.view('acc_1')).toBeUndefined();
    const reading = model.reading('acc_1')!;
    // The first chunk: res_0 to res_9.
    expect(reading.get('res_9')?.id).toBe('res_9');
    expect(reading.get('res_10')).toBeUndefined();
    expect(idsOf({ data: reading.pageWithin({ tags: [], limit: 3, offset: 7 })! })).toEqual(['res_7', 'res_8', 'res_9']);
    expect(reading.pageWithin({ tags: [], limit: 3, offset: 8 })).toBeUndefined();
    expect(idsOf({ data: reading.pageWithin({ tags: ['tenth'], limit: 1, offset: 0 })! })).toEqual(['res_0']);
    // Only res_0 of the tag is read: a page of two may need a later chunk.
    expect(reading.pageWithin({ tags: ['tenth'], limit: 2, offset: 0 })).toBeUndefined();
    expect(reading.pageWithin({ type: 'sensor', tags: ['tenth'], limit: 1, offset: 0 })).toBeUndefined();
    // The whole account's total from its creation order; a filter's once storage counted it.
    expect(reading.total({ tags: [], limit: 1, offset: 0 })).toBe(25);
    expect(reading.total({ tags: ['tenth'], limit: 1, offset: 0 })).toBeUndefined();
    reading.counted({ tags: ['tenth'], limit: 1, offset: 0 }, 3);
    reading.counted({ type: 'sensor', tags: ['tenth'], limit: 1, offset: 0 }, 2);
    expect(reading.total({ tags: ['tenth'], limit: 50, offset: 2 })).toBe(3);
    expect(reading.total({ type: 'sensor', tags: ['tenth'], limit: 1, offset: 0 })).toBeUndefined();
    // Another kind of event changes no resource; an update does, and from then on storage answers
    // (positions still hold: only a deletion moves them).
    model.committed('acc_1', [{ id: 26, type: 'custom.ping', data: {}, createdAt: '2026-11-23T10:00:00.000Z' }]);
    expect(reading.get('res_9')).toBeDefined();
    model.committed('acc_1', [resourceEvent(27, 'resource.updated', resource('res_9', 2))]);
    expect(reading.get('res_9')).toBeUndefined();
    expect(reading.get('res_0')).toBeUndefined();
    expect(reading.pageWithin({ tags: [], limit: 1, offset: 0 })).toBeUndefined();
    expect(reading.total({ tags: [], limit: 1, offset: 0 })).toBeUndefined();
    expect(reading.total({ tags: ['tenth'], limit: 1, offset: 0 })).toBeUndefined();
    reading.counted({ tags: ['tenth'], limit: 1, offset: 0 }, 3);
    expect(reading.total({ tags: ['tenth'], limit: 1, offset: 0 })).toBeUndefined();
    expect(reading.creationSeqAt(24)).toBe(25);
    release();
    await vi.waitFor(() => expect(model.held('acc_1')).toBeDefined());
    expect(model.reading('acc_1')).toBeUndefined();
    expect((await viewOf(model)).get('res_9')?.version).toBe(2);
  });

  it('reads no creation order for an account that fits one chunk', async () => {
    const storage = accountOf(9);
    const model = new InMemoryResourceReadModel(storage.load, { chunk: 10 });
    let release = () => {};
    storage.state.gates[0] = new Promise<void>((resolve) => (release = resolve));
    const viewing = model.view('acc_1');
    expect(model.reading('acc_1')?.creationSeqAt(0)).toBeUndefined();
    expect(model.reading('acc_1')?.get('res_0')).toBeUndefined();
    release();
    expect(await viewing).toBeDefined();
  });

  it('leaves an account larger than half its budget to storage, and keeps it again once it has shrunk', async () => {
    const storage = accountOf(40);
    const weight = storage.state.records[0]!.json.length + 420;
    // Half of what the cache counts (8/9 of the budget) holds 30 resources.
    // Long enough that no pause of a busy machine between the looks below makes a recheck due.
    const model = new InMemoryResourceReadModel(storage.load, { budget: weight * 67.5, tooLargeRecheckMs: 1_000, chunk: 10 });
    expect(await model.view('acc_1')).toBeUndefined();
    await vi.waitFor(() => expect(storage.state.loads).toBeGreaterThanOrEqual(4), { interval: 1 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(model.view('acc_1')).toBeUndefined();
    const loads = storage.state.loads;
    expect(model.view('acc_1')).toBeUndefined();
    expect(storage.state.loads).toBe(loads);
    storage.state.records = storage.state.records.slice(0, 9);
    // Kept again once a recheck is due.
    await vi.waitFor(async () => expect((await viewOf(model)).list({ tags: [], limit: 1, offset: 0 }).total).toBe(9), { timeout: 30_000, interval: 50 });
  });

  it('knows an account too large from its creation order, without reading the rest', async () => {
    const storage = accountOf(40);
    // Half of what the cache counts (8/9 of the budget) is 4,200 bytes: at most 10 entries of 420 bytes besides their JSON.
    const model = new InMemoryResourceReadModel(storage.load, { budget: 9_450, tooLargeRecheckMs: 1_000, chunk: 10 });
    expect(await model.view('acc_1')).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(storage.state.loads).toBe(1);
    expect(model.view('acc_1')).toBeUndefined();
    expect(storage.state.loads).toBe(1);
  });

  it('forgets an account that grows past half its budget as it follows its commits', async () => {
    const storage = accountOf(5);
    const weight = storage.state.records[0]!.json.length + 420;
    const budget = weight * 20;
    const model = new InMemoryResourceReadModel(storage.load, { budget, chunk: 10 });
    await viewOf(model);
    model.committed(
      'acc_1',
      [6, 7, 8].map((id) => resourceEvent(id, 'resource.created', resource(`res_${id}`))),
    );
    expect(model.held('acc_1')).toBeDefined();
    // One resource at a time: held while it fits, forgotten once its weight, counted again after
    // drifting by more than an eighth, is past what one account may take, and never past half the budget.
    let id = 9;
    let heaviestHeld = (model.held('acc_1') as unknown as { weight: number }).weight;
    for (; id < 30; id++) {
      model.committed('acc_1', [resourceEvent(id, 'resource.created', resource(`res_${id}`))]);
      const held = model.held('acc_1') as { weight: number } | undefined;
      if (!held) break;
      heaviestHeld = Math.max(heaviestHeld, held.weight);
    }
    expect(id).toBeLessThan(30);
    expect(heaviestHeld).toBeGreaterThan(model.maxViewBytes - weight);
    expect(heaviestHeld).toBeLessThanOrEqual(budget / 2);
  });

  it('counts a JSON block shared by records read together until the last of them goes', async () => {
    const values = [resource('res_a'), resource('res_b')];
    const sizes = values.map((value) => Buffer.byteLength(JSON.stringify(value)));
    const block = { bytes: sizes[0]! + sizes[1]!, held: 2 };
    const storage = fakeStorage(
      values.map((value, index) => ({ ...record(value, index + 1), block })),
      2,
    );
    const model = new InMemoryResourceReadModel(storage.load);
    await viewOf(model);
    const weight = () => (model.held('acc_1') as unknown as { weight: number }).weight;
    expect(weight()).toBe(2 * 420 + block.bytes);
    // res_a's new JSON has a buffer of its own; its old JSON stays counted while res_b holds the block.
    model.committed('acc_1', [resourceEvent(3, 'resource.updated', resource('res_a', 2))]);
    const updated = model.held('acc_1')!.get('res_a')!.json.length;
    expect(weight()).toBe(2 * 420 + block.bytes + updated);
    model.committed('acc_1', [resourceEvent(4, 'resource.deleted', resource('res_b'))]);
    expect(weight()).toBe(420 + updated);
    expect(block.held).toBe(0);
  });

  it('forgets the least recently used accounts past its memory budget', async () => {
    // About 1,400 each: four fit in the 6,000 the cache counts of 6,750, a fifth does not.
    const storage = fakeStorage([record(resource('res_a', 1, { attributes: { text: 'x'.repeat(850) } }), 1)], 1);
    const model = new InMemoryResourceReadModel(storage.load, { budget: 6_750 });
    for (const accountId of ['acc_1', 'acc_2', 'acc_3', 'acc_4', 'acc_1', 'acc_5']) await viewOf(model, accountId);
    expect(storage.state.loads).toBe(5);
    // acc_2 was used least recently, so it went.
    for (const accountId of ['acc_1', 'acc_3', 'acc_4', 'acc_5']) expect(model.view(accountId)).not.toBeInstanceOf(Promise);
    expect(model.view('acc_2')).toBeInstanceOf(Promise);
  });
});

describe('InMemoryResourceReadModel with several processes (PostgreSQL)', () => {
  /** The shared log: what other processes committed, read by a view catching up; `gate` holds the next read. */
  function sharedLog(events: Event[] = []) {
    const log = { events, reads: [] as Array<[number, number]>, newest: 0, fail: false, gate: undefined as Promise<void> | undefined };
    const others: OtherProcesses = {
      events: async (_accountId, after, upTo) => {
        log.reads.push([after, upTo]);
        await log.gate;
        if (log.fail) throw new Error('storage is down');
        return log.events.filter((event) => event.id > after && event.id <= upTo);
      },
      newestId: async () => log.newest,
    };
    return { log, others };
  }

  it("follows another process's commits: storage answers from the notification until the log's events are applied", async () => {
    const storage = fakeStorage([record(resource('res_a'), 1)], 1);
    const { log, others } = sharedLog([resourceEvent(2, 'resource.updated', resource('res_a', 2)), resourceEvent(3, 'resource.created', resource('res_b'))]);
    let release = () => {};
    log.gate = new Promise<void>((resolve) => (release = resolve));
    const model = new InMemoryResourceReadModel(storage.load, { others });
    expect((await viewOf(model)).get('res_a')?.version).toBe(1);
    model.heard('acc_1', 3);
    // Behind what was heard of: not answered from memory, and not read again either.
    expect(model.view('acc_1')).toBeUndefined();
    expect(log.reads).toEqual([[1, 3]]);
    release();
    await vi.waitFor(() => expect(model.view('acc_1')).toBeDefined());
    const view = await viewOf(model);
    expect(view.get('res_a')?.version).toBe(2);
    expect(view.list({ tags: [], limit: 10, offset: 0 }).total).toBe(2);
    expect(storage.state.loads).toBe(1);
    // Its own notification, heard after the events: nothing more to read.
    model.heard('acc_1', 3);
    expect(model.view('acc_1')).toBe(view);
    expect(log.reads).toHaveLength(1);
  });

  it("reads the gap from the log when its own commit follows another process's it was not yet told of", async () => {
    const storage = fakeStorage([record(resource('res_a'), 1)], 1);
    const { log, others } = sharedLog([resourceEvent(2, 'resource.updated', resource('res_a', 2)), resourceEvent(3, 'resource.updated', resource('res_a', 3))]);
    const model = new InMemoryResourceReadModel(storage.load, { others });
    await viewOf(model);
    model.committed('acc_1', [resourceEvent(3, 'resource.updated', resource('res_a', 3))]);
    expect(model.view('acc_1')).toBeUndefined();
    await vi.waitFor(() => expect(model.view('acc_1')).toBeDefined());
    expect((await viewOf(model)).get('res_a')?.version).toBe(3);
    expect(log.reads).toEqual([[1, 3]]);
    expect(storage.state.loads).toBe(1);
  });

  it('forgets the view when the log cannot be read, or lacks what was announced', async () => {
    const storage = fakeStorage([record(resource('res_a'), 1)], 1);
    const { log, others } = sharedLog();
    const model = new InMemoryResourceReadModel(storage.load, { others });
    await viewOf(model);
    log.fail = true;
    model.heard('acc_1', 2);
    await vi.waitFor(() => expect(model.held('acc_1')).toBeUndefined());
    log.fail = false;
    storage.state.newestEventId = 2;
    await viewOf(model);
    // Announced up to 4, but the log holds nothing after 2 (pruned meanwhile).
    model.heard('acc_1', 4);
    await vi.waitFor(() => expect(model.held('acc_1')).toBeUndefined());
    expect(storage.state.loads).toBe(2);
  });

  it('a commit heard of while the account is read leaves the view behind it until the log is read', async () => {
    const storage = fakeStorage([record(resource('res_a'), 1)], 1);
    const { log, others } = sharedLog([resourceEvent(2, 'resource.deleted', resource('res_a'))]);
    let releaseLoad = () => {};
    storage.state.gates[0] = new Promise<void>((resolve) => (releaseLoad = resolve));
    const model = new InMemoryResourceReadModel(storage.load, { others });
    const first = model.view('acc_1');
    model.heard('acc_1', 2);
    releaseLoad();
    // The first readers are answered by storage: what was read may be older than the heard commit.
    expect(await first).toBeUndefined();
    await vi.waitFor(() => expect(model.view('acc_1')).toBeDefined());
    expect((await viewOf(model)).get('res_a')).toBeUndefined();
    expect(log.reads).toEqual([[1, 2]]);
  });

  it("does not trust what a large account's reading has read once another process may have written", async () => {
    const storage = accountOf(25);
    const { others } = sharedLog();
    const model = new InMemoryResourceReadModel(storage.load, { others, chunk: 10 });
    let release = () => {};
    storage.state.gates[1] = new Promise<void>((resolve) => (release = resolve));
    expect(await model.view('acc_1')).toBeUndefined();
    const reading = model.reading('acc_1')!;
    expect(reading.get('res_3')).toBeDefined();
    expect(reading.creationSeqAt(20)).toBe(21);
    model.heard('acc_1', 26);
    expect(reading.get('res_3')).toBeUndefined();
    expect(reading.creationSeqAt(20)).toBeUndefined();
    expect(reading.total({ tags: [], limit: 10, offset: 0 })).toBeUndefined();
    release();
  });

  it('keeps nothing while notifications may be missed, and confirms a kept view against storage once in a while', async () => {
    const storage = fakeStorage([record(resource('res_a'), 1)], 1);
    const { log, others } = sharedLog([resourceEvent(2, 'resource.updated', resource('res_a', 2))]);
    const model = new InMemoryResourceReadModel(storage.load, { others, confirmMs: 20 });
    await viewOf(model);
    model.lost();
    expect(model.held('acc_1')).toBeUndefined();
    expect(model.view('acc_1')).toBeUndefined();
    model.regained();
    await viewOf(model);
    expect(storage.state.loads).toBe(2);
    // A commit whose notification never came: found by the confirmation, then read from the log.
    log.newest = 2;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(model.view('acc_1')).toBeDefined();
    await vi.waitFor(async () => expect((await viewOf(model)).get('res_a')?.version).toBe(2));
    expect(log.reads).toEqual([[1, 2]]);
  });
});
