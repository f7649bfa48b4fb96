// The HTTP rows: the baseline and its floors (bench/baseline-server.ts), the service's rows, and
// the same rows on PostgreSQL for the PostgreSQL column.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { cpuMs, rssMb, sleep, stop } from './children.js';
import type { HttpRowKey, Options } from './options.js';
import { postgresForBench } from './postgres.js';
import { log, round, type Row } from './results.js';
import type { Seeded } from './seed.js';
import { catchupCursors, httpSpecsFor, type HttpSpec } from './http-specs.js';
import { forkListening, freePort, launchDevdata, type Launched, type Server } from './server.js';

export interface HttpMeasurement {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  detail: Record<string, unknown>;
}

/** autocannon's options for `spec` (its method, headers and body), each request varied by `spec.vary` with the number `next` gives. */
export function cannonOptions(spec: HttpSpec, load: { connections: number; duration: number; overallRate?: number }, next: () => number): autocannon.Options {
  const vary = spec.vary;
  const opts: autocannon.Options = {
    url: spec.url,
    connections: spec.connections ?? load.connections,
    duration: load.duration,
    method: spec.method,
    headers: { ...(spec.body !== undefined || vary ? { 'content-type': 'application/json' } : {}), ...spec.headers },
    timeout: 10,
  };
  if (load.overallRate !== undefined) opts.overallRate = load.overallRate;
  if (spec.body !== undefined) opts.body = spec.body;
  if (vary) {
    opts.requests = [
      {
        method: spec.method,
        setupRequest: (request) => {
          const change = vary(next());
          if (change.path !== undefined) request.path = change.path;
          if (change.body !== undefined) request.body = change.body;
          if (change.headers !== undefined) request.headers = { ...request.headers, ...change.headers };
          return request;
        },
      },
    ];
  }
  return opts;
}

/** `onResponse` hears each response's status as it comes. */
export function cannon(spec: HttpSpec, options: Options, seconds: number, onResponse?: (status: number) => void): Promise<autocannon.Result> {
  let counter = 0;
  const opts = cannonOptions(spec, { connections: options.connections, duration: seconds }, () => counter++);
  return new Promise((resolvePromise, reject) => {
    const instance = autocannon(opts, (error: unknown, result) =>
      error ? reject(error instanceof Error ? error : new Error(String(error))) : resolvePromise(result),
    );
    if (onResponse) instance.on('response', (_client, status) => onResponse(status));
  });
}

export async function measureHttp(spec: HttpSpec, options: Options, serverPid: number | undefined): Promise<HttpMeasurement> {
  if (options.warmup > 0) await cannon(spec, options, options.warmup);
  const cpuBefore = cpuMs(serverPid);
  const result = await cannon(spec, options, options.duration);
  const cpuAfter = cpuMs(serverPid);
  const errors = result.errors + result.non2xx;
  // CPU time the server spent per request: steadier than req/s when the machine is shared.
  const cpuUsPerRequest =
    cpuBefore !== undefined && cpuAfter !== undefined && result.requests.total > 0 ? round(((cpuAfter - cpuBefore) * 1000) / result.requests.total, 1) : null;
  const measurement = {
    requestsPerSecond: round(result.requests.total / result.duration, 0),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors,
    detail: {
      requests: result.requests.total,
      seconds: round(result.duration, 2),
      connections: result.connections,
      serverCpuUsPerRequest: cpuUsPerRequest,
      meanMs: round(result.latency.mean, 2),
      maxMs: result.latency.max,
      non2xx: result.non2xx,
      connectionErrors: result.errors,
      timeouts: result.timeouts,
      statusCodes: result.statusCodeStats,
    },
  };
  const refused = Object.entries(result.statusCodeStats as Record<string, { count: number }>).filter(([status]) => !status.startsWith('2'));
  const which = refused.length > 0 ? ` (${refused.map(([status, { count }]) => `${count} × ${status}`).join(', ')})` : '';
  log(
    `${spec.label}: ${measurement.requestsPerSecond} req/s, p50 ${measurement.p50Ms} ms, p99 ${measurement.p99Ms} ms, ${errors} errors${which}, server CPU ${cpuUsPerRequest} µs/request`,
  );
  return measurement;
}

/** A row's goal in words, with what this run measured against it. */
function targetWords(spec: HttpSpec, targetRatio: number, operationsPerSecond: number): string {
  const target = spec.target!;
  if (target.ofPageFloor) return `≥ ${Math.round(target.minRatio * 100)}% of the page floor (here ${Math.round(targetRatio * 100)}%)`;
  if (!target.ofRow) return `≥ ${Math.round(target.minRatio * 100)}% of baseline`;
  const perSecond = spec.operations !== undefined ? `${Math.round(operationsPerSecond).toLocaleString('en-US')} writes/s, ` : '';
  const p99 = target.maxP99Ms !== undefined ? `, p99 < ${target.maxP99Ms} ms` : '';
  return `≥ ${target.minRatio}× the ${target.ofRow} row (here ${perSecond}${targetRatio}×)${p99}`;
}

