// The history rows (issue #40, "Speed and size"), on SQLite and, when there is one, PostgreSQL:
// PATCH with history on against HISTORY=off; a resource's history read as buckets of a day and of
// 30 days and as a page of raw points, alone and with a large account's history beside it; the
// bytes a raw point takes on disk; the server's RSS before and after. Measured on servers of their
// own (bench/history-measure.ts). See bench/README.md, "History".
import { rmSync } from 'node:fs';
import type { HttpMeasurement } from './http-rows.js';
import {
  measureHistoryBackend,
  median,
  READ_CONNECTIONS,
  READ_KINDS,
  readRounds,
  sqliteDatabases,
  type HistoryBackend,
  type ReadKind,
} from './history-measure.js';
import { BACKFILL_POINTS, historyScale } from './history-seed.js';
import type { Options } from './options.js';
import { postgresForBench } from './postgres.js';
import { log, round, type PostgresMeasurement, type Row } from './results.js';
import { freePort } from './server.js';

/** PATCH with history keeps at least this share of PATCH without it. */
export const PATCH_WITH_HISTORY_MIN = 0.9;
/** Each read's p99 goal, ms. */
const READ_P99_MS: Record<ReadKind, number> = { 'day-5m': 50, 'month-1h': 50, page: 20 };
/** Bytes on disk a raw point may take on SQLite, its index included. */
export const BYTES_PER_POINT_MAX = 40;

/** A bound on what measureHistoryRows takes, for the run's own bound. */
export function historySeconds(options: Options): number {
  if (!options.history) return 0;
  const short = Math.min(options.duration, 5) + Math.min(options.warmup, 1) + 20;
  // Three servers launched and seeded; PATCH on and off and the three reads twice, each `rounds` times; seeding and housekeeping.
  const perBackend = 3 * 60 + options.rounds * (2 + 2 * READ_KINDS.length) * short + (options.smoke ? 120 : 2 * 1200 + 900);
  return Math.ceil(perBackend * (options.postgres === 'none' ? 1 : 2));
}

/** The middle round of a row's rounds: median req/s, p50 and p99 each, errors summed. */
function combined(rounds: HttpMeasurement[]): HttpMeasurement {
  return {
    requestsPerSecond: median(rounds.map((each) => each.requestsPerSecond)),
    p50Ms: median(rounds.map((each) => each.p50Ms)),
    p99Ms: median(rounds.map((each) => each.p99Ms)),
    errors: rounds.reduce((sum, each) => sum + each.errors, 0),
    detail: {
      serverCpuUsPerRequest: median(rounds.map((each) => (each.detail.serverCpuUsPerRequest as number | null) ?? 0)),
      rounds: rounds.map((each) => ({
        requestsPerSecond: each.requestsPerSecond,
        p50Ms: each.p50Ms,
        p99Ms: each.p99Ms,
        errors: each.errors,
        serverCpuUsPerRequest: each.detail.serverCpuUsPerRequest,
      })),
    },
  };
}

/**
 * What the rows beside the account are judged on: on SQLite the server's CPU per request (its
 * queries run in its process, and CPU time moves less than req/s when other work shares the
 * machine: the rounds beside the account come minutes after those alone); on PostgreSQL req/s,
 * the database's work being in its own processes.
 */
type Measure = 'cpu' | 'rate';
const measureOf = (measure: Measure) => (each: HttpMeasurement) =>
  measure === 'rate' ? each.requestsPerSecond : ((each.detail.serverCpuUsPerRequest as number | null) ?? Number.NaN);

/** A read's figures beside the account against alone: the change of the rounds' medians, and the larger of the two sets of rounds' spreads (highest − lowest). */
function beside(
  reads: HistoryBackend['reads'][ReadKind],
  measure: Measure,
): { measure: string; ratio: number; change: number; spread: number; within: boolean } {
  const value = measureOf(measure);
  const spreadOf = (rounds: HttpMeasurement[]) => Math.max(...rounds.map(value)) - Math.min(...rounds.map(value));
  const alone = median(reads.before.map(value));
  const withAccount = median(reads.after.map(value));
  const change = round(Math.abs(withAccount - alone), 1);
  const spread = round(Math.max(spreadOf(reads.before), spreadOf(reads.after)), 1);
  const rateRatio = median(reads.after.map(measureOf('rate'))) / median(reads.before.map(measureOf('rate')));
  return { measure: measure === 'cpu' ? 'server CPU µs/request' : 'req/s', ratio: round(rateRatio, 3), change, spread, within: change <= spread };
}

