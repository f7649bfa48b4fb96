// `npm run bench`: the benchmark of issue #4. Starts the built server (dist/cli.js serve) as a child
// process on a fresh SQLite database with the rate limit and the stream cap lifted, seeds it, and
// measures each row for a fixed time at fixed concurrency against a baseline measured in the same
// run: a bare Fastify route for the HTTP rows, a bare node:http SSE broadcaster for the streams.
// Prints one markdown table and writes it as JSON. See bench/README.md.
//
// Processes: this one is the load generator (autocannon) and the stream scenarios' event writer;
// the devdata server, each baseline server and the SSE receivers are child processes.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { allocatorEnv } from './allocator.js';
import { installCleanup, killAll, rssMb, sleep, stop } from './children.js';
import { parseOptions, USAGE, type Options } from './options.js';
import { formatSummary, summarizeProfile } from './profile-top.js';
import { measureHttpRows } from './http-rows.js';
import { historySeconds, measureHistoryRows } from './history-rows.js';
import { largeAccountSeconds, measureLargeAccountRows } from './large-account.js';
import { postgresClusterRows } from './postgres-cluster.js';
import { measureMetricsOverhead, OVERHEAD_ROWS } from './metrics-overhead.js';
import { log, markdownTable, round, type Row } from './results.js';
import { CLI, launchDevdata, ROOT, type Server } from './server.js';
import { measureSoak, soakSeconds } from './soak.js';
import { measureStreamRows } from './stream-rows.js';
import { webhookRows } from './webhook-row.js';

