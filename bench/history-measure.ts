// The history rows' measurements on one backend (bench/history-rows.ts makes the rows): PATCH
// against a server with history and one with HISTORY=off, in alternating rounds; then, on a server
// whose housekeeping runs every HISTORY_INTERVAL_MS_FAST, the reads of a resource with 30 days of
// 1 Hz points, before and after an account of 100 resources × 30 days of 1-minute points is added
// beside it; the bytes each raw point takes (SQLite) and the server's RSS throughout.
import { join } from 'node:path';
import Database from '../src/storage/sqlite-driver.js';
import pg from 'pg';
import { rssMb, sleep, stop } from './children.js';
import { JsonClient } from './http-client.js';
import { cannon, measureHttp, type HttpMeasurement } from './http-rows.js';
import { httpSpecsFor, type HttpSpec } from './http-specs.js';
import { historyScale, seedHistory, waitForHousekeeping, type BackfillOutcome, type SeededHistory } from './history-seed.js';
import type { Options } from './options.js';
import { log, round } from './results.js';
import { launchDevdata, runCli, serviceEnv, type Launched } from './server.js';
import { percentile } from './stats.js';

/**
 * Housekeeping's interval on the reads' server: it aggregates the backfilled hours within the run.
 * Not much shorter: waitForHousekeeping polls every 200 ms and must see the runs that say done.
 */
const HISTORY_INTERVAL_MS_FAST = 500;
/**
 * Readers at once on the read rows: one, so the latency is what a chart waits for. A read of a day
 * costs the server tens of milliseconds of its one thread: readers at once wait for each other.
 */
export const READ_CONNECTIONS = 1;
const HOUR_MS = 3_600_000;
const FIVE_MINUTES_MS = 300_000;

export const READ_KINDS = ['day-5m', 'month-1h', 'page'] as const;
export type ReadKind = (typeof READ_KINDS)[number];

/** What a backend measured; `bytes` on SQLite only (dbstat), PostgreSQL's relation sizes there. */
export interface HistoryBackend {
  patch: { on: HttpMeasurement[]; off: HttpMeasurement[]; ratios: number[]; written: Footprint };
  reads: Record<ReadKind, { before: HttpMeasurement[]; after: HttpMeasurement[] }>;
  single: BackfillOutcome & { housekeepingSeconds: number };
  account: BackfillOutcome & { housekeepingSeconds: number };
  bytes: { single: Footprint; account: Footprint };
  /** RSS before any history, after the single resource's was backfilled and after it was read, and after the account's. */
  rss: { beforeMb: number | undefined; singleSeededMb: number | undefined; singleReadMb: number | undefined; accountMb: number | undefined };
}

/** history_points' bytes on disk (table and index) and its rows, at one moment. */
export interface Footprint {
  bytes: number;
  points: number;
}

/** A measurement `rounds` times, short rows as the large accounts' (at most 5 s after 1 s of warm-up). */
function shortened(options: Options): Options {
  return { ...options, duration: Math.min(options.duration, 5), warmup: Math.min(options.warmup, 1) };
}

/** The median (the lower middle one) of some numbers. */
export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

/** PATCH with history on and with HISTORY=off, each on its own fresh database, alternating which goes first. */
async function patchOnOff(
  options: Options,
  databaseUrls: [string, string],
  workDir: string,
  profileDir: string,
  name: string,
): Promise<HistoryBackend['patch']> {
  const servers: Launched[] = [];
  try {
    // Started together: each waits mostly for its own process.
    const launched = await Promise.allSettled([
      launchDevdata({ ...options, profile: false }, databaseUrls[0], workDir, profileDir, `history-on-${name}`),
      launchDevdata({ ...options, profile: false }, databaseUrls[1], workDir, profileDir, `history-off-${name}`, { HISTORY: 'off' }),
    ]);
    for (const each of launched) if (each.status === 'fulfilled') servers.push(each.value);
    for (const each of launched) if (each.status === 'rejected') throw each.reason;
    const [on, off] = servers.map((launched) => httpSpecsFor(launched.server.origin, launched.auth, launched.seeded).patch) as [HttpSpec, HttpSpec];
    const short = shortened(options);
    // Both warmed first (JIT, caches), so the first round is not of a cold server.
    if (short.warmup > 0) for (const spec of [on, off]) await cannon(spec, options, short.warmup);
    const result: Omit<HistoryBackend['patch'], 'written'> = { on: [], off: [], ratios: [] };
    for (let round_ = 0; round_ < options.rounds; round_++) {
      const order: Array<'on' | 'off'> = round_ % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
      for (const side of order) {
        const spec = side === 'on' ? on : off;
        const pid = servers[side === 'on' ? 0 : 1]!.server.child.pid;
        result[side].push(await measureHttp({ ...spec, label: `${spec.label}, history ${side} (${name}), round ${round_ + 1}` }, short, pid));
      }
      result.ratios.push(round(result.on.at(-1)!.requestsPerSecond / result.off.at(-1)!.requestsPerSecond, 3));
    }
    // The points the PATCH rounds wrote, a resource in turn: pages filled by live writes, interleaved point by point.
    await stopAll(servers.splice(0));
    return { ...result, written: await footprint(databaseUrls[0]) };
  } finally {
    await stopAll(servers);
  }
}