function postgresOf(measured: HttpMeasurement, ratio: number | null): PostgresMeasurement {
  return {
    requestsPerSecond: measured.requestsPerSecond,
    p50Ms: measured.p50Ms,
    p99Ms: measured.p99Ms,
    errors: measured.errors,
    ratio,
    serverCpuUsPerRequest: (measured.detail.serverCpuUsPerRequest as number | null) ?? null,
  };
}

function httpRow(
  key: string,
  label: string,
  measured: HttpMeasurement,
  extra: Pick<Row, 'ratio' | 'ratioOf' | 'target' | 'met'>,
  pg?: PostgresMeasurement,
): Row {
  return { key, label, kind: 'http', ...measured, rssMb: null, ...extra, ...(pg && { postgres: pg }) };
}

/** Server CPU per request without history ÷ with, over the rounds' medians: the steadier comparison on a shared machine. */
function cpuRatio(patch: HistoryBackend['patch']): number | null {
  const cpu = (rounds: HttpMeasurement[]) => median(rounds.map((each) => (each.detail.serverCpuUsPerRequest as number | null) ?? Number.NaN));
  const ratio = cpu(patch.off) / cpu(patch.on);
  return Number.isFinite(ratio) ? round(ratio, 3) : null;
}

function patchRow(sqlite: HistoryBackend, postgres: HistoryBackend | undefined, rounds: number): Row {
  const ratio = median(sqlite.patch.ratios);
  const on = combined(sqlite.patch.on);
  const pgRatio = postgres && median(postgres.patch.ratios);
  const cpu = cpuRatio(sqlite.patch);
  const pgCpu = postgres && cpuRatio(postgres.patch);
  return httpRow(
    'history-patch',
    `PATCH /api/v1/resources/{id} with history on (a point with each write), against HISTORY=off: ${rounds} rounds alternating, the two servers on fresh databases`,
    {
      ...on,
      detail: {
        ...on.detail,
        off: combined(sqlite.patch.off),
        roundRatios: sqlite.patch.ratios,
        cpuRatio: cpu,
        ...(postgres && { postgres: { ...postgres.patch, cpuRatio: pgCpu } }),
      },
    },
    {
      ratio,
      ratioOf: 'the same with HISTORY=off (median of the rounds)',
      target: `≥ ${PATCH_WITH_HISTORY_MIN}× the same with HISTORY=off (here ${ratio}×${pgRatio !== undefined ? `; PostgreSQL ${pgRatio}×` : ''}, medians of ${rounds} rounds; CPU/request off ÷ on ${cpu}${pgCpu !== undefined ? `, PostgreSQL ${pgCpu}` : ''})`,
      met: ratio >= PATCH_WITH_HISTORY_MIN && on.errors === 0 && (pgRatio === undefined || pgRatio >= PATCH_WITH_HISTORY_MIN),
    },
    postgres && postgresOf(combined(postgres.patch.on), pgRatio!),
  );
}

/** "every second" / "every 60 s": a scale's interval in words. */
const everyWords = (stepMs: number) => (stepMs === 1000 ? '1 Hz points' : stepMs === 60_000 ? '1-minute points' : `points every ${stepMs / 1000} s`);

