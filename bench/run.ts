// `npm run bench`: the benchmark of issue #4. Starts the built server (dist/cli.js serve) as a child
// process on a fresh SQLite database with the rate limit and the stream cap lifted, seeds it, and
// measures each row for a fixed time at fixed concurrency against a baseline measured in the same
// run: a bare Fastify route for the HTTP rows, a bare node:http SSE broadcaster for the streams.
// Prints one markdown table and writes it as JSON. See bench/README.md.
//
// Processes: this one is the load generator (autocannon) and the stream scenarios' event writer;
// the devdata server, each baseline server and the SSE receivers are child processes.
import { execFile, type ChildProcess } from 'node:child_process';
import type { IncomingHttpHeaders } from 'node:http';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { cpuMs, forkTracked, installCleanup, killAll, nextMessage, rssMb, sampleRss, sleep, stop } from './children.js';
import { inParallel, JsonClient } from './http-client.js';
import { parseOptions, USAGE, type HttpRowKey, type Options, type StreamSpec } from './options.js';
import { CONFIG_VARIABLES } from '../src/config.js';
import { postgresForBench } from './postgres.js';
import { formatSummary, summarizeProfile } from './profile-top.js';
import { isMessage, type CollectedReport, type Listening, type OpenedReport, type WebhookCollectedReport } from './protocol.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // .bench-build/bench
const ROOT = resolve(HERE, '..', '..');
const CLI = join(ROOT, 'dist', 'cli.js');
const WATCHDOG = pathToFileURL(join(HERE, 'watchdog.js')).href;
const LOOPBACK = '127.0.0.1';


// ---------------------------------------------------------------------------------------------
// Results

export type RowKind = 'http' | 'stream' | 'webhook' | 'memory';

export interface Row {
  key: string;
  label: string;
  kind: RowKind;
  /** HTTP: requests/s; stream: messages delivered/s over all streams; webhook: deliveries/s. */
  requestsPerSecond: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  /** HTTP: connection errors, timeouts and non-2xx; stream: lost, duplicate, reordered, failed opens/writes; webhook: lost, duplicate, badly signed, failed writes. */
  errors: number;
  /** Memory rows: the server's resident set size. */
  rssMb: number | null;
  /** HTTP: req/s ÷ baseline req/s; stream: p99 ÷ floor p99; webhook: deliveries/s ÷ publish rate; memory: RSS ÷ the baseline's RSS. */
  ratio: number | null;
  ratioOf: string;
  target: string | null;
  met: boolean | null;
  /** HTTP rows: the same request against a server on PostgreSQL (the PostgreSQL column). */
  postgres?: PostgresMeasurement;
  detail: Record<string, unknown>;
}

interface PostgresMeasurement {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** req/s ÷ the baseline's req/s, like the SQLite column's. */
  ratio: number;
  serverCpuUsPerRequest: number | null;
}

const t0 = Date.now();
function log(message: string): void {
  process.stderr.write(`bench [${((Date.now() - t0) / 1000).toFixed(1)}s]: ${message}\n`);
}

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

// ---------------------------------------------------------------------------------------------
// The devdata server

interface Server {
  child: ChildProcess;
  origin: string;
  logPath: string;
}

