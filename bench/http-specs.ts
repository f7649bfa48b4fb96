// What each HTTP row sends: its request, how each one varies, and its goal.
import type { HttpRowKey } from './options.js';
import { round } from './results.js';
import { eventPagePath, type Seeded } from './seed.js';

export interface HttpSpec {
  key: string;
  label: string;
  url: string;
  method: 'GET' | 'PATCH' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Varies each request (path, body, headers); cheap, so the load generator stays the same. */
  vary?: (index: number) => { path?: string; body?: string; headers?: Record<string, string> };
  /**
   * Against the baseline's req/s; with `ofPageFloor` against the floor that sends the event page's
   * bytes; with `ofRow` against another row of the same run (its operations per second), `maxP99Ms` too.
   */
  target?: { minRatio: number; ofPageFloor?: boolean; ofRow?: HttpRowKey; maxP99Ms?: number };
  /** Writes per request (a batch's operations): the row's operations per second are req/s × this. */
  operations?: number;
  /** Its own number of connections: a few batches at once, as an import or a gateway sends them. */
  connections?: number;
}

/** Batches in flight at once in the batch rows. */
const BATCH_CONNECTIONS = 4;

/** Paths with cursors in a fixed stride through the log, so every run reads the same cursors in the same order. */
export function catchupCursors(newestEventId: number, path: string): (index: number) => { path: string } {
  return (index) => ({ path: `${path}?after=${(index * 7919) % Math.max(1, newestEventId - 100)}&limit=100` });
}

/** The service's HTTP rows against one running server. */
export function httpSpecsFor(origin: string, auth: Record<string, string>, seeded: Seeded): Record<HttpRowKey, HttpSpec> {
  const ids = seeded.resourceIds;
  const eventPage = eventPagePath(seeded.newestEventId);
  const patch: HttpSpec = {
    key: 'patch',
    label: 'PATCH /api/v1/resources/{id} (1 write + 1 event)',
    url: `${origin}/api/v1/resources/${ids[0]}`,
    method: 'PATCH',
    headers: auth,
    body: JSON.stringify({ state: 21.5 }),
    vary: (index) => patchOf(ids, index),
    target: { minRatio: 0.35 },
  };
  const publish: HttpSpec = {
    key: 'publish',
    label: 'POST /api/v1/events',
    url: `${origin}/api/v1/events`,
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ type: 'custom.bench.load', data: { resource: seeded.resource } }),
  };
  return {
    get: {
      key: 'get',
      label: 'GET /api/v1/resources/{id}',
      url: `${origin}/api/v1/resources/${ids[0]}`,
      method: 'GET',
      headers: auth,
      target: { minRatio: 0.6 },
    },
    list: {
      key: 'list',
      label: 'GET /api/v1/resources?limit=50',
      url: `${origin}/api/v1/resources?limit=50`,
      method: 'GET',
      headers: auth,
      target: { minRatio: 0.3 },
    },
    events: {
      key: 'events',
      label: `GET ${eventPage}`,
      url: `${origin}${eventPage}`,
      method: 'GET',
      headers: auth,
      target: { minRatio: 0.3 },
    },
    catchup: {
      key: 'catchup',
      label: 'GET /api/v1/events?after={any cursor}&limit=100 (catching up: cursors spread over the whole log, most older than the newest 1,000)',
      url: `${origin}/api/v1/events?after=0&limit=100`,
      method: 'GET',
      headers: auth,
      vary: catchupCursors(seeded.newestEventId, '/api/v1/events'),
      target: { minRatio: 0.6, ofPageFloor: true },
    },
    patch,
    publish,
    'patch-keyed': keyed(patch, 'patch-keyed', 'PATCH /api/v1/resources/{id} with a new Idempotency-Key each (its answer stored with the write)'),
    'publish-keyed': keyed(publish, 'publish-keyed', 'POST /api/v1/events with a new Idempotency-Key each'),
    batch100: batchOfUpdates(origin, auth, ids, 100, { minRatio: 10, ofRow: 'patch', maxP99Ms: 50 }),
    batch1000: batchOfUpdates(origin, auth, ids, 1000),
    'batch-create': {
      key: 'batch-create',
      label: `POST /api/v1/batch, 100 creates, ${BATCH_CONNECTIONS} at once (the account grows by them; PocketBase: ~1,800 creates/s on 2 vCPUs)`,
      url: `${origin}/api/v1/batch`,
      method: 'POST',
      headers: auth,
      operations: 100,
      connections: BATCH_CONNECTIONS,
      vary: (index) => ({
        body: JSON.stringify({
          operations: Array.from({ length: 100 }, (_, item) => ({ op: 'create', name: `bench ${index}.${item}`, type: 'sensor', state: item })),
        }),
      }),
    },
  };
}

/** A new Idempotency-Key for each request of the process: a row's warm-up and measurement, and each server, use new ones, so none is a replay. */
const keyRun = Date.now().toString(36);
let keysMade = 0;
const newKey = () => `${keyRun}-${++keysMade}`;

/** A row again, each request with a new Idempotency-Key, against the row itself. */
function keyed(spec: HttpSpec, key: HttpRowKey, label: string): HttpSpec {
  const vary = spec.vary;
  return {
    ...spec,
    key,
    label,
    vary: (index) => ({ ...vary?.(index), headers: { 'idempotency-key': newKey() } }),
    target: { minRatio: 0.9, ofRow: spec.key as HttpRowKey },
  };
}

/** The PATCH row's request number `index`: a resource in turn, a state of its own. */
function patchOf(ids: readonly string[], index: number): { path: string; body: string } {
  return { path: `/api/v1/resources/${ids[index % ids.length]}`, body: `{"state":${round(15 + (index % 100) / 10, 1)}}` };
}

/** POST /api/v1/batch of `size` state updates, spread over the seeded resources as the PATCH row's are. */
function batchOfUpdates(origin: string, auth: Record<string, string>, ids: readonly string[], size: number, target?: HttpSpec['target']): HttpSpec {
  return {
    key: `batch${size}`,
    label: `POST /api/v1/batch, ${size} state updates (${size} writes + ${size} events), ${BATCH_CONNECTIONS} at once`,
    url: `${origin}/api/v1/batch`,
    method: 'POST',
    headers: auth,
    operations: size,
    connections: BATCH_CONNECTIONS,
    vary: (index) => ({
      body: JSON.stringify({
        operations: Array.from({ length: size }, (_, item) => ({
          op: 'update',
          id: ids[(index * size + item) % ids.length],
          state: round(15 + (item % 100) / 10, 1),
        })),
      }),
    }),
    ...(target && { target }),
  };
}
