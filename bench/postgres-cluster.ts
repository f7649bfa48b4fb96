// The two-process row (issue #20): two devdata servers on one PostgreSQL database against one, the
// same load (GET of a resource, then PATCH) sent to one port, then spread over both ports by two
// load generators at once. On a 2-core machine the load generator, PostgreSQL and the servers
// share the cores, so the row says how much a second process adds here, not on a larger machine.
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { stop, sleep } from './children.js';
import { cannon } from './http-rows.js';
import { httpSpecsFor, type HttpSpec } from './http-specs.js';
import type { Options } from './options.js';
import { postgresForBench } from './postgres.js';
import { log, round, type Row } from './results.js';
import { freePort, launchDevdata, serviceEnv, startServer, type Launched, type Server } from './server.js';

interface Combined {
  requestsPerSecond: number;
  /** The worse of the load generators' p99s (each saw half the connections). */
  p99Ms: number;
  p50Ms: number;
  errors: number;
}

/** The same spec sent to each origin at once, the connections split between them. */
async function spread(spec: HttpSpec, origins: string[], options: Options, seconds: number): Promise<Combined> {
  const connections = Math.max(1, Math.floor(options.connections / origins.length));
  const results: autocannon.Result[] = await Promise.all(
    origins.map((origin) => {
      const url = new URL(spec.url);
      const target = new URL(url.pathname + url.search, origin).toString();
      return cannon({ ...spec, url: target }, { ...options, connections }, seconds);
    }),
  );
  return {
    requestsPerSecond: round(
      results.reduce((sum, result) => sum + result.requests.total / result.duration, 0),
      0,
    ),
    p99Ms: Math.max(...results.map((result) => result.latency.p99)),
    p50Ms: Math.max(...results.map((result) => result.latency.p50)),
    errors: results.reduce((sum, result) => sum + result.errors + result.non2xx, 0),
  };
}

/** Rows for GET and PATCH: one process, then two on the same database. Empty when there is no PostgreSQL. */
export async function postgresClusterRows(options: Options, workDir: string, profileDir: string): Promise<Row[]> {
  if (options.postgres === 'none') return [];
  const database = await postgresForBench(options.postgres === 'auto' ? undefined : options.postgres, await freePort(), log);
  if (!database) return [];
  let launched: Launched | undefined;
  let second: Server | undefined;
  try {
    launched = await launchDevdata({ ...options, profile: false }, database.url, workDir, profileDir, 'PostgreSQL (first of two)');
    const port = await freePort();
    second = await startServer(
      { ...options, profile: false },
      serviceEnv(options, database.url, port),
      join(workDir, 'server-postgresql-second.log'),
      profileDir,
      port,
    );
    log(`second devdata on the same PostgreSQL database listening on ${second.origin} (pid ${second.child.pid})`);
    await sleep(options.smoke ? 300 : 2000);
    const specs = httpSpecsFor(launched.server.origin, launched.auth, launched.seeded);
    const rows: Row[] = [];
    for (const key of ['get', 'patch'] as const) {
      const spec = specs[key];
      if (options.warmup > 0) await spread(spec, [launched.server.origin, second.origin], options, options.warmup);
      const one = await spread(spec, [launched.server.origin], options, options.duration);
      const two = await spread(spec, [launched.server.origin, second.origin], options, options.duration);
      log(
        `${spec.label} on PostgreSQL: one process ${one.requestsPerSecond} req/s (p99 ${one.p99Ms} ms), two processes ${two.requestsPerSecond} req/s (p99 ${two.p99Ms} ms)`,
      );
      const times = one.requestsPerSecond > 0 ? (two.requestsPerSecond / one.requestsPerSecond).toFixed(2) : '—';
      rows.push({
        key: `postgres-two-${key}`,
        label: `${spec.label} on PostgreSQL, two processes on one database, the load spread over both: ${times}× one process (${one.requestsPerSecond.toLocaleString('en-US')} req/s, p99 ${one.p99Ms} ms)`,
        kind: 'http',
        requestsPerSecond: two.requestsPerSecond,
        p50Ms: two.p50Ms,
        p99Ms: two.p99Ms,
        errors: one.errors + two.errors,
        rssMb: null,
        // The ratio column is to the baseline for HTTP rows: the comparison with one process is in the label.
        ratio: null,
        ratioOf: 'baseline',
        target: null,
        met: null,
        detail: { database: database.description, one, two, connections: options.connections, serverCpuUsPerRequest: null },
      });
    }
    return rows;
  } finally {
    launched?.client.close();
    if (second) await stop(second.child, 'SIGTERM', 15_000);
    if (launched) await stop(launched.server.child, 'SIGTERM', 15_000);
    await database.close();
  }
}