async function stopAll(servers: Launched[]): Promise<void> {
  for (const launched of servers) {
    launched.client.close();
    await stop(launched.server.child, 'SIGTERM', 15_000);
  }
}

/** The three reads of the single resource, its newest point at `resource.updatedAt`. */
export function readSpecs(origin: string, auth: Record<string, string>, resource: SeededHistory): Record<ReadKind, HttpSpec> {
  const path = `/api/v1/resources/${resource.id}/history`;
  const iso = (ms: number) => new Date(ms).toISOString();
  // Ranges end after the bucket holding the newest point, so the day has 288 buckets and the month 720.
  const dayEnd = resource.updatedAt - (resource.updatedAt % FIVE_MINUTES_MS) + FIVE_MINUTES_MS;
  const monthEnd = resource.updatedAt - (resource.updatedAt % HOUR_MS) + HOUR_MS;
  const spec = (kind: ReadKind, label: string, query: string): HttpSpec => ({
    key: `history-${kind}`,
    label,
    url: `${origin}${path}?${query}`,
    method: 'GET',
    headers: auth,
    connections: READ_CONNECTIONS,
  });
  return {
    'day-5m': spec('day-5m', 'history: a day as 288 buckets of 5m', `bucket=5m&from=${iso(dayEnd - 288 * FIVE_MINUTES_MS)}&to=${iso(dayEnd)}`),
    'month-1h': spec(
      'month-1h',
      'history: 30 days as 720 buckets of 1h (hourly aggregates)',
      `bucket=1h&from=${iso(monthEnd - 720 * HOUR_MS)}&to=${iso(monthEnd)}`,
    ),
    page: spec('page', 'history: a page of 1,000 raw points from a fixed time', `from=${iso(resource.updatedAt - 12 * HOUR_MS)}&limit=1000`),
  };
}

/** history_points on disk: SQLite's pages of the table (without rowid: the key is the only index), PostgreSQL's partitions and their indexes. */
async function footprint(databaseUrl: string): Promise<Footprint> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new Database(databaseUrl.slice('sqlite:'.length), { readonly: true, fileMustExist: true });
    try {
      const { bytes } = db.prepare("select coalesce(sum(pgsize), 0) as bytes from dbstat where name = 'history_points'").get() as { bytes: number };
      const { points } = db.prepare('select count(*) as points from history_points').get() as { points: number };
      return { bytes, points };
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const size = await client.query<{ bytes: string }>(
      `select coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) as bytes from pg_inherits i where i.inhparent = 'history_points'::regclass`,
    );
    const count = await client.query<{ points: string }>('select count(*) as points from history_points');
    return { bytes: Number(size.rows[0]!.bytes), points: Number(count.rows[0]!.points) };
  } finally {
    await client.end();
  }
}

/** Rounds of the reads: `--rounds`, one in a smoke run (which only checks the path: `npm test` runs it within its time). */
export function readRounds(options: Options): number {
  return options.smoke ? 1 : options.rounds;
}

/** Each read `readRounds` times in turn, so that a slow moment of the machine falls on all three. */
async function measureReads(
  specs: Record<ReadKind, HttpSpec>,
  options: Options,
  pid: number | undefined,
  when: string,
): Promise<Record<ReadKind, HttpMeasurement[]>> {
  const short = shortened(options);
  const measured = { 'day-5m': [], 'month-1h': [], page: [] } as Record<ReadKind, HttpMeasurement[]>;
  if (short.warmup > 0) for (const kind of READ_KINDS) await cannon(specs[kind], options, short.warmup);
  for (let round_ = 0; round_ < readRounds(options); round_++) {
    for (const kind of READ_KINDS)
      measured[kind].push(await measureHttp({ ...specs[kind], label: `${specs[kind].label} (${when}), round ${round_ + 1}` }, short, pid));
  }
  return measured;
}

