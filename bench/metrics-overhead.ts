// `npm run bench -- --metrics-overhead`: what the operator's metrics cost on the hot path (issue
// #21: no row slower by more than 5%). Two devdata servers, each on its own fresh SQLite database
// and seeded the same way, one with METRICS_PORT set and one without, measured row by row in
// alternating order (with first in one round, without first in the next) within the same run, so
// that the load the machine carries at any moment falls on both. Reports, per row, the ratio of
// with to without in req/s and in the server's CPU time per request (the steadier of the two on a
// shared machine). See bench/README.md.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { sleep, stop } from './children.js';
import { cannon, measureHttp, type HttpMeasurement } from './http-rows.js';
import { httpSpecsFor } from './http-specs.js';
import type { HttpRowKey, Options } from './options.js';
import { log, round } from './results.js';
import { percentile } from './stats.js';
import { launchDevdata, ROOT, type Launched } from './server.js';

/** The rows the target is about: a read of one resource, a page of a list, a write with its event. */
export const OVERHEAD_ROWS: HttpRowKey[] = ['get', 'list', 'patch'];
/** With metrics, each row keeps at least this share of its req/s without (issue #21). */
export const OVERHEAD_TARGET = 0.95;

export interface OverheadRow {
  key: HttpRowKey;
  label: string;
  /** req/s over all rounds (requests ÷ seconds), without and with metrics. */
  without: number;
  with: number;
  /** with ÷ without, req/s: 1 = free, 0.95 = 5% slower. */
  ratio: number;
  /** without ÷ with, server CPU µs per request: below 1 when metrics cost CPU. */
  cpuRatio: number | null;
  /** The same ratio in each round, to show the spread. */
  roundRatios: number[];
  /**
   * The median of the rounds' ratios (the lower middle one): what the verdict reads. On a shared machine one round in
   * several falls far for both servers at once and by unequal amounts (bench/HISTORY.md, "What the
   * metrics cost"), which moves the all-rounds ratio by more than the 5% at stake.
   */
  medianRatio: number;
  errors: number;
  met: boolean;
}

interface Totals {
  requests: number;
  seconds: number;
  cpuUs: number;
  cpuKnown: boolean;
  errors: number;
}

function add(totals: Totals, measured: HttpMeasurement): void {
  const requests = measured.detail.requests as number;
  const cpu = measured.detail.serverCpuUsPerRequest as number | null;
  totals.requests += requests;
  totals.seconds += measured.detail.seconds as number;
  totals.errors += measured.errors;
  if (cpu === null) totals.cpuKnown = false;
  else totals.cpuUs += cpu * requests;
}

/** The metrics listener's URL, from the server's start-up log line. */
export function metricsUrlOf(logPath: string): string | undefined {
  for (const line of readFileSync(logPath, 'utf8').split('\n')) {
    if (!line.includes('"metricsUrl"')) continue;
    try {
      return (JSON.parse(line) as { metricsUrl?: string }).metricsUrl;
    } catch {
      // not a whole line
    }
  }
  return undefined;
}