function readRows(sqlite: HistoryBackend, postgres: HistoryBackend | undefined, options: Options): Row[] {
  const rows: Row[] = [];
  const scale = historyScale(options.smoke);
  const count = (value: number) => value.toLocaleString('en-US');
  const perDay = Math.round(86_400_000 / scale.singleStepMs);
  const labels: Record<ReadKind, string> = {
    'day-5m': `GET …/history?bucket=5m: a day of ${everyWords(scale.singleStepMs)} (${count(perDay)}) as 288 buckets of 5 minutes`,
    'month-1h': `GET …/history?bucket=1h: the same resource's ${scale.days} days (${count(sqlite.single.points)} points) as 720 hourly buckets, after housekeeping aggregated them`,
    page: 'GET …/history?from=…&limit=1000: a page of 1,000 raw points from a fixed time',
  };
  const shortLabels: Record<ReadKind, string> = {
    'day-5m': 'the day as 5m buckets',
    'month-1h': `the ${scale.days} days as 1h buckets`,
    page: 'the page of 1,000 points',
  };
  const accountWords = `an account of ${scale.accountResources} resources × ${scale.days} days of ${everyWords(scale.accountStepMs)} (${count(sqlite.account.points)}) beside it`;
  for (const when of ['alone', 'beside'] as const) {
    for (const kind of READ_KINDS) {
      const reads = sqlite.reads[kind];
      const measured = combined(when === 'alone' ? reads.before : reads.after);
      const pgReads = postgres?.reads[kind];
      const pgMeasured = pgReads && combined(when === 'alone' ? pgReads.before : pgReads.after);
      const p99Goal = READ_P99_MS[kind];
      const p99Met = measured.p99Ms < p99Goal && measured.errors === 0 && (pgMeasured === undefined || (pgMeasured.p99Ms < p99Goal && pgMeasured.errors === 0));
      if (when === 'alone') {
        rows.push(
          httpRow(
            `history-${kind}`,
            `${labels[kind]}, ${READ_CONNECTIONS === 1 ? 'one reader at a time' : `${READ_CONNECTIONS} readers at once`} (median of ${readRounds(options)} rounds)`,
            measured,
            { ratio: null, ratioOf: '', target: `p99 < ${p99Goal} ms`, met: p99Met },
            pgMeasured && postgresOf(pgMeasured, null),
          ),
        );
        continue;
      }
      const change = beside(reads, 'cpu');
      const pgChange = pgReads && beside(pgReads, 'rate');
      const spreadWords = (each: ReturnType<typeof beside>) => `${count(each.change)} ${each.measure} vs ${count(each.spread)}`;
      rows.push(
        httpRow(
          `history-beside-${kind}`,
          `${shortLabels[kind]} again, with ${accountWords}`,
          { ...measured, detail: { ...measured.detail, change, ...(pgChange && { postgresChange: pgChange }) } },
          {
            ratio: change.ratio,
            ratioOf: 'the same alone',
            target: `changed by no more than the rounds' spread (SQLite: ${spreadWords(change)}${pgChange ? `; PostgreSQL: ${spreadWords(pgChange)}` : ''}), p99 < ${p99Goal} ms`,
            met: change.within && (pgChange === undefined || pgChange.within) && p99Met,
          },
          pgMeasured && postgresOf(pgMeasured, pgChange!.ratio),
        ),
      );
    }
  }
  return rows;
}

function sizeRows(sqlite: HistoryBackend, postgres: HistoryBackend | undefined, options: Options): Row[] {
  const scale = historyScale(options.smoke);
  const footprintOf = (backend: HistoryBackend, which: 'live' | 'single' | 'account') => (which === 'live' ? backend.patch.written : backend.bytes[which]);
  const row = (key: string, label: string, which: 'live' | 'single' | 'account'): Row => {
    const { bytes, points } = footprintOf(sqlite, which);
    const perPoint = points > 0 ? round(bytes / points, 1) : null;
    const pg = postgres && footprintOf(postgres, which);
    const pgPerPoint = pg && pg.points > 0 ? round(pg.bytes / pg.points, 1) : null;
    return {
      key,
      label: `${label}${pgPerPoint !== null ? ` (PostgreSQL: ${pgPerPoint} bytes, its partitions and their indexes)` : ''}`,
      kind: 'size',
      requestsPerSecond: null,
      p50Ms: null,
      p99Ms: null,
      errors: 0,
      rssMb: null,
      bytesPerPoint: perPoint,
      ratio: null,
      ratioOf: '',
      target: `≤ ${BYTES_PER_POINT_MAX} bytes a point on SQLite, index included`,
      met: perPoint !== null && perPoint <= BYTES_PER_POINT_MAX,
      detail: { bytes, points, ...(pg && { postgres: pg }) },
    };
  };
  return [
    row(
      'history-bytes-live',
      `history_points on disk per raw point (SQLite dbstat): written live by the seeding and the PATCH rounds, ${options.seedResources} resources in turn`,
      'live',
    ),
    row('history-bytes-single', `the same, backfilled: the resource of ${everyWords(scale.singleStepMs)}`, 'single'),
    row(
      'history-bytes-account',
      `the same, backfilled: the account of ${scale.accountResources} resources (${BACKFILL_POINTS.toLocaleString('en-US')} points a request, going round the resources)`,
      'account',
    ),
  ];
}