/** The HTTP rows again on PostgreSQL, for the PostgreSQL column; undefined when there is none. */
export async function measureOnPostgres(
  options: Options,
  workDir: string,
  profileDir: string,
): Promise<{ description: string; measured: Map<HttpRowKey, HttpMeasurement> } | undefined> {
  if (options.postgres === 'none' || options.rows.length === 0) return undefined;
  const database = await postgresForBench(options.postgres === 'auto' ? undefined : options.postgres, await freePort(), log);
  if (!database) {
    log('no PostgreSQL on this machine (apt-get install postgresql, or --postgres URL): no PostgreSQL column');
    return undefined;
  }
  let launched: Launched | undefined;
  try {
    // One profile at a time: the profiled server is the SQLite one.
    launched = await launchDevdata({ ...options, profile: false }, database.url, workDir, profileDir, 'PostgreSQL');
    await sleep(options.smoke ? 300 : 2000);
    const specs = httpSpecsFor(launched.server.origin, launched.auth, launched.seeded);
    const measured = new Map<HttpRowKey, HttpMeasurement>();
    for (const key of options.rows)
      measured.set(key, await measureHttp({ ...specs[key], label: `${specs[key].label} on PostgreSQL` }, options, launched.server.child.pid));
    return { description: database.description, measured };
  } finally {
    launched?.client.close();
    if (launched) await stop(launched.server.child, 'SIGTERM', 15_000);
    await database.close();
  }
}

export interface HttpRowsOutcome {
  rows: Row[];
  /** What PostgreSQL the PostgreSQL column ran on; null when there was none. */
  postgresDescription: string | null;
  /** The bare Fastify baseline's RSS when idle, which the idle memory row compares with. */
  baselineIdleRss: number | undefined;
}

/**
 * The baseline runs before and after the service's rows, and the better of the two counts: on a
 * shared machine noise only ever lowers it, and the rows in between are compared with what the
 * machine allowed around them. The service's rows run reads first, then writes; then the same rows
 * against a second server on PostgreSQL, when there is one.
 */