/** The sum of devdata_http_requests_total over its labels: proof the metrics were on and counting. */
async function scrapedRequests(metricsUrl: string): Promise<number> {
  const response = await fetch(metricsUrl.endsWith('/metrics') ? metricsUrl : `${metricsUrl.replace(/\/$/, '')}/metrics`);
  if (!response.ok) throw new Error(`GET ${metricsUrl}: ${response.status}`);
  let sum = 0;
  for (const line of (await response.text()).split('\n')) {
    if (line.startsWith('devdata_http_requests_total{') || line.startsWith('devdata_http_requests_total '))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

export function overheadTable(rows: OverheadRow[]): string {
  const lines = [
    '| row | req/s without metrics | req/s with | with ÷ without | CPU/request without ÷ with | per round | median of rounds | errors | ≥ 95% (median) |',
    '|---|---:|---:|---:|---:|---|---:|---:|---|',
  ];
  const percent = (value: number | null) => (value === null ? '—' : `${(value * 100).toFixed(1)}%`);
  for (const row of rows) {
    lines.push(
      `| ${row.label} | ${row.without.toLocaleString('en-US')} | ${row.with.toLocaleString('en-US')} | ${percent(row.ratio)} | ${percent(row.cpuRatio)} | ${row.roundRatios.map((ratio) => percent(ratio)).join(', ')} | ${percent(row.medianRatio)} | ${row.errors} | ${row.met ? 'yes' : 'no'} |`,
    );
  }
  return lines.join('\n');
}

/** Runs the comparison; `rounds` pairs per row (at least 2, so each side goes first once). */
export async function measureMetricsOverhead(
  options: Options,
  rounds: number,
  workDir: string,
): Promise<{ rows: OverheadRow[]; table: string; outPath: string }> {
  const rowKeys = options.rows.filter((key) => OVERHEAD_ROWS.includes(key));
  if (rowKeys.length === 0) throw new Error(`--metrics-overhead measures ${OVERHEAD_ROWS.join(', ')}: --rows names none of them`);
  const profileDir = join(workDir, 'profiles');
  const servers: Record<'with' | 'without', Launched | undefined> = { with: undefined, without: undefined };
  const started = Date.now();
  const loadAverageAtStart = loadavg().map((value) => round(value, 2));
  try {
    // Profiles would cost the two servers differently: none here.
    servers.without = await launchDevdata(
      { ...options, metrics: false, profile: false },
      `sqlite:${join(workDir, 'without.db')}`,
      workDir,
      profileDir,
      'without-metrics',
    );
    servers.with = await launchDevdata(
      { ...options, metrics: true, profile: false },
      `sqlite:${join(workDir, 'with.db')}`,
      workDir,
      profileDir,
      'with-metrics',
    );
    const metricsUrl = metricsUrlOf(servers.with.server.logPath);
    if (!metricsUrl) throw new Error(`the server with METRICS_PORT logged no metrics URL (LOG_LEVEL ${options.logLevel} must be info or lower)`);
    if (metricsUrlOf(servers.without.server.logPath)) throw new Error('the server without METRICS_PORT serves metrics');
    await sleep(options.smoke ? 300 : 2000);
    const scrapedBefore = await scrapedRequests(metricsUrl);

    const specs = {
      with: httpSpecsFor(servers.with.server.origin, servers.with.auth, servers.with.seeded),
      without: httpSpecsFor(servers.without.server.origin, servers.without.auth, servers.without.seeded),
    };
    // Both servers warmed on every row first (JIT, caches): otherwise the first measurement of the run is of a cold server.
    const warmSeconds = Math.max(options.warmup, options.smoke ? 1 : 3);
    for (const key of rowKeys) for (const side of ['without', 'with'] as const) await cannon(specs[side][key], options, warmSeconds);
    const rows: OverheadRow[] = [];
    let requestsWith = 0;
    for (const key of rowKeys) {
      const totals: Record<'with' | 'without', Totals> = {
        with: { requests: 0, seconds: 0, cpuUs: 0, cpuKnown: true, errors: 0 },
        without: { requests: 0, seconds: 0, cpuUs: 0, cpuKnown: true, errors: 0 },
      };
      const roundRatios: number[] = [];
      for (let round_ = 0; round_ < rounds; round_++) {
        const order: Array<'with' | 'without'> = round_ % 2 === 0 ? ['with', 'without'] : ['without', 'with'];
        const measured: Partial<Record<'with' | 'without', HttpMeasurement>> = {};
        for (const side of order) {
          const spec = specs[side][key];
          measured[side] = await measureHttp(
            { ...spec, label: `${spec.label} ${side} metrics, round ${round_ + 1}` },
            options,
            servers[side]!.server.child.pid,
          );
          add(totals[side], measured[side]!);
        }
        roundRatios.push(round(measured.with!.requestsPerSecond / measured.without!.requestsPerSecond, 3));
      }
      const rate = (side: Totals) => round(side.requests / side.seconds, 0);
      const cpuPerRequest = (side: Totals) => (side.cpuKnown && side.requests > 0 ? side.cpuUs / side.requests : null);
      const cpuWith = cpuPerRequest(totals.with);
      const cpuWithout = cpuPerRequest(totals.without);
      const ratio = round(rate(totals.with) / rate(totals.without), 3);
      const errors = totals.with.errors + totals.without.errors;
      requestsWith += totals.with.requests;
      // Nearest rank: of an even number of rounds, the lower of the middle two.
      const medianRatio = percentile(
        [...roundRatios].sort((a, b) => a - b),
        50,
      );
      rows.push({
        key,
        label: specs.with[key].label,
        without: rate(totals.without),
        with: rate(totals.with),
        ratio,
        cpuRatio: cpuWith && cpuWithout ? round(cpuWithout / cpuWith, 3) : null,
        roundRatios,
        medianRatio,
        errors,
        met: medianRatio >= OVERHEAD_TARGET && errors === 0,
      });
    }

    // Every answered request of the server with metrics was counted (and the warm-ups), or the comparison measured nothing.
    const counted = (await scrapedRequests(metricsUrl)) - scrapedBefore;
    if (counted < requestsWith) throw new Error(`the metrics counted ${counted} requests of the ${requestsWith} measured (devdata_http_requests_total)`);
    log(
      `the server with metrics counted ${counted.toLocaleString('en-US')} requests in devdata_http_requests_total (${requestsWith.toLocaleString('en-US')} measured)`,
    );

    const table = overheadTable(rows);
    // Beside the main results, not over them.
    const outPath = join(dirname(resolve(ROOT, options.out)), options.smoke ? 'metrics-overhead-smoke.json' : 'metrics-overhead.json');
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(
      outPath,
      `${JSON.stringify(
        {
          generatedAt: new Date().toISOString(),
          seconds: Math.round((Date.now() - started) / 1000),
          machine: { cpus: cpus().length, node: process.version, loadAverageAtStart, loadAverageAtEnd: loadavg().map((value) => round(value, 2)) },
          options: { ...options, rounds },
          target: `with metrics ≥ ${OVERHEAD_TARGET * 100}% of the req/s without, each row`,
          metricsRequestsCounted: counted,
          rows,
          table,
        },
        null,
        2,
      )}\n`,
    );
    return { rows, table, outPath };
  } finally {
    for (const launched of [servers.with, servers.without]) {
      launched?.client.close();
      if (launched) await stop(launched.server.child, 'SIGTERM', 15_000);
    }
  }
}