function rssRow(sqlite: HistoryBackend, postgres: HistoryBackend | undefined): Row {
  const { beforeMb, singleSeededMb, singleReadMb, accountMb } = sqlite.rss;
  const mb = (value: number | undefined) => (value === undefined ? '—' : `${round(value, 1)} MB`);
  return {
    key: 'history-rss',
    label: `server RSS with ${(sqlite.single.points + sqlite.account.points).toLocaleString('en-US')} points kept, backfilled, aggregated and read (before any: ${mb(beforeMb)}; after the single resource's backfill ${mb(singleSeededMb)}, its reads ${mb(singleReadMb)})`,
    kind: 'memory',
    requestsPerSecond: null,
    p50Ms: null,
    p99Ms: null,
    errors: 0,
    rssMb: accountMb === undefined ? null : round(accountMb, 1),
    ratio: accountMb !== undefined && singleReadMb !== undefined ? round(accountMb / singleReadMb, 2) : null,
    ratioOf: `the same with the single resource's ${sqlite.single.points.toLocaleString('en-US')}`,
    target: null,
    met: null,
    detail: {
      ...sqlite.rss,
      ratioToBefore: accountMb !== undefined && beforeMb !== undefined ? round(accountMb / beforeMb, 2) : null,
      ...(postgres && { postgres: postgres.rss }),
    },
  };
}

/** The history rows; PostgreSQL's figures in the PostgreSQL column (and the row's detail) when there is one. */
export async function measureHistoryRows(options: Options, workDir: string, profileDir: string): Promise<Row[]> {
  const sqlite = await measureHistoryBackend(options, sqliteDatabases(workDir), workDir, profileDir, 'SQLite');
  if (!options.keep) for (const name of ['history-on', 'history-off', 'history-reads']) rmSync(`${workDir}/${name}.db`, { force: true });
  let postgres: HistoryBackend | undefined;
  if (options.postgres !== 'none') {
    const cluster = options.postgres === 'auto' ? await postgresForBench(undefined, await freePort(), log) : undefined;
    const base = cluster?.url ?? (options.postgres === 'auto' ? undefined : options.postgres);
    if (base) {
      const schemas: Array<{ close(): Promise<void> }> = [];
      try {
        postgres = await measureHistoryBackend(
          options,
          async () => {
            const schema = (await postgresForBench(base, 0, log))!;
            schemas.push(schema);
            return schema.url;
          },
          workDir,
          profileDir,
          'PostgreSQL',
        );
      } finally {
        for (const schema of schemas) await schema.close();
        await cluster?.close();
      }
    } else log('history rows: no PostgreSQL on this machine: SQLite only');
  }
  const describe = (backend: HistoryBackend, name: string) =>
    log(
      `history (${name}): seeding ${backend.single.points.toLocaleString('en-US')} points took ${backend.single.seconds} s + ${backend.single.housekeepingSeconds} s of housekeeping; ` +
        `${backend.account.points.toLocaleString('en-US')} took ${backend.account.seconds} s + ${backend.account.housekeepingSeconds} s`,
    );
  describe(sqlite, 'SQLite');
  if (postgres) describe(postgres, 'PostgreSQL');
  const seeding = {
    sqlite: { single: sqlite.single, account: sqlite.account },
    ...(postgres && { postgres: { single: postgres.single, account: postgres.account } }),
  };
  const rows = [
    patchRow(sqlite, postgres, options.rounds),
    ...readRows(sqlite, postgres, options),
    ...sizeRows(sqlite, postgres, options),
    rssRow(sqlite, postgres),
  ];
  return rows.map((row) => (row.key === 'history-day-5m' ? { ...row, detail: { ...row.detail, seeding } } : row));
}