export async function measureHttpRows(
  options: Options,
  server: Server,
  auth: Record<string, string>,
  seeded: Seeded,
  workDir: string,
  profileDir: string,
): Promise<HttpRowsOutcome> {
  const rows: Row[] = [];
  const httpSpecs = httpSpecsFor(server.origin, auth, seeded);
  if (options.rows.length === 0) return { rows, postgresDescription: null, baselineIdleRss: undefined };
  const pageFile = join(workDir, 'event-page.json');
  writeFileSync(pageFile, seeded.eventPage);
  const baseline = await forkListening('baseline-server.js', {
    ...process.env,
    BENCH_BODY: JSON.stringify(seeded.resource),
    BENCH_HEADERS: JSON.stringify(seeded.resourceHeaders),
    BENCH_PAGE_FILE: pageFile,
    BENCH_LOG_FILE: join(workDir, 'baseline-contract.log'),
  });
  await sleep(300);
  const baselineIdleRss = rssMb(baseline.child.pid);
  const baselineSpec: HttpSpec = { key: 'baseline', label: 'baseline: bare Fastify, fixed JSON', url: `${baseline.origin}/resource`, method: 'GET' };
  const before = await measureHttp(baselineSpec, options, baseline.child.pid);
  // The floors: what the contract alone, and a body of the event page's size alone, leave of the baseline.
  const floorSpecs: HttpSpec[] = [
    {
      key: 'floor-contract',
      label: 'floor: the baseline + what the API contract makes every request do (its headers, the key hash, the log line)',
      url: `${baseline.origin}/contract/resource`,
      method: 'GET',
      headers: auth,
    },
    {
      key: 'floor-page',
      label: `floor: the baseline with the event page's ${Buffer.byteLength(seeded.eventPage).toLocaleString('en-US')}-byte body`,
      url: `${baseline.origin}/page`,
      method: 'GET',
    },
    // The same bytes asked for the way the catching-up row asks (a new path each request, made
    // by the load generator), so its target compares like with like.
    ...(options.rows.includes('catchup')
      ? [
          {
            key: 'floor-page-varied',
            label: 'floor: the same body, each request with its own cursor in the query (as the catching-up row)',
            url: `${baseline.origin}/page`,
            method: 'GET' as const,
            vary: catchupCursors(seeded.newestEventId, '/page'),
          },
        ]
      : []),
  ];
  const floors: Array<{ spec: HttpSpec; measured: HttpMeasurement }> = [];
  for (const spec of floorSpecs) floors.push({ spec, measured: await measureHttp(spec, options, baseline.child.pid) });
  const measuredRows: Array<{ spec: HttpSpec; measured: HttpMeasurement }> = [];
  for (const key of options.rows) measuredRows.push({ spec: httpSpecs[key], measured: await measureHttp(httpSpecs[key], options, server.child.pid) });
  const onPostgres = await measureOnPostgres(options, workDir, profileDir);
  const after = await measureHttp({ ...baselineSpec, label: 'baseline again' }, options, baseline.child.pid);
  await stop(baseline.child);
  const best = after.requestsPerSecond > before.requestsPerSecond ? after : before;
  const baselineCpu = best.detail.serverCpuUsPerRequest as number | null;
  rows.push({
    key: 'baseline',
    label: `baseline: bare Fastify route, fixed ${Buffer.byteLength(JSON.stringify(seeded.resource))}-byte JSON (best of 2)`,
    kind: 'http',
    ...best,
    detail: { ...best.detail, runs: [before, after].map((run) => ({ requestsPerSecond: run.requestsPerSecond, p50Ms: run.p50Ms, p99Ms: run.p99Ms })) },
    rssMb: null,
    ratio: 1,
    ratioOf: 'baseline req/s',
    target: null,
    met: null,
  });
  for (const { spec, measured } of floors) {
    const detail = spec.key === 'floor-contract' ? { ...measured.detail, headers: seeded.resourceHeaders } : measured.detail;
    rows.push({
      key: spec.key,
      label: spec.label,
      kind: 'http',
      ...measured,
      detail,
      rssMb: null,
      ratio: round(measured.requestsPerSecond / best.requestsPerSecond, 3),
      ratioOf: 'baseline req/s',
      target: null,
      met: null,
    });
  }
  const pageFloor = (floors.find(({ spec }) => spec.key === 'floor-page-varied') ?? floors.find(({ spec }) => spec.key === 'floor-page'))?.measured
    .requestsPerSecond;
  const measuredOf = (key: HttpRowKey) => measuredRows.find((row) => row.spec.key === key)?.measured;
  for (const { spec, measured } of measuredRows) {
    // Five places: a batch row's requests are a ten-thousandth of the baseline's.
    const ratio = round(measured.requestsPerSecond / best.requestsPerSecond, 5);
    const ofPageFloor = spec.target?.ofPageFloor === true;
    const operationsPerSecond = measured.requestsPerSecond * (spec.operations ?? 1);
    const reference = spec.target?.ofRow && measuredOf(spec.target.ofRow)?.requestsPerSecond;
    const targetRatio = ofPageFloor
      ? pageFloor
        ? round(measured.requestsPerSecond / pageFloor, 3)
        : 0
      : spec.target?.ofRow
        ? reference
          ? round(operationsPerSecond / reference, 3)
          : 0
        : ratio;
    const withinP99 = spec.target?.maxP99Ms === undefined || measured.p99Ms < spec.target.maxP99Ms;
    const cpu = measured.detail.serverCpuUsPerRequest as number | null;
    const pg = onPostgres?.measured.get(spec.key as HttpRowKey);
    rows.push({
      key: spec.key,
      label: spec.label,
      kind: 'http',
      ...measured,
      // Baseline CPU per request ÷ this row's: the same comparison, less sensitive to other load on the machine.
      detail: {
        ...measured.detail,
        cpuRatio: cpu && baselineCpu ? round(baselineCpu / cpu, 3) : null,
        ...(ofPageFloor && { ratioToPageFloor: targetRatio }),
        ...(spec.operations !== undefined && { operations: spec.operations, operationsPerSecond }),
        ...(spec.target?.ofRow && { [`ratioTo_${spec.target.ofRow}`]: targetRatio }),
      },
      rssMb: null,
      ratio,
      ratioOf: 'baseline req/s',
      target: spec.target ? targetWords(spec, targetRatio, operationsPerSecond) : null,
      met: spec.target ? targetRatio >= spec.target.minRatio && withinP99 && measured.errors === 0 : null,
      ...(pg && {
        postgres: {
          requestsPerSecond: pg.requestsPerSecond,
          p50Ms: pg.p50Ms,
          p99Ms: pg.p99Ms,
          errors: pg.errors,
          ratio: round(pg.requestsPerSecond / best.requestsPerSecond, 5),
          serverCpuUsPerRequest: pg.detail.serverCpuUsPerRequest as number | null,
          // The row's own goal, against the same row on PostgreSQL.
          ...(spec.target?.ofRow && {
            ratioToRow: round(
              (pg.requestsPerSecond * (spec.operations ?? 1)) / (onPostgres?.measured.get(spec.target.ofRow)?.requestsPerSecond ?? Number.NaN),
              3,
            ),
          }),
        },
      }),
    });
  }
  return { rows, postgresDescription: onPostgres?.description ?? null, baselineIdleRss };
}