/** Seconds to wait at most for housekeeping to aggregate what was backfilled. */
function housekeepingBound(options: Options): number {
  return options.smoke ? 60 : 1200;
}

/** Every history measurement on one backend; `databaseUrl(name)` gives each server a fresh database. */
export async function measureHistoryBackend(
  options: Options,
  databaseUrl: (name: string) => Promise<string>,
  workDir: string,
  profileDir: string,
  name: string,
): Promise<HistoryBackend> {
  const scale = historyScale(options.smoke);
  const patch = await patchOnOff(options, [await databaseUrl('history-on'), await databaseUrl('history-off')], workDir, profileDir, name);

  const url = await databaseUrl('history-reads');
  // The profile, when asked for, is of the reads' server on SQLite.
  const launched = await launchDevdata({ ...options, profile: options.profile && name === 'SQLite' }, url, workDir, profileDir, `history-reads-${name}`, {
    HISTORY_INTERVAL_MS: String(HISTORY_INTERVAL_MS_FAST),
  });
  const { server, client } = launched;
  const pid = server.child.pid;
  const accountClients: JsonClient[] = [];
  try {
    await sleep(options.smoke ? 300 : 2000);
    const rss: HistoryBackend['rss'] = { beforeMb: rssMb(pid), singleSeededMb: undefined, singleReadMb: undefined, accountMb: undefined };

    log(`history (${name}): backfilling one sensor with ${scale.days} days of points every ${scale.singleStepMs / 1000} s`);
    const singleSeeded = await seedHistory(client, 'history sensor', 1, scale.days, scale.singleStepMs);
    log(
      `history (${name}): ${singleSeeded.points.toLocaleString('en-US')} points in ${singleSeeded.requests} requests, ${singleSeeded.seconds} s; waiting for housekeeping`,
    );
    const singleKept = await waitForHousekeeping(client, housekeepingBound(options));
    log(`history (${name}): housekeeping caught up in ${singleKept.seconds} s`);
    const single = { ...singleSeeded, housekeepingSeconds: singleKept.seconds };
    rss.singleSeededMb = rssMb(pid);
    const singleFootprint = await footprint(url);
    const specs = readSpecs(server.origin, launched.auth, singleSeeded.resources[0]!);
    const before = await measureReads(specs, options, pid, 'alone');
    rss.singleReadMb = rssMb(pid);

    // The account beside it: another account of the same server, with a key of its own.
    const env = serviceEnv(options, url, 0);
    const created = JSON.parse(await runCli(['accounts', 'create', '--name', 'History', '--json'], env)) as { apiKey: { key: string } };
    const accountClient = new JsonClient(server.origin, { authorization: `Bearer ${created.apiKey.key}` }, 4);
    accountClients.push(accountClient);
    log(
      `history (${name}): backfilling an account of ${scale.accountResources} sensors with ${scale.days} days of points every ${scale.accountStepMs / 1000} s`,
    );
    const accountSeeded = await seedHistory(accountClient, 'history account sensor', scale.accountResources, scale.days, scale.accountStepMs);
    log(
      `history (${name}): ${accountSeeded.points.toLocaleString('en-US')} points in ${accountSeeded.requests} requests, ${accountSeeded.seconds} s; waiting for housekeeping`,
    );
    const accountKept = await waitForHousekeeping(client, housekeepingBound(options));
    log(`history (${name}): housekeeping caught up in ${accountKept.seconds} s`);
    const account = { ...accountSeeded, housekeepingSeconds: accountKept.seconds };
    const accountFootprint = await footprint(url);
    const after = await measureReads(specs, options, pid, 'beside the account');
    rss.accountMb = rssMb(pid);
    const reads = Object.fromEntries(READ_KINDS.map((kind) => [kind, { before: before[kind], after: after[kind] }])) as HistoryBackend['reads'];
    return {
      patch,
      reads,
      single,
      account,
      bytes: {
        single: singleFootprint,
        account: { bytes: accountFootprint.bytes - singleFootprint.bytes, points: accountFootprint.points - singleFootprint.points },
      },
      rss,
    };
  } finally {
    for (const each of accountClients) each.close();
    client.close();
    await stop(server.child, 'SIGTERM', 15_000);
  }
}

/** The SQLite databases' names: a file each in the work directory. */
export function sqliteDatabases(workDir: string): (name: string) => Promise<string> {
  return async (name) => `sqlite:${join(workDir, `${name}.db`)}`;
}
