// Seeding resources' history for the history rows (issue #40): sensors created, then their points
// backfilled through POST /api/v1/resources/{id}/history as many as a request takes, up to each
// one's updatedAt and within the raw retention; and waiting until housekeeping has aggregated them.
import { inParallel, type JsonClient } from './http-client.js';
import { sleep } from './children.js';
import { log, round } from './results.js';

const DAY_MS = 86_400_000;
/** Points per backfill request: the API's most (capabilities' `maxBackfillPoints`). */
export const BACKFILL_POINTS = 10_000;
/**
 * The oldest point lies this far inside the raw retention, so that it is still inside when its
 * request is sent (a backfill before `now − HISTORY_RETENTION_DAYS` is refused).
 */
const RETENTION_MARGIN_MS = 10 * 60_000;
/** Backfills in flight at once: one parses while the other writes. */
const BACKFILL_CONCURRENCY = 2;

/** How much history the rows seed: a full run's, or a smoke run's few thousand points. */
export interface HistoryScale {
  /** Days of points before each resource's updatedAt (the retention's 30 in a full run). */
  days: number;
  /** The single resource's interval between points (1 Hz). */
  singleStepMs: number;
  /** The account beside it: its resources and their interval. */
  accountResources: number;
  accountStepMs: number;
}

export function historyScale(smoke: boolean): HistoryScale {
  return smoke
    ? { days: 2, singleStepMs: 60_000, accountResources: 4, accountStepMs: 300_000 }
    : { days: 30, singleStepMs: 1000, accountResources: 100, accountStepMs: 60_000 };
}

export interface SeededHistory {
  id: string;
  /** The resource's updatedAt (epoch ms): its newest point, where the read rows' ranges end. */
  updatedAt: number;
}

export interface BackfillOutcome {
  resources: SeededHistory[];
  points: number;
  requests: number;
  seconds: number;
}

/** A sensor reading: a slow wave with some jitter, to one decimal, as a thermometer sends. */
function reading(at: number, resource: number): number {
  return round(20 + 3 * Math.sin(at / 3_600_000 + resource) + ((at / 1000 + resource * 7) % 10) / 20, 1);
}

/** `count` sensors, created one after another: each one's updatedAt is when it was made. */
async function createSensors(client: JsonClient, prefix: string, count: number): Promise<SeededHistory[]> {
  const made: SeededHistory[] = [];
  for (let index = 0; index < count; index++) {
    const created = (await client.expect(201, 'POST', '/api/v1/resources', {
      name: `${prefix} ${index + 1}`,
      type: 'sensor',
      state: 21.5,
      attributes: { unit_of_measurement: '°C', device_class: 'temperature' },
      tags: ['bench-history'],
    })) as { id: string; updatedAt: string };
    made.push({ id: created.id, updatedAt: Date.parse(created.updatedAt) });
  }
  return made;
}

/**
 * Creates `count` sensors and backfills each with a point every `stepMs` over the `days` days up to
 * its updatedAt, oldest first. The requests go round the resources (the first chunk of each, then
 * the second…), so the resources' points are interleaved in the table as live writes would be.
 */
export async function seedHistory(client: JsonClient, prefix: string, count: number, days: number, stepMs: number): Promise<BackfillOutcome> {
  const resources = await createSensors(client, prefix, count);
  const started = Date.now();
  const perResource = Math.floor((days * DAY_MS - RETENTION_MARGIN_MS) / stepMs);
  const chunks = Math.ceil(perResource / BACKFILL_POINTS);
  let points = 0;
  let sent = 0;
  let lastLog = Date.now();
  await inParallel(chunks * count, BACKFILL_CONCURRENCY, async (request) => {
    const chunk = Math.floor(request / count);
    const which = request % count;
    const resource = resources[which]!;
    // Point i (0 the oldest) lies (perResource − 1 − i) steps before updatedAt: the newest is updatedAt itself.
    const first = chunk * BACKFILL_POINTS;
    const size = Math.min(BACKFILL_POINTS, perResource - first);
    const batch = Array.from({ length: size }, (_, offset) => {
      const at = resource.updatedAt - (perResource - 1 - (first + offset)) * stepMs;
      return { at: new Date(at).toISOString(), state: reading(at, which) };
    });
    const result = (await client.expect(200, 'POST', `/api/v1/resources/${resource.id}/history`, { points: batch })) as { inserted: number };
    points += result.inserted;
    sent++;
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(`history: ${prefix}: ${points.toLocaleString('en-US')} points backfilled in ${sent} requests (${Math.round((Date.now() - started) / 1000)} s)`);
    }
  });
  return { resources, points, requests: sent, seconds: round((Date.now() - started) / 1000, 1) };
}

interface HistoryWorker {
  lastRunAt?: string | null;
  lastRun?: { hoursBuilt: number; staleRebuilt: number; rowsDeleted: number; partitionsDropped: number; done: boolean; sweptAll: boolean } | null;
}

async function historyWorker(client: JsonClient): Promise<HistoryWorker | undefined> {
  const status = (await client.send('GET', '/api/v1/status')).body as { workers?: { history?: HistoryWorker } };
  return status.workers?.history;
}

/**
 * Waits until housekeeping has caught up with every point written before now: two runs that ended
 * after now, each reporting `done` (a run that began before the last backfill committed may end
 * after it and still say done; the second began after the first ended). Returns seconds waited.
 */
export async function waitForHousekeeping(client: JsonClient, boundSeconds: number): Promise<{ seconds: number; hoursBuilt: number }> {
  const since = Date.now();
  let doneRuns = 0;
  let hoursBuilt = 0;
  let seenRun: string | undefined;
  let lastLog = since;
  while (Date.now() - since < boundSeconds * 1000) {
    const worker = await historyWorker(client);
    if (worker?.lastRun === undefined) throw new Error('GET /api/v1/status has no workers.history.lastRun (the server is older than f89511e)');
    const at = worker.lastRunAt ?? undefined;
    if (at !== undefined && at !== seenRun && Date.parse(at) > since && worker.lastRun) {
      seenRun = at;
      hoursBuilt += worker.lastRun.staleRebuilt + worker.lastRun.hoursBuilt;
      if (worker.lastRun.done && ++doneRuns === 2) return { seconds: round((Date.now() - since) / 1000, 1), hoursBuilt };
    }
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(`history: housekeeping has built at least ${hoursBuilt.toLocaleString('en-US')} hours so far (${Math.round((Date.now() - since) / 1000)} s)`);
    }
    await sleep(200);
  }
  throw new Error(`history housekeeping did not catch up within ${boundSeconds} s (at least ${hoursBuilt} hours built)`);
}