function serviceEnv(options: Options, databaseUrl: string, port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Every variable the service reads is removed from the inherited environment, so the run decides.
  for (const name of CONFIG_VARIABLES) delete env[name];
  return {
    ...env,
    PORT: String(port),
    HOST: LOOPBACK,
    DATABASE_URL: databaseUrl,
    RATE_LIMIT_PER_MINUTE: '1000000000',
    RATE_LIMIT_ANON_PER_MINUTE: '1000000000',
    STREAM_LIMIT_PER_ACCOUNT: '100000',
    // The webhook row's receiver listens on loopback; a failed attempt is retried a second later.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '0,1,1,1,1',
    LOG_LEVEL: options.logLevel,
    // Any free port on loopback: the metrics' own listener, scraped by nobody during the run.
    ...(options.metrics ? { METRICS_PORT: '0' } : {}),
  };
}

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(process.execPath, [CLI, ...args], { env, cwd: ROOT, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`devdata ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolvePromise(stdout);
    });
  });
}

/** A free loopback port, for log levels that do not print the one PORT=0 chose. */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePromise(port));
    });
  });
}

function tail(path: string, lines = 20): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function startServer(options: Options, env: NodeJS.ProcessEnv, logPath: string, profileDir: string, knownPort: number): Promise<Server> {
  const fd = openSync(logPath, 'a');
  const execArgv = ['--import', WATCHDOG];
  if (options.profile) execArgv.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`);
  const child = forkTracked(CLI, ['serve'], { cwd: ROOT, env, execArgv, stdio: ['ignore', fd, fd, 'ipc'] });
  closeSync(fd);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the server exited at start:\n${tail(logPath)}`);
    if (knownPort > 0) {
      const client = new JsonClient(`http://${LOOPBACK}:${knownPort}`);
      const up = await client.send('GET', '/api/v1/health', undefined, 1000).then(
        () => true,
        () => false,
      );
      client.close();
      if (up) return { child, origin: `http://${LOOPBACK}:${knownPort}`, logPath };
    } else {
      for (const line of readFileSync(logPath, 'utf8').split('\n')) {
        if (!line.includes('"port"')) continue;
        try {
          const entry = JSON.parse(line) as { port?: unknown };
          if (typeof entry.port === 'number' && entry.port > 0) return { child, origin: `http://${LOOPBACK}:${entry.port}`, logPath };
        } catch {
          // a partial line: read it again next time
        }
      }
    }
    await sleep(50);
  }
  throw new Error(`the server did not start listening within 30 s:\n${tail(logPath)}`);
}

/** A child of ours that reports `{type:'listening', port}` over IPC. */
async function forkListening(script: string, env: NodeJS.ProcessEnv = process.env): Promise<{ child: ChildProcess; origin: string }> {
  const child = forkTracked(join(HERE, script), [], { cwd: ROOT, env, execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port } = await nextMessage(child, isMessage<Listening>('listening'), 20_000, script);
  return { child, origin: `http://${LOOPBACK}:${port}` };
}

// ---------------------------------------------------------------------------------------------
// Seeding

interface Seeded {
  resourceIds: string[];
  /** GET /resources/{id} of the first resource: the body size the baseline returns. */
  resource: Record<string, unknown>;
  /** The headers the service sent with it, which the contract floor sends too. */
  resourceHeaders: Record<string, string>;
  newestEventId: number;
  /** The event page row's response, which the page floor sends as fixed bytes. */
  eventPage: string;
}

/** The event page row reads 500 events before the newest: a full page from the middle of the log. */
function eventPagePath(newestEventId: number): string {
  return `/api/v1/events?after=${Math.max(0, newestEventId - 500)}&limit=100`;
}

/** Headers of a response that describe the response itself, not the connection or the body's framing. */
function contractHeadersOf(headers: IncomingHttpHeaders): Record<string, string> {
  const perConnection = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'content-type', 'x-request-id']);
  return Object.fromEntries(
    Object.entries(headers).flatMap(([name, value]) => (perConnection.has(name) || typeof value !== 'string' ? [] : [[name, value]])),
  );
}

function resourceBody(index: number): Record<string, unknown> {
  return {
    name: `Temperature sensor ${index + 1}`,
    type: 'sensor',
    state: 21.5,
    attributes: { unit_of_measurement: '°C', device_class: 'temperature', friendly_name: `Room ${index + 1} temperature`, floor: 1 + (index % 4) },
    tags: ['bench', `floor-${1 + (index % 4)}`],
  };
}