function timeBudgetSeconds(options: Options): number {
  if (options.timeout > 0) return options.timeout;
  if (options.metricsOverhead) return Math.ceil(180 + OVERHEAD_ROWS.length * options.rounds * 2 * (options.duration + options.warmup + 20));
  const httpRows = options.rows.length === 0 ? 0 : options.rows.length + 4; // the baseline twice, and its two floors
  const streamCost = options.streamScenarios.reduce((sum, spec) => sum + 2 * (options.streamDuration + options.drainTimeout + 60 + spec.streams / 20), 0);
  const webhookCost = options.webhookRate > 0 ? 4 * (2 * options.webhookDuration + options.drainTimeout) + 60 : 0;
  const postgresCost = options.postgres !== 'none' && options.rows.length > 0 ? 60 + options.rows.length * (options.duration + options.warmup + 20) : 0;
  // The two-process row: GET and PATCH, each against one process and then two.
  const clusterCost = options.postgres !== 'none' && options.rows.includes('get') ? 60 + 2 * (2 * options.duration + options.warmup + 20) : 0;
  return Math.ceil(120 + httpRows * (options.duration + options.warmup + 20) + streamCost + webhookCost + postgresCost + clusterCost);
}

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(process.argv.slice(2));
  } catch (error) {
    console.error(`bench: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (parsed === 'help') {
    console.log(USAGE);
    return;
  }
  const options = parsed;
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first (npm run bench does)`);
  installCleanup();
  const budget = timeBudgetSeconds(options) + largeAccountSeconds(options) + historySeconds(options) + soakSeconds(options);
  const deadline = setTimeout(() => {
    console.error(`bench: the run exceeded its bound of ${budget} s; stopping every child process`);
    killAll();
    process.exit(1);
  }, budget * 1000);
  deadline.unref();

  const outPath = resolve(ROOT, options.out);
  const profileDir = join(dirname(outPath), 'profiles');
  mkdirSync(dirname(outPath), { recursive: true });
  if (options.profile) mkdirSync(profileDir, { recursive: true });
  const workDir = mkdtempSync(join(tmpdir(), 'devdata-bench-'));
  const started = Date.now();
  if (options.metricsOverhead) {
    try {
      const { table, outPath: written } = await measureMetricsOverhead(options, options.rounds, workDir);
      console.log(`\n${table}\n`);
      log(`results written to ${written}`);
    } finally {
      if (options.keep) log(`kept ${workDir} (databases, server logs)`);
      else rmSync(workDir, { recursive: true, force: true });
    }
    clearTimeout(deadline);
    return;
  }
  const loadAverageAtStart = loadavg().map((value) => round(value, 2));
  const rows: Row[] = [];
  let postgresDescription: string | null = null;
  let server: Server | undefined;
  let succeeded = false;
  let soakTable: string | undefined;

  try {
    log(
      `work directory ${workDir}; bound ${budget} s; the server's allocator: ${options.allocator === 'jemalloc' ? `jemalloc (${allocatorEnv('jemalloc').LD_PRELOAD})` : "the system's"}`,
    );
    const [load] = loadAverageAtStart;
    if (load !== undefined && load > cpus().length * 0.5) {
      log(`warning: the machine is busy (load average ${load.toFixed(2)} on ${cpus().length} CPUs); numbers will be noisy`);
    }
    const sqlite = await launchDevdata(options, `sqlite:${join(workDir, 'devdata.db')}`, workDir, profileDir, 'SQLite');
    server = sqlite.server;
    const { auth, client, seeded } = sqlite;
    await sleep(options.smoke ? 300 : 2000);
    const idleRss = rssMb(server.child.pid);

    const { rows: httpRows, postgresDescription: onPostgres, baselineIdleRss } = await measureHttpRows(options, server, auth, seeded, workDir, profileDir);
    rows.push(...httpRows);
    postgresDescription = onPostgres;
    if (onPostgres !== null && options.rows.includes('get')) rows.push(...(await postgresClusterRows(options, workDir, profileDir)));
    const streamRows = await measureStreamRows(options, server, auth, seeded.resource);
    rows.push(...streamRows.filter((row) => row.kind !== 'memory'));

    if (options.webhookRate > 0) {
      log(`webhook deliveries: ${options.webhookRate} events/s for ${options.webhookDuration} s`);
      for (const row of await webhookRows(server, client, auth, options, seeded.resource)) {
        rows.push(row);
        log(`${row.label}: ${row.requestsPerSecond} deliveries/s, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, ${row.errors} errors`);
      }
    }

    rows.push({
      key: 'rss-idle',
      label: 'server RSS idle (after seeding)',
      kind: 'memory',
      requestsPerSecond: null,
      p50Ms: null,
      p99Ms: null,
      errors: 0,
      rssMb: idleRss === undefined ? null : round(idleRss, 1),
      ratio: idleRss !== undefined && baselineIdleRss !== undefined ? round(idleRss / baselineIdleRss, 2) : null,
      ratioOf: 'bare Fastify RSS',
      target: null,
      met: null,
      detail: { baselineIdleRssMb: baselineIdleRss === undefined ? null : round(baselineIdleRss, 1) },
    });
    rows.push(...streamRows.filter((row) => row.kind === 'memory'));
    // Servers of their own, on SQLite and PostgreSQL; none in a smoke run.
    if (largeAccountSeconds(options) > 0) rows.push(...(await measureLargeAccountRows(options, workDir)));
    if (options.history) rows.push(...(await measureHistoryRows(options, workDir, profileDir)));
    if (options.soak) {
      const soak = await measureSoak(options, workDir, profileDir);
      rows.push(...soak.rows);
      soakTable = soak.table;
    }
    client.close();
    succeeded = true;
  } finally {
    if (server) await stop(server.child, 'SIGTERM', 15_000);
    if (!succeeded || options.keep) log(`kept ${workDir} (database, server.log)`);
    else rmSync(workDir, { recursive: true, force: true });
  }

  const table = markdownTable(rows);
  const results = {
    generatedAt: new Date().toISOString(),
    seconds: Math.round((Date.now() - started) / 1000),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memoryGb: round(totalmem() / 1024 ** 3, 1),
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      loadAverageAtStart,
      loadAverageAtEnd: loadavg().map((value) => round(value, 2)),
    },
    options: { ...options },
    postgres: postgresDescription,
    rows,
    table,
  };
  writeFileSync(outPath, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(`${outPath.replace(/\.json$/, '')}.md`, `${table}\n${soakTable ? `\n${soakTable}\n` : ''}`);
  console.log(`\n${table}\n${soakTable ? `\n${soakTable}\n` : ''}`);
  log(`results written to ${outPath}`);

  if (options.profile) {
    const profiles = readdirSync(profileDir)
      .filter((file) => file.endsWith('.cpuprofile'))
      .map((file) => join(profileDir, file))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
    if (profiles[0]) {
      log(`server CPU profile: ${profiles[0]}`);
      console.log(formatSummary(summarizeProfile(JSON.parse(readFileSync(profiles[0], 'utf8')), 25)));
    } else log('no CPU profile was written (the server did not exit cleanly)');
  }
  clearTimeout(deadline);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error('bench: failed:', error instanceof Error ? (error.stack ?? error.message) : error);
    killAll();
    process.exit(1);
  },
);