async function seed(client: JsonClient, options: Options): Promise<Seeded> {
  const resourceIds: string[] = [];
  await inParallel(options.seedResources, 8, async (index) => {
    const created = (await client.expect(201, 'POST', '/api/v1/resources', resourceBody(index))) as { id: string };
    resourceIds[index] = created.id;
  });
  await inParallel(options.seedUpdates, 8, async (index) => {
    await client.expect(200, 'PATCH', `/api/v1/resources/${resourceIds[index % resourceIds.length]}`, { state: round(18 + (index % 60) / 10, 1) });
  });
  let cursor = 0;
  for (;;) {
    const page = (await client.expect(200, 'GET', `/api/v1/events?after=${cursor}&limit=1000`)) as { cursor: number; hasMore: boolean };
    cursor = page.cursor;
    if (!page.hasMore) break;
  }
  const resource = await client.expectResponse(200, 'GET', `/api/v1/resources/${resourceIds[0]}`);
  const eventPage = await client.expectResponse(200, 'GET', eventPagePath(cursor));
  return {
    resourceIds,
    resource: resource.body as Record<string, unknown>,
    resourceHeaders: contractHeadersOf(resource.headers),
    newestEventId: cursor,
    eventPage: eventPage.text,
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP rows

interface HttpSpec {
  key: string;
  label: string;
  url: string;
  method: 'GET' | 'PATCH' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Varies each request (path and body); cheap, so the load generator stays the same. */
  vary?: (index: number) => { path?: string; body?: string };
  /** Against the baseline's req/s, or with `ofPageFloor` against the floor that sends the event page's bytes. */
  target?: { minRatio: number; ofPageFloor?: boolean };
}

interface HttpMeasurement {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  detail: Record<string, unknown>;
}

function cannon(spec: HttpSpec, options: Options, seconds: number): Promise<autocannon.Result> {
  let counter = 0;
  const vary = spec.vary;
  const opts: autocannon.Options = {
    url: spec.url,
    connections: options.connections,
    duration: seconds,
    method: spec.method,
    headers: { ...(spec.body !== undefined || vary ? { 'content-type': 'application/json' } : {}), ...spec.headers },
    timeout: 10,
  };
  if (spec.body !== undefined) opts.body = spec.body;
  if (vary) {
    opts.requests = [
      {
        method: spec.method,
        setupRequest: (request) => {
          const change = vary(counter++);
          if (change.path !== undefined) request.path = change.path;
          if (change.body !== undefined) request.body = change.body;
          return request;
        },
      },
    ];
  }
  return new Promise((resolvePromise, reject) => {
    autocannon(opts, (error: unknown, result) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolvePromise(result)));
  });
}

async function measureHttp(spec: HttpSpec, options: Options, serverPid: number | undefined): Promise<HttpMeasurement> {
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
  log(`${spec.label}: ${measurement.requestsPerSecond} req/s, p50 ${measurement.p50Ms} ms, p99 ${measurement.p99Ms} ms, ${errors} errors, server CPU ${cpuUsPerRequest} µs/request`);
  return measurement;
}

// ---------------------------------------------------------------------------------------------
// Stream scenarios

interface StreamTarget {
  name: string;
  streamUrl: string;
  headers: Record<string, string>;
  publishClient: JsonClient;
  publishPath: string;
  pid: number | undefined;
}

interface StreamOutcome {
  opened: OpenedReport;
  rssBeforeOpenMb: number | undefined;
  collected: CollectedReport;
  written: number;
  writeErrors: number;
  rssAfterOpenMb: number | undefined;
  rssMaxMb: number | undefined;
}

/** Writes `count` events at a steady rate (an absolute schedule, so no drift); sentAt = the write's start. */
async function writeSteadily(
  target: Pick<StreamTarget, 'publishClient' | 'publishPath'>,
  spec: Pick<StreamSpec, 'eventsPerSecond'>,
  count: number,
  run: string,
  payload: Record<string, unknown>,
): Promise<{ written: number[]; errors: number }> {
  const interval = 1000 / spec.eventsPerSecond;
  const written: number[] = [];
  let errors = 0;
  const inFlight: Array<Promise<void>> = [];
  const start = performance.now() + 20;
  for (let seq = 0; seq < count; seq++) {
    const wait = start + seq * interval - performance.now();
    if (wait > 0) await sleep(wait);
    const body = { type: 'custom.bench', data: { run, seq, sentAt: Date.now(), resource: payload } };
    inFlight.push(
      target.publishClient.send('POST', target.publishPath, body, 10_000).then(
        (response) => {
          if (response.status === 201) written.push(seq);
          else errors++;
        },
        () => void errors++,
      ),
    );
  }
  await Promise.all(inFlight);
  written.sort((a, b) => a - b);
  return { written, errors };
}

async function streamScenario(target: StreamTarget, spec: StreamSpec, options: Options, payload: Record<string, unknown>): Promise<StreamOutcome> {
  const run = randomBytes(6).toString('hex');
  const count = Math.max(1, Math.round(spec.eventsPerSecond * options.streamDuration));
  const rssBeforeOpenMb = rssMb(target.pid);
  const receivers = forkTracked(join(HERE, 'sse-receivers.js'), [], { cwd: ROOT, execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    receivers.send({
      type: 'open',
      url: target.streamUrl,
      headers: target.headers,
      streams: spec.streams,
      run,
      planned: count,
      openConcurrency: 50,
      openTimeoutMs: 15_000,
    });
    const opened = await nextMessage(receivers, isMessage<OpenedReport>('opened'), 120_000, `opening ${spec.streams} streams`);
    if (opened.failed > 0) log(`${target.name}: ${opened.failed} of ${spec.streams} streams failed to open: ${opened.failures.join('; ')}`);
    await sleep(500);
    const rssAfterOpenMb = rssMb(target.pid);
    const sampler = sampleRss(target.pid);
    const { written, errors } = await writeSteadily(target, spec, count, run, payload);
    receivers.send({ type: 'collect', written, drainTimeoutMs: options.drainTimeout * 1000 });
    const collected = await nextMessage(receivers, isMessage<CollectedReport>('collected'), options.drainTimeout * 1000 + 60_000, 'collecting');
    const rssMaxMb = sampler.stop();
    return { opened, rssBeforeOpenMb, collected, written: written.length, writeErrors: errors, rssAfterOpenMb, rssMaxMb };
  } finally {
    if (receivers.connected) receivers.send({ type: 'close' });
    await stop(receivers, 'SIGTERM', 5_000);
  }
}

function streamRow(key: string, label: string, spec: StreamSpec, outcome: StreamOutcome, options: Options, floorP99: number | null, withTarget: boolean): Row {
  const { collected, opened } = outcome;
  const errors = collected.lost + collected.duplicates + collected.outOfOrder + opened.failed + outcome.writeErrors + collected.endedEarly;
  const p99 = collected.latencyMs.p99;
  const met = withTarget ? errors === 0 && Number.isFinite(p99) && p99 < 50 : null;
  return {
    key,
    label,
    kind: 'stream',
    requestsPerSecond: round(collected.delivered / options.streamDuration, 0),
    p50Ms: collected.latencyMs.p50,
    p99Ms: p99,
    errors,
    rssMb: null,
    ratio: floorP99 === null ? 1 : floorP99 > 0 ? round(p99 / floorP99, 2) : null,
    ratioOf: 'floor p99',
    target: withTarget ? 'p99 < 50 ms, every message delivered' : null,
    met,
    detail: {
      streams: spec.streams,
      eventsPerSecond: spec.eventsPerSecond,
      seconds: options.streamDuration,
      eventsWritten: outcome.written,
      writeErrors: outcome.writeErrors,
      streamsOpened: opened.opened,
      openFailures: opened.failed,
      openMs: opened.ms,
      delivered: collected.delivered,
      expected: collected.expected,
      lost: collected.lost,
      streamsWithLoss: collected.streamsWithLoss,
      duplicates: collected.duplicates,
      outOfOrder: collected.outOfOrder,
      endedEarly: collected.endedEarly,
      latencyMs: collected.latencyMs,
      drainWaitMs: collected.waitedMs,
      rssBeforeOpenMb: outcome.rssBeforeOpenMb === undefined ? null : round(outcome.rssBeforeOpenMb, 1),
      rssAfterOpenMb: outcome.rssAfterOpenMb === undefined ? null : round(outcome.rssAfterOpenMb, 1),
      rssMaxMb: outcome.rssMaxMb === undefined ? null : round(outcome.rssMaxMb, 1),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The webhook row

/**
 * One webhook to a bare receiver child (bench/webhook-receiver.ts); events published at a steady
 * rate. Deliveries/s = distinct events received ÷ (last receipt − first publish); latency =
 * receipt − `data.sentAt`, both Date.now() on this machine, so it includes the write.
 */
async function webhookRow(server: Server, client: JsonClient, auth: Record<string, string>, options: Options, payload: Record<string, unknown>): Promise<Row> {
  const receiver = await forkListening('webhook-receiver.js');
  const publishClient = new JsonClient(server.origin, auth, 64);
  try {
    const hook = (await client.expect(201, 'POST', '/api/v1/webhooks', { name: 'bench receiver', url: `${receiver.origin}/hook`, events: ['custom.bench'] })) as {
      id: string;
      secret: string;
    };
    const run = randomBytes(6).toString('hex');
    const count = Math.max(1, Math.round(options.webhookRate * options.webhookDuration));
    const cpuBefore = cpuMs(server.child.pid);
    const { written, errors: writeErrors } = await writeSteadily({ publishClient, publishPath: '/api/v1/events' }, { eventsPerSecond: options.webhookRate }, count, run, payload);
    // A backlog may still be draining: wait as long again as the writing took, plus the drain time.
    const drainTimeoutMs = (options.webhookDuration + options.drainTimeout) * 1000;
    receiver.child.send({ type: 'webhook-collect', run, written, secret: hook.secret, drainTimeoutMs });
    const collected = await nextMessage(receiver.child, isMessage<WebhookCollectedReport>('webhook-collected'), drainTimeoutMs + 60_000, 'collecting webhook deliveries');
    const cpuAfter = cpuMs(server.child.pid);
    await client.expect(204, 'DELETE', `/api/v1/webhooks/${hook.id}`);
    const deliveriesPerSecond = collected.spanMs > 0 ? collected.delivered / (collected.spanMs / 1000) : 0;
    const errors = collected.lost + collected.duplicates + collected.badSignatures + writeErrors;
    return {
      key: 'webhooks',
      label: `webhook deliveries: 1 webhook, ${options.webhookRate} events/s for ${options.webhookDuration} s to a bare local receiver`,
      kind: 'webhook',
      requestsPerSecond: round(deliveriesPerSecond, 0),
      p50Ms: collected.latencyMs.p50,
      p99Ms: collected.latencyMs.p99,
      errors,
      rssMb: null,
      ratio: round(deliveriesPerSecond / options.webhookRate, 2),
      ratioOf: 'publish rate',
      target: null,
      met: null,
      detail: {
        eventsPerSecond: options.webhookRate,
        seconds: options.webhookDuration,
        eventsWritten: written.length,
        writeErrors,
        delivered: collected.delivered,
        expected: collected.expected,
        lost: collected.lost,
        duplicates: collected.duplicates,
        badSignatures: collected.badSignatures,
        latencyMs: collected.latencyMs,
        spanMs: collected.spanMs,
        drainWaitMs: collected.waitedMs,
        // Publishing and delivering together: the server's CPU per event over the whole row.
        serverCpuUsPerEvent: cpuBefore !== undefined && cpuAfter !== undefined && written.length > 0 ? round(((cpuAfter - cpuBefore) * 1000) / written.length, 1) : null,
      },
    };
  } finally {
    publishClient.close();
    await stop(receiver.child);
  }
}

// ---------------------------------------------------------------------------------------------
// The table

function formatNumber(value: number | null, digits = 0): string {
  if (value === null || !Number.isFinite(value)) return '—';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Whole milliseconds, as autocannon and Date.now() record them: 0 means under a millisecond. */
function formatLatency(value: number | null): string {
  if (value === 0) return '<1';
  return formatNumber(value);
}

function formatRatio(row: Row): string {
  if (row.ratio === null) return '—';
  if (row.kind === 'http') return `${Math.round(row.ratio * 100)}%`;
  return `${row.ratio.toFixed(2)}× ${row.ratioOf}`;
}

/** The PostgreSQL column: req/s, p99 and ratio to the baseline of the same request on PostgreSQL. */
function formatPostgres(row: Row): string {
  const pg = row.postgres;
  if (!pg) return '—';
  const errors = pg.errors > 0 ? `, **${pg.errors} errors**` : '';
  return `${formatNumber(pg.requestsPerSecond)} req/s, p99 ${formatLatency(pg.p99Ms)} ms, ${Math.round(pg.ratio * 100)}%${errors}`;
}

/** The server CPU column (HTTP rows): microseconds of the server process's CPU per response. */
function formatServerCpu(row: Row): string {
  const cpu = row.kind === 'http' ? (row.detail.serverCpuUsPerRequest as number | null | undefined) : undefined;
  return typeof cpu === 'number' ? formatNumber(cpu, 1) : '—';
}

export function markdownTable(rows: Row[]): string {
  const withPostgres = rows.some((row) => row.postgres);
  const withCpu = rows.some((row) => row.kind === 'http');
  const lines = [
    `| row | req/s | p50 ms | p99 ms | errors | ratio to baseline | target | met/missed |${withCpu ? ' server CPU µs/req |' : ''}${withPostgres ? ' PostgreSQL |' : ''}`,
    `|---|---:|---:|---:|---:|---:|---|---|${withCpu ? '---:|' : ''}${withPostgres ? '---:|' : ''}`,
  ];
  for (const row of rows) {
    const label = row.kind === 'memory' ? `${row.label}: **${formatNumber(row.rssMb, 1)} MB**` : row.label;
    lines.push(
      `| ${label} | ${formatNumber(row.requestsPerSecond)} | ${formatLatency(row.p50Ms)} | ${formatLatency(row.p99Ms)} | ${row.errors} | ${formatRatio(row)} | ${row.target ?? '—'} | ${row.met === null ? '—' : row.met ? 'met' : '**missed**'} |${withCpu ? ` ${formatServerCpu(row)} |` : ''}${withPostgres ? ` ${formatPostgres(row)} |` : ''}`,
    );
  }
  return lines.join('\n');
}

/** Paths with cursors in a fixed stride through the log, so every run reads the same cursors in the same order. */
function catchupCursors(newestEventId: number, path: string): (index: number) => { path: string } {
  return (index) => ({ path: `${path}?after=${(index * 7919) % Math.max(1, newestEventId - 100)}&limit=100` });
}

/** The service's HTTP rows against one running server. */
function httpSpecsFor(origin: string, auth: Record<string, string>, seeded: Seeded): Record<HttpRowKey, HttpSpec> {
  const ids = seeded.resourceIds;
  const eventPage = eventPagePath(seeded.newestEventId);
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
    patch: {
      key: 'patch',
      label: 'PATCH /api/v1/resources/{id} (1 write + 1 event)',
      url: `${origin}/api/v1/resources/${ids[0]}`,
      method: 'PATCH',
      headers: auth,
      body: JSON.stringify({ state: 21.5 }),
      vary: (index) => ({ path: `/api/v1/resources/${ids[index % ids.length]}`, body: `{"state":${round(15 + (index % 100) / 10, 1)}}` }),
      target: { minRatio: 0.35 },
    },
    publish: {
      key: 'publish',
      label: 'POST /api/v1/events',
      url: `${origin}/api/v1/events`,
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ type: 'custom.bench.load', data: { resource: seeded.resource } }),
    },
  };
}

interface Launched {
  server: Server;
  auth: Record<string, string>;
  client: JsonClient;
  seeded: Seeded;
}

/** A devdata server on `databaseUrl` with an account made by the operator CLI, seeded. */
async function launchDevdata(options: Options, databaseUrl: string, workDir: string, profileDir: string, name: string): Promise<Launched> {
  const logsPort = ['info', 'debug', 'trace'].includes(options.logLevel);
  const port = logsPort ? 0 : await freePort();
  const env = serviceEnv(options, databaseUrl, port);
  const created = JSON.parse(await runCli(['accounts', 'create', '--name', 'Bench', '--json'], env)) as { account: { id: string }; apiKey: { key: string } };
  const auth = { authorization: `Bearer ${created.apiKey.key}` };
  const server = await startServer(options, env, join(workDir, `server-${name.toLowerCase()}.log`), profileDir, port);
  log(`devdata on ${name} listening on ${server.origin} (pid ${server.child.pid})`);
  const client = new JsonClient(server.origin, auth, 16);
  const seeded = await seed(client, options);
  log(`seeded ${seeded.resourceIds.length} resources and ${seeded.newestEventId} events on ${name}`);
  return { server, auth, client, seeded };
}

/** The HTTP rows again on PostgreSQL, for the PostgreSQL column; undefined when there is none. */
async function measureOnPostgres(options: Options, workDir: string, profileDir: string): Promise<{ description: string; measured: Map<HttpRowKey, HttpMeasurement> } | undefined> {
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
    for (const key of options.rows) measured.set(key, await measureHttp({ ...specs[key], label: `${specs[key].label} on PostgreSQL` }, options, launched.server.child.pid));
    return { description: database.description, measured };
  } finally {
    launched?.client.close();
    if (launched) await stop(launched.server.child, 'SIGTERM', 15_000);
    await database.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The run

function timeBudgetSeconds(options: Options): number {
  if (options.timeout > 0) return options.timeout;
  const httpRows = options.rows.length === 0 ? 0 : options.rows.length + 4; // the baseline twice, and its two floors
  const streamCost = options.streamScenarios.reduce((sum, spec) => sum + 2 * (options.streamDuration + options.drainTimeout + 60 + spec.streams / 20), 0);
  const webhookCost = options.webhookRate > 0 ? 2 * options.webhookDuration + options.drainTimeout + 60 : 0;
  const postgresCost = options.postgres !== 'none' && options.rows.length > 0 ? 60 + options.rows.length * (options.duration + options.warmup + 20) : 0;
  return Math.ceil(120 + httpRows * (options.duration + options.warmup + 20) + streamCost + webhookCost + postgresCost);
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
  const budget = timeBudgetSeconds(options);
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
  const loadAverageAtStart = loadavg().map((value) => round(value, 2));
  const rows: Row[] = [];
  let postgresDescription: string | null = null;
  let server: Server | undefined;
  let succeeded = false;

  try {
    log(`work directory ${workDir}; bound ${budget} s`);
    const [load] = loadAverageAtStart;
    if (load !== undefined && load > cpus().length * 0.5) {
      log(`warning: the machine is busy (load average ${load.toFixed(2)} on ${cpus().length} CPUs); numbers will be noisy`);
    }
    const sqlite = await launchDevdata(options, `sqlite:${join(workDir, 'devdata.db')}`, workDir, profileDir, 'SQLite');
    server = sqlite.server;
    const { auth, client, seeded } = sqlite;
    await sleep(options.smoke ? 300 : 2000);
    const idleRss = rssMb(server.child.pid);

    // HTTP rows. The baseline runs before and after the service's rows, and the better of the two
    // counts: on a shared machine noise only ever lowers it, and the rows in between are compared
    // with what the machine allowed around them. The service's rows run reads first, then writes;
    // then the same rows against a second server on PostgreSQL, when there is one.
    let baselineIdleRss: number | undefined;
    const httpSpecs = httpSpecsFor(server.origin, auth, seeded);
    if (options.rows.length > 0) {
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
      baselineIdleRss = rssMb(baseline.child.pid);
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
          ? [{ key: 'floor-page-varied', label: 'floor: the same body, each request with its own cursor in the query (as the catching-up row)', url: `${baseline.origin}/page`, method: 'GET' as const, vary: catchupCursors(seeded.newestEventId, '/page') }]
          : []),
      ];
      const floors: Array<{ spec: HttpSpec; measured: HttpMeasurement }> = [];
      for (const spec of floorSpecs) floors.push({ spec, measured: await measureHttp(spec, options, baseline.child.pid) });
      const measuredRows: Array<{ spec: HttpSpec; measured: HttpMeasurement }> = [];
      for (const key of options.rows) measuredRows.push({ spec: httpSpecs[key], measured: await measureHttp(httpSpecs[key], options, server.child.pid) });
      const onPostgres = await measureOnPostgres(options, workDir, profileDir);
      postgresDescription = onPostgres?.description ?? null;
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
        rows.push({ key: spec.key, label: spec.label, kind: 'http', ...measured, detail, rssMb: null, ratio: round(measured.requestsPerSecond / best.requestsPerSecond, 3), ratioOf: 'baseline req/s', target: null, met: null });
      }
      const pageFloor = (floors.find(({ spec }) => spec.key === 'floor-page-varied') ?? floors.find(({ spec }) => spec.key === 'floor-page'))?.measured.requestsPerSecond;
      for (const { spec, measured } of measuredRows) {
        const ratio = round(measured.requestsPerSecond / best.requestsPerSecond, 3);
        const ofPageFloor = spec.target?.ofPageFloor === true;
        const targetRatio = ofPageFloor ? (pageFloor ? round(measured.requestsPerSecond / pageFloor, 3) : 0) : ratio;
        const cpu = measured.detail.serverCpuUsPerRequest as number | null;
        const pg = onPostgres?.measured.get(spec.key as HttpRowKey);
        rows.push({
          key: spec.key,
          label: spec.label,
          kind: 'http',
          ...measured,
          // Baseline CPU per request ÷ this row's: the same comparison, less sensitive to other load on the machine.
          detail: { ...measured.detail, cpuRatio: cpu && baselineCpu ? round(baselineCpu / cpu, 3) : null, ...(ofPageFloor && { ratioToPageFloor: targetRatio }) },
          rssMb: null,
          ratio,
          ratioOf: 'baseline req/s',
          target: spec.target
            ? ofPageFloor
              ? `≥ ${Math.round(spec.target.minRatio * 100)}% of the page floor (here ${Math.round(targetRatio * 100)}%)`
              : `≥ ${Math.round(spec.target.minRatio * 100)}% of baseline`
            : null,
          met: spec.target ? targetRatio >= spec.target.minRatio && measured.errors === 0 : null,
          ...(pg && {
            postgres: {
              requestsPerSecond: pg.requestsPerSecond,
              p50Ms: pg.p50Ms,
              p99Ms: pg.p99Ms,
              errors: pg.errors,
              ratio: round(pg.requestsPerSecond / best.requestsPerSecond, 3),
              serverCpuUsPerRequest: pg.detail.serverCpuUsPerRequest as number | null,
            },
          }),
        });
      }
    }

    // Stream scenarios: the floor, then the service, for each; memory from the largest one.
    const memoryStreams = Math.max(0, ...options.streamScenarios.map((spec) => spec.streams));
    let streamsRss: { devdata: number | undefined; before: number | undefined; floor: number | undefined } | undefined;
    for (const spec of options.streamScenarios) {
      const name = `${spec.streams.toLocaleString('en-US')} streams × ${spec.eventsPerSecond} events/s`;
      const floorServer = await forkListening('sse-floor-server.js');
      const floorClient = new JsonClient(floorServer.origin, {}, 64);
      let floor: StreamOutcome;
      try {
        log(`${name}: floor (bare node:http broadcaster)`);
        floor = await streamScenario(
          { name: 'floor', streamUrl: `${floorServer.origin}/stream`, headers: {}, publishClient: floorClient, publishPath: '/publish', pid: floorServer.child.pid },
          spec,
          options,
          seeded.resource,
        );
      } finally {
        floorClient.close();
        await stop(floorServer.child);
      }
      const floorRow = streamRow(`stream-floor-${spec.streams}x${spec.eventsPerSecond}`, `SSE floor (bare node:http): ${name}`, spec, floor, options, null, false);
      rows.push(floorRow);
      log(`${floorRow.label}: p50 ${floorRow.p50Ms} ms, p99 ${floorRow.p99Ms} ms, ${floorRow.errors} errors`);

      log(`${name}: devdata`);
      const publishClient = new JsonClient(server.origin, auth, 64);
      let outcome: StreamOutcome;
      try {
        outcome = await streamScenario(
          { name: 'devdata', streamUrl: `${server.origin}/api/v1/events/stream`, headers: auth, publishClient, publishPath: '/api/v1/events', pid: server.child.pid },
          spec,
          options,
          seeded.resource,
        );
      } finally {
        publishClient.close();
      }
      const row = streamRow(`stream-${spec.streams}x${spec.eventsPerSecond}`, `SSE fan-out: ${name}`, spec, outcome, options, floorRow.p99Ms, true);
      rows.push(row);
      log(`${row.label}: p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, ${row.errors} errors`);
      if (spec.streams === memoryStreams && streamsRss === undefined) streamsRss = { devdata: outcome.rssMaxMb, before: outcome.rssBeforeOpenMb, floor: floor.rssMaxMb };
      await sleep(1000); // the server notices the closed streams
    }

    if (options.webhookRate > 0) {
      log(`webhook deliveries: ${options.webhookRate} events/s for ${options.webhookDuration} s`);
      const row = await webhookRow(server, client, auth, options, seeded.resource);
      rows.push(row);
      log(`${row.label}: ${row.requestsPerSecond} deliveries/s, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, ${row.errors} errors`);
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
    if (streamsRss) {
      const value = streamsRss.devdata;
      rows.push({
        key: 'rss-streams',
        label: `server RSS with ${memoryStreams.toLocaleString('en-US')} open streams (peak; ${streamsRss.before === undefined ? '?' : round(streamsRss.before, 1)} MB just before they opened)`,
        kind: 'memory',
        requestsPerSecond: null,
        p50Ms: null,
        p99Ms: null,
        errors: 0,
        rssMb: value === undefined ? null : round(value, 1),
        ratio: value !== undefined && streamsRss.floor !== undefined ? round(value / streamsRss.floor, 2) : null,
        ratioOf: 'floor RSS',
        target: '< 200 MB',
        met: value === undefined ? null : value < 200,
        detail: {
          streams: memoryStreams,
          // The server's RSS just before the streams opened (after the HTTP rows, when they ran).
          beforeOpenMb: streamsRss.before === undefined ? null : round(streamsRss.before, 1),
          floorRssMb: streamsRss.floor === undefined ? null : round(streamsRss.floor, 1),
        },
      });
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
  writeFileSync(outPath.replace(/\.json$/, '') + '.md', `${table}\n`);
  console.log(`\n${table}\n`);
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
