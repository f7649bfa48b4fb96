// The soak row (issue #19, goal 3), `npm run bench -- --soak`: whether the service's cost stays
// flat as the minutes pass. A server of its own (fresh SQLite database, seeded like the main one,
// retention at its defaults, metrics on for the event loop's delays). PATCH capacity is measured
// first: closed loop alone, closed loop with the soak's readers and streams beside it, and then the
// highest fixed rate it sustains beside them; then, for N minutes, PATCH at 80% of that at a fixed
// rate, the readers at a modest fixed rate, and 100 SSE streams open throughout; every minute the
// PATCH load's req/s and
// latency, the readers', the server's RSS, CPU and database size, and the longest event-loop
// stall (by 5 s slices, beside when retention ran). After it and 20 s idle, 1,000 streams are opened
// on the same server: its RSS with them. See bench/README.md.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { cpuMs, forkTracked, nextMessage, rssMb, sleep, stop } from './children.js';
import { JsonClient } from './http-client.js';
import { cannon, cannonOptions, httpSpecsFor, type HttpSpec } from './http-rows.js';
import { metricsUrlOf } from './metrics-overhead.js';
import type { Options } from './options.js';
import { formatSummary, summarizeProfile } from './profile-top.js';
import { isMessage, type CollectedReport, type OpenedReport } from './protocol.js';
import { log, round, type Row } from './results.js';
import { eventPagePath } from './seed.js';
import { HERE, launchDevdata, ROOT, type Launched } from './server.js';
import { summarize } from './stats.js';
import { RSS_WITH_STREAMS_LIMIT_MB, streamScenario, writeSteadily } from './stream-rows.js';

/**
 * The PATCH load's share of the capacity measured just before with the readers and streams beside
 * it. Beside them PATCH's closed loop loses a good share of what it does alone on this machine's two
 * cores, so 80% of the closed loop alone kept the server fully busy (bench/HISTORY.md, "Long runs").
 */
const LOAD_SHARE = 0.8;
/** After the readers and streams start, before the capacity beside them is measured. */
const BESIDE_SETTLE_SECONDS = 2;
/**
 * The fixed rates tried, as shares of the closed-loop capacity beside the readers and streams, in
 * turn until one is not sustained. A closed loop of 50 connections overstates what a fixed rate
 * gets: requests that always wait commit in large groups and share each turn of the event loop,
 * and at a fixed rate a PATCH cost more (bench/HISTORY.md, "Long runs").
 */
const FIXED_RATE_SHARES = [0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1];
/**
 * A rate is sustained when this share of it is answered in its step, without an error. Each of
 * autocannon's instances spends a second's quota at the second's start, so a step's edges may cut
 * a burst or two: a step of 10 s counts within about 2%.
 */
const SUSTAINED_SHARE = 0.95;
/** Readers, requests/s over GET of a resource, a list page and an event page near the head, in turn. */
const READER_RATE = 300;
const READER_CONNECTIONS = 10;
const SOAK_STREAMS = 100;
/** The soak's streams follow only these custom events (their own writer): with every PATCH event they would carry 100× the write rate, a fan-out benchmark of its own. */
const STREAM_TYPE = 'custom.bench';
const STREAM_EVENTS_PER_SECOND = 10;
/**
 * autocannon spends a rate as a quota per connection per second, all connections from the same
 * instant: one instance sends each second's requests in a burst. Several instances started a
 * tenth of a second apart spread them over the second.
 */
const PHASES = 10;
/**
 * prom-client samples the event loop with monitorEventLoopDelay at its default resolution, 10 ms:
 * the histogram records the gaps between a 10 ms timer's ticks, so a stall is the gap minus 10 ms.
 */
const LAG_RESOLUTION_MS = 10;
/** The metrics are scraped every 5 s, so a minute's longest stall can be placed in it (next to retention's run). */
const SLICE_MS = 5000;

/** The goal's bounds (issue #19). */
const LAST_MINUTE_TOLERANCE = 0.1;
const RSS_GROWTH_TOLERANCE = 0.1;
const STALL_LIMIT_MS = 50;

function minuteSeconds(options: Options): number {
  return options.smoke ? 20 : 60;
}

function capacitySeconds(options: Options): { warm: number; measure: number; step: number } {
  return options.smoke ? { warm: 1, measure: 2, step: 2 } : { warm: 5, measure: 10, step: 10 };
}

/** The most the capacity beside the readers and streams takes, from their start: they run that much longer than the soak. */
function capacityBesideSeconds(options: Options): number {
  const { measure, step } = capacitySeconds(options);
  // A fixed-rate step: a second of start, the step, its stop and a second's pause.
  return BESIDE_SETTLE_SECONDS + measure + FIXED_RATE_SHARES.length * (step + 3);
}

function memoryStreams(options: Options): number {
  return options.smoke ? 200 : 1000;
}

/** The soak's share of the run's time bound. */
export function soakSeconds(options: Options): number {
  if (!options.soak) return 0;
  const { warm, measure } = capacitySeconds(options);
  const soak = options.soakMinutes * minuteSeconds(options);
  const streams = 20 + options.streamDuration + options.drainTimeout + 60 + memoryStreams(options) / 20;
  return Math.ceil(180 + warm + measure + capacityBesideSeconds(options) + soak + options.drainTimeout + streams);
}

interface Window {
  latencies: number[];
  errors: number;
}

/** What one load records: responses in the current minute, and 2xx responses overall. */
class Recorder {
  private window: Window = { latencies: [], errors: 0 };
  recording = false;
  ok = 0;

  response(status: number, ms: number): void {
    if (status >= 200 && status < 300) this.ok++;
    if (!this.recording) return;
    if (status >= 200 && status < 300) this.window.latencies.push(ms);
    else this.window.errors++;
  }

  error(): void {
    if (this.recording) this.window.errors++;
  }

  /** The minute just ended; the next one starts empty. */
  take(): Window {
    const taken = this.window;
    this.window = { latencies: [], errors: 0 };
    return taken;
  }
}

/** A fixed-rate load of `PHASES` autocannon instances started a tenth of a second apart, until stopped. */
async function fixedRate(spec: HttpSpec, rate: number, connections: number, maxSeconds: number, recorder: Recorder): Promise<{ stop(): Promise<void> }> {
  let counter = 0;
  const next = () => counter++;
  const phases = Math.max(1, Math.min(PHASES, Math.floor(rate)));
  const instances: Array<{ instance: autocannon.Instance; done: Promise<void> }> = [];
  for (let phase = 0; phase < phases; phase++) {
    const phaseRate = Math.floor(rate / phases) + (phase < Math.round(rate) % phases ? 1 : 0);
    const opts = cannonOptions(spec, { connections: Math.max(1, Math.round(connections / phases)), duration: maxSeconds, overallRate: phaseRate }, next);
    let instance!: autocannon.Instance;
    const done = new Promise<void>((resolvePromise, reject) => {
      instance = autocannon(opts, (error: unknown) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolvePromise()));
    });
    instance.on('response', (_client, status, _bytes, ms) => recorder.response(status, ms));
    instance.on('reqError', () => recorder.error());
    instances.push({ instance, done });
    await sleep(1000 / phases);
  }
  return {
    async stop() {
      for (const { instance } of instances) instance.stop();
      await Promise.all(instances.map(({ done }) => done));
    },
  };
}

/** What each minute reads from the server's metrics (prom-client's default metrics, unlabelled). */
const SCRAPED = ['nodejs_eventloop_lag_max_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes'] as const;
type Scraped = Record<(typeof SCRAPED)[number] | 'gcPauses' | 'gcWithin10Ms' | 'gcWithin100Ms', number>;

/** prom-client resets the histogram behind nodejs_eventloop_lag_max_seconds on every scrape: each gives the maximum since the last. */
async function scrape(metricsUrl: string): Promise<Scraped> {
  const response = await fetch(metricsUrl.endsWith('/metrics') ? metricsUrl : `${metricsUrl.replace(/\/$/, '')}/metrics`);
  if (!response.ok) throw new Error(`GET ${metricsUrl}: ${response.status}`);
  const lines = (await response.text()).split('\n');
  const values = {} as Scraped;
  for (const name of SCRAPED) {
    const line = lines.find((candidate) => candidate.startsWith(`${name} `));
    if (line === undefined) throw new Error(`${metricsUrl} has no ${name}`);
    values[name] = Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  // GC pauses so far, over all kinds: all of them, and those within 10 ms and within 100 ms (the histogram's buckets).
  const sum = (prefix: string) =>
    lines.filter((line) => line.startsWith(prefix)).reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  return {
    ...values,
    gcPauses: sum('nodejs_gc_duration_seconds_count{'),
    gcWithin10Ms: sum('nodejs_gc_duration_seconds_bucket{le="0.01"'),
    gcWithin100Ms: sum('nodejs_gc_duration_seconds_bucket{le="0.1"'),
  };
}

/**
 * Nanoseconds the server's main thread has spent runnable but waiting for a CPU (the second field
 * of /proc/<pid>/task/<pid>/schedstat): on a shared machine a stall can be the scheduler's, not the server's.
 */
function runQueueWaitNs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** A gap of the 10 ms sampler in ms → how late its timer ran (the stall), never below 0. */
function stallOf(gapMs: number): number {
  return ms(Math.max(0, gapMs - LAG_RESOLUTION_MS));
}

/** When the retention task last finished (GET /api/v1/status, its worker report), in ms since the epoch. */
async function retentionLastRun(origin: string): Promise<number | undefined> {
  const response = await fetch(`${origin}/api/v1/status`);
  const status = (await response.json()) as { workers?: { retention?: { lastRunAt?: string | null } } };
  const at = status.workers?.retention?.lastRunAt;
  return typeof at === 'string' ? Date.parse(at) : undefined;
}

/** The database, its WAL and shared memory: what retention keeps bounded. */
function databaseMb(file: string): number {
  let bytes = 0;
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      bytes += statSync(`${file}${suffix}`).size;
    } catch {
      // not there (yet)
    }
  }
  return round(bytes / 1024 ** 2, 1);
}

export interface SoakMinute {
  minute: number;
  patch: { requests: number; requestsPerSecond: number; p50Ms: number; p99Ms: number; maxMs: number; errors: number };
  readers: { requests: number; requestsPerSecond: number; p99Ms: number; errors: number };
  /** The highest of the RSS samples (one a second) in the minute. */
  rssMb: number | null;
  serverCpuPercent: number | null;
  /** Of it, the main thread's (the requests, the event loop): the rest is V8's GC helpers and the worker threads (SQLite's checkpoints). */
  mainThreadCpuPercent: number | null;
  databaseMb: number;
  /** V8's heap (used, total) and memory outside it, at the minute's end, from the metrics. */
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  /** GC pauses in the minute longer than 10 ms, and longer than 100 ms (nodejs_gc_duration_seconds). */
  gcOver10Ms: number;
  gcOver100Ms: number;
  /** Of the minute, the share the server's main thread was runnable but waited for a CPU. */
  runQueueWaitPercent: number | null;
  /** The longest of nodejs_eventloop_lag_max_seconds (the longest gap between the 10 ms sampler's ticks) minus those 10 ms: how late a timer ran. */
  stallMs: number;
  /** The end of the 5 s slice it fell in, seconds into the minute; and each slice's. */
  longestStallSliceEndS: number;
  sliceStallsMs: number[];
  /** When retention's last run in this minute ended, seconds into it (null: none ended in it). */
  retentionEndedAtS: number | null;
  /**
   * This process's own event-loop delay in the minute (p99 and longest, ms): the load generator
   * measures each latency here, so a late loop here lengthens the PATCH latencies it records.
   */
  generatorDelayP99Ms: number;
  generatorDelayMaxMs: number;
}

const ms = (value: number) => round(value, 1);

function minuteOf(minute: number, seconds: number, patch: Window, readers: Window): Pick<SoakMinute, 'patch' | 'readers' | 'minute'> {
  const patchLatency = summarize(Float64Array.from(patch.latencies));
  const readerLatency = summarize(Float64Array.from(readers.latencies));
  return {
    minute,
    patch: {
      requests: patch.latencies.length,
      requestsPerSecond: round(patch.latencies.length / seconds, 0),
      p50Ms: ms(patchLatency.p50),
      p99Ms: ms(patchLatency.p99),
      maxMs: ms(patchLatency.max),
      errors: patch.errors,
    },
    readers: {
      requests: readers.latencies.length,
      requestsPerSecond: round(readers.latencies.length / seconds, 0),
      p99Ms: ms(readerLatency.p99),
      errors: readers.errors,
    },
  };
}

interface Condition {
  what: string;
  value: string;
  met: boolean;
}

/** The goal's conditions over the minutes (the 1,000 streams' RSS is its own row). */
function conditionsOf(minutes: SoakMinute[]): Condition[] {
  const conditions: Condition[] = [];
  const first = minutes[0]!;
  const last = minutes[minutes.length - 1]!;
  const percent = (ratio: number) => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)}%`;
  if (minutes.length >= 2) {
    const rate = last.patch.requestsPerSecond / first.patch.requestsPerSecond;
    conditions.push({
      what: `last minute's PATCH req/s within ±${LAST_MINUTE_TOLERANCE * 100}% of the first's`,
      value: `${last.patch.requestsPerSecond.toLocaleString('en-US')} vs ${first.patch.requestsPerSecond.toLocaleString('en-US')} (${percent(rate)})`,
      met: Math.abs(rate - 1) <= LAST_MINUTE_TOLERANCE,
    });
    const p99 = last.patch.p99Ms / first.patch.p99Ms;
    conditions.push({
      what: `last minute's PATCH p99 within ±${LAST_MINUTE_TOLERANCE * 100}% of the first's`,
      value: `${last.patch.p99Ms} ms vs ${first.patch.p99Ms} ms (${percent(p99)})`,
      met: Math.abs(p99 - 1) <= LAST_MINUTE_TOLERANCE,
    });
  }
  const second = minutes[1]?.rssMb;
  const later = minutes.slice(2).flatMap((minute) => (minute.rssMb === null ? [] : [minute.rssMb]));
  if (second != null && later.length > 0) {
    const highest = Math.max(...later);
    conditions.push({
      what: `RSS flat after the first two minutes: no later minute above the second's by more than ${RSS_GROWTH_TOLERANCE * 100}%`,
      value: `highest ${highest} MB vs ${second} MB (${percent(highest / second)})`,
      met: highest <= second * (1 + RSS_GROWTH_TOLERANCE),
    });
  }
  const stall = Math.max(...minutes.map((minute) => minute.stallMs));
  conditions.push({ what: `no event-loop stall over ${STALL_LIMIT_MS} ms`, value: `longest ${stall} ms`, met: stall <= STALL_LIMIT_MS });
  return conditions;
}

function minuteTable(minutes: SoakMinute[], minuteLabel: string): string {
  const number = (value: number | null, digits = 0) =>
    value === null ? '—' : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const lines = [
    `| ${minuteLabel} | PATCH req/s | p50 ms | p99 ms | max ms | errors | readers req/s | readers p99 ms | server RSS MB | V8 heap used / total MB | server CPU (main thread) | waiting for a CPU | GC pauses > 10 / > 100 ms | database MB | longest stall ms (5 s slice ending at) | retention ended at | load generator late, p99 / max ms |`,
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const minute of minutes) {
    lines.push(
      `| ${minute.minute} | ${number(minute.patch.requestsPerSecond)} | ${number(minute.patch.p50Ms, 1)} | ${number(minute.patch.p99Ms, 1)} | ${number(minute.patch.maxMs, 0)} | ${minute.patch.errors + minute.readers.errors} | ${number(minute.readers.requestsPerSecond)} | ${number(minute.readers.p99Ms, 1)} | ${number(minute.rssMb, 1)} | ${number(minute.heapUsedMb, 0)} / ${number(minute.heapTotalMb, 0)} | ${minute.serverCpuPercent === null ? '—' : `${minute.serverCpuPercent}%`} (${minute.mainThreadCpuPercent === null ? '—' : `${minute.mainThreadCpuPercent}%`}) | ${minute.runQueueWaitPercent === null ? '—' : `${minute.runQueueWaitPercent}%`} | ${minute.gcOver10Ms} / ${minute.gcOver100Ms} | ${number(minute.databaseMb, 1)} | ${number(minute.stallMs, 0)} (${minute.longestStallSliceEndS} s) | ${minute.retentionEndedAtS === null ? '—' : `${minute.retentionEndedAtS} s`} | ${number(minute.generatorDelayP99Ms, 1)} / ${number(minute.generatorDelayMaxMs, 0)} |`,
    );
  }
  return lines.join('\n');
}

/** The 100 streams of the soak, open in a receivers child for its whole length. */
async function openStreams(launched: Launched, planned: number, run: string) {
  const receivers = forkTracked(join(HERE, 'sse-receivers.js'), [], { cwd: ROOT, execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  receivers.send({
    type: 'open',
    url: `${launched.server.origin}/api/v1/events/stream?type=${STREAM_TYPE}`,
    headers: launched.auth,
    streams: SOAK_STREAMS,
    run,
    planned,
    openConcurrency: 50,
    openTimeoutMs: 15_000,
  });
  const opened = await nextMessage(receivers, isMessage<OpenedReport>('opened'), 60_000, `opening ${SOAK_STREAMS} streams`);
  if (opened.failed > 0) log(`soak: ${opened.failed} of ${SOAK_STREAMS} streams failed to open: ${opened.failures.join('; ')}`);
  return { receivers, opened };
}

/** The account's newest event id: the one a stream opened without a cursor names first (`id: N`). */
async function newestEventId(origin: string, headers: Record<string, string>): Promise<number> {
  const stopped = new AbortController();
  const response = await fetch(`${origin}/api/v1/events/stream`, { headers, signal: stopped.signal });
  if (!response.ok || !response.body) throw new Error(`GET /api/v1/events/stream: ${response.status}`);
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of response.body) {
      text += decoder.decode(chunk, { stream: true });
      const found = /^id: (\d+)$/m.exec(text);
      if (found) return Number(found[1]);
    }
  } finally {
    stopped.abort();
  }
  throw new Error('the stream ended before naming its first id');
}

interface FixedRateStep {
  rate: number;
  answeredPerSecond: number;
  p99Ms: number;
  errors: number;
  sustained: boolean;
}

/**
 * The highest of the fixed rates (shares of the closed loop's) that PATCH sustains, each tried for
 * a step after a second of start; it stops at the first that is not. The lowest is taken if none is.
 */
async function sustainedRate(
  spec: HttpSpec,
  closedLoop: number,
  options: Options,
  recorder: Recorder,
  beforeEachStep: () => Promise<void>,
): Promise<{ highest: FixedRateStep; steps: FixedRateStep[] }> {
  const { step } = capacitySeconds(options);
  const steps: FixedRateStep[] = [];
  for (const share of FIXED_RATE_SHARES) {
    await beforeEachStep();
    const rate = Math.max(1, Math.round(closedLoop * share));
    const load = await fixedRate(spec, rate, options.connections, step + 10, recorder);
    recorder.take();
    recorder.recording = true;
    await sleep(step * 1000);
    recorder.recording = false;
    const window = recorder.take();
    await load.stop();
    const answeredPerSecond = round(window.latencies.length / step, 0);
    const tried: FixedRateStep = {
      rate,
      answeredPerSecond,
      p99Ms: ms(summarize(Float64Array.from(window.latencies)).p99),
      errors: window.errors,
      sustained: window.errors === 0 && answeredPerSecond >= rate * SUSTAINED_SHARE,
    };
    steps.push(tried);
    log(
      `soak: PATCH at a fixed ${rate} req/s (${Math.round(share * 100)}%): ${answeredPerSecond} answered a second, p99 ${tried.p99Ms} ms: ${tried.sustained ? 'sustained' : 'not sustained'}`,
    );
    if (!tried.sustained) break;
    await sleep(1000);
  }
  return { highest: steps.filter((tried) => tried.sustained).at(-1) ?? steps[0]!, steps };
}

interface Capacity {
  rate: number;
  result: autocannon.Result;
  serverCpuUsPerRequest: number | null;
}

/** PATCH closed loop for `seconds`: its req/s and the server's CPU a request; `recorder` counts its answers. */
async function capacityOf(spec: HttpSpec, options: Options, seconds: number, pid: number | undefined, recorder?: Recorder): Promise<Capacity> {
  const cpuBefore = cpuMs(pid);
  const result = await cannon(spec, options, seconds, recorder && ((status) => recorder.response(status, 0)));
  const cpuAfter = cpuMs(pid);
  return {
    rate: round(result.requests.total / result.duration, 0),
    result,
    serverCpuUsPerRequest:
      cpuBefore !== undefined && cpuAfter !== undefined && result.requests.total > 0 ? round(((cpuAfter - cpuBefore) * 1000) / result.requests.total, 1) : null,
  };
}

/** The capacity the soak's rate is a share of (the highest fixed rate sustained beside the readers and streams), and the closed loops' in its detail. */
function capacityRowOf(
  options: Options,
  seconds: number,
  alone: Capacity,
  beside: Capacity,
  sustained: { highest: FixedRateStep; steps: FixedRateStep[] },
): Row {
  return {
    key: 'soak-capacity',
    label: `soak: PATCH capacity before it, the readers and streams beside it: the highest fixed rate sustained (closed loop of ${options.connections} connections, ${seconds} s: ${beside.rate.toLocaleString('en-US')} req/s; alone ${alone.rate.toLocaleString('en-US')})`,
    kind: 'http',
    requestsPerSecond: sustained.highest.rate,
    p50Ms: null,
    p99Ms: sustained.highest.p99Ms,
    errors: beside.result.errors + beside.result.non2xx + alone.result.errors + alone.result.non2xx,
    rssMb: null,
    ratio: null,
    ratioOf: 'baseline req/s',
    target: null,
    met: null,
    detail: {
      fixedRates: sustained.steps,
      closedLoop: {
        requestsPerSecond: beside.rate,
        p50Ms: beside.result.latency.p50,
        p99Ms: beside.result.latency.p99,
        requests: beside.result.requests.total,
        serverCpuUsPerRequest: beside.serverCpuUsPerRequest,
        shareOfAlone: round(beside.rate / alone.rate, 2),
      },
      alone: {
        requestsPerSecond: alone.rate,
        p50Ms: alone.result.latency.p50,
        p99Ms: alone.result.latency.p99,
        requests: alone.result.requests.total,
        serverCpuUsPerRequest: alone.serverCpuUsPerRequest,
      },
    },
  };
}

/** The soak: its capacity row, the soak row, and the RSS with 1,000 streams after it; plus the per-minute table. */
export async function measureSoak(options: Options, workDir: string, profileDir: string): Promise<{ rows: Row[]; table: string }> {
  if (!['info', 'debug', 'trace'].includes(options.logLevel))
    throw new Error(`--soak reads the metrics URL from the server's log: --log-level must be info or lower`);
  const minuteSecs = minuteSeconds(options);
  const minuteMs = minuteSecs * 1000;
  const minuteLabel = options.smoke ? `${minuteSecs}-s "minute"` : 'minute';
  const databaseFile = join(workDir, 'soak.db');
  const launched = await launchDevdata({ ...options, metrics: true }, `sqlite:${databaseFile}`, workDir, profileDir, 'soak');
  const { server, auth, seeded } = launched;
  const pid = server.child.pid;
  try {
    const metricsUrl = metricsUrlOf(server.logPath);
    if (!metricsUrl) throw new Error('the soak server logged no metrics URL');
    const specs = httpSpecsFor(server.origin, auth, seeded);

    // Capacity, closed loop, on this server warmed by it first: PATCH alone, then with the soak's
    // readers and streams beside it. The soak's rate is a share of the second.
    const { warm, measure } = capacitySeconds(options);
    log(
      `soak: PATCH capacity, closed loop, ${options.connections} connections: ${warm} s unmeasured, ${measure} s alone, then ${measure} s with the readers and streams beside it`,
    );
    const warmed = await cannon(specs.patch, options, warm);
    const alone = await capacityOf(specs.patch, options, measure, pid);
    log(`soak: PATCH capacity alone ${alone.rate} req/s (p99 ${alone.result.latency.p99} ms)`);

    const soakSecs = options.soakMinutes * minuteSecs;
    const run = randomBytes(6).toString('hex');
    // The streams' events are written from before the capacity beside them to the soak's end.
    const streamEvents = Math.round(STREAM_EVENTS_PER_SECOND * (capacityBesideSeconds(options) + soakSecs + 4));
    const { receivers, opened } = await openStreams(launched, streamEvents, run);
    const publishClient = new JsonClient(server.origin, auth, 8);
    let written: { written: number[]; errors: number } = { written: [], errors: 0 };
    let collected: CollectedReport | undefined;
    const minutes: SoakMinute[] = [];
    let capacityRow: Row | undefined;
    let closedLoopRate: number | undefined;
    let rate = 0;
    try {
      const writerStarted = performance.now();
      // Planned for the longest capacity beside the readers and streams; stopped with the soak.
      const writerStop = new AbortController();
      const writing = writeSteadily(
        { publishClient, publishPath: '/api/v1/events' },
        { eventsPerSecond: STREAM_EVENTS_PER_SECOND },
        streamEvents,
        run,
        seeded.resource,
        writerStop.signal,
      );

      // The event page reader follows the head: the seeded events, every PATCH answered (one event
      // each) and the custom events written so far. A fixed cursor would fall out of retention.
      const patch = new Recorder();
      const readers = new Recorder();
      const customWritten = () => Math.min(streamEvents, Math.floor(((performance.now() - writerStarted) / 1000) * STREAM_EVENTS_PER_SECOND));
      let baseEvents = seeded.newestEventId + warmed['2xx'] + alone.result['2xx'];
      const head = () => baseEvents + patch.ok + customWritten();
      // The count misses the PATCHes still in flight when a closed loop or a fixed-rate step
      // stopped (up to 50 each): read from the server before each load, the reader's cursor stays
      // among the newest events kept in memory.
      const followHead = async () => {
        const missed = (await newestEventId(server.origin, auth)) - head();
        baseEvents += missed;
        return missed;
      };
      const ids = seeded.resourceIds;
      const readerSpec: HttpSpec = {
        key: 'soak-readers',
        label: 'readers',
        url: specs.list.url,
        method: 'GET',
        headers: auth,
        vary: (index) => {
          const turn = index % 3;
          if (turn === 0) return { path: `/api/v1/resources/${ids[Math.floor(index / 3) % ids.length]}` };
          return { path: turn === 1 ? '/api/v1/resources?limit=50' : eventPagePath(head()) };
        },
      };
      const readerLoad = await fixedRate(readerSpec, READER_RATE, READER_CONNECTIONS, capacityBesideSeconds(options) + soakSecs + 30, readers);
      let patchLoad: { stop(): Promise<void> } | undefined;
      try {
        await followHead();
        await sleep(BESIDE_SETTLE_SECONDS * 1000);
        const beside = await capacityOf(specs.patch, options, measure, pid, patch);
        log(
          `soak: PATCH capacity with the readers and streams beside it ${beside.rate} req/s (p99 ${beside.result.latency.p99} ms; ${Math.round((beside.rate / alone.rate) * 100)}% of alone)`,
        );
        const sustained = await sustainedRate(specs.patch, beside.rate, options, patch, async () => void (await followHead()));
        capacityRow = capacityRowOf(options, measure, alone, beside, sustained);
        closedLoopRate = beside.rate;
        rate = Math.max(1, Math.round(sustained.highest.rate * LOAD_SHARE));
        log(
          `soak: ${options.soakMinutes} × ${minuteSecs} s: PATCH at ${rate} req/s (${LOAD_SHARE * 100}% of ${sustained.highest.rate}; ${Math.round((rate / beside.rate) * 100)}% of the closed loop beside the readers and streams, ${Math.round((rate / alone.rate) * 100)}% of PATCH alone), readers at ${READER_RATE} req/s, ${opened.opened} streams (${STREAM_EVENTS_PER_SECOND} events/s)`,
        );
        const missed = await followHead();
        log(`soak: the event page reader's count of events was ${missed} behind the server's newest id`);
        patchLoad = await fixedRate(specs.patch, rate, options.connections, soakSecs + 30, patch);
        // Every phase of both loads has been running for a second: the first minute starts now.
        let scrapedPrevious = await scrape(metricsUrl);
        let waitPrevious = runQueueWaitNs(pid);
        const t0 = performance.now();
        const wallT0 = Date.now();
        patch.recording = true;
        readers.recording = true;
        let cpuPrevious = cpuMs(pid);
        let mainCpuPrevious = cpuMs(pid, true);
        let rssHighest: number | undefined;
        const rssTimer = setInterval(() => {
          const value = rssMb(pid);
          if (value !== undefined && (rssHighest === undefined || value > rssHighest)) rssHighest = value;
        }, 1000);
        const generatorDelay = monitorEventLoopDelay({ resolution: 10 });
        generatorDelay.enable();
        try {
          for (let minute = 1; minute <= options.soakMinutes; minute++) {
            const minuteStart = t0 + (minute - 1) * minuteMs;
            const sliceStalls: number[] = [];
            for (let slice = 1; slice < minuteMs / SLICE_MS; slice++) {
              await sleep(Math.max(0, minuteStart + slice * SLICE_MS - performance.now()));
              sliceStalls.push(stallOf((await scrape(metricsUrl)).nodejs_eventloop_lag_max_seconds * 1000));
            }
            await sleep(Math.max(0, t0 + minute * minuteMs - performance.now()));
            const base = minuteOf(minute, minuteSecs, patch.take(), readers.take());
            const rssNow = rssMb(pid);
            const rss = rssNow === undefined ? rssHighest : Math.max(rssNow, rssHighest ?? 0);
            rssHighest = undefined;
            const cpuNow = cpuMs(pid);
            const mainCpuNow = cpuMs(pid, true);
            const scraped = await scrape(metricsUrl);
            sliceStalls.push(stallOf(scraped.nodejs_eventloop_lag_max_seconds * 1000));
            const longest = sliceStalls.indexOf(Math.max(...sliceStalls));
            const retentionEnded = await retentionLastRun(server.origin);
            const retentionAt = retentionEnded === undefined ? undefined : (retentionEnded - (wallT0 + (minute - 1) * minuteMs)) / 1000;
            const waitNow = runQueueWaitNs(pid);
            const gcPauses = scraped.gcPauses - scrapedPrevious.gcPauses;
            const record: SoakMinute = {
              ...base,
              rssMb: rss === undefined ? null : round(rss, 1),
              serverCpuPercent: cpuNow !== undefined && cpuPrevious !== undefined ? round(((cpuNow - cpuPrevious) / minuteMs) * 100, 0) : null,
              mainThreadCpuPercent:
                mainCpuNow !== undefined && mainCpuPrevious !== undefined ? round(((mainCpuNow - mainCpuPrevious) / minuteMs) * 100, 0) : null,
              databaseMb: databaseMb(databaseFile),
              heapUsedMb: round(scraped.nodejs_heap_size_used_bytes / 1024 ** 2, 1),
              heapTotalMb: round(scraped.nodejs_heap_size_total_bytes / 1024 ** 2, 1),
              externalMb: round(scraped.nodejs_external_memory_bytes / 1024 ** 2, 1),
              gcOver10Ms: gcPauses - (scraped.gcWithin10Ms - scrapedPrevious.gcWithin10Ms),
              gcOver100Ms: gcPauses - (scraped.gcWithin100Ms - scrapedPrevious.gcWithin100Ms),
              runQueueWaitPercent: waitNow !== undefined && waitPrevious !== undefined ? round((waitNow - waitPrevious) / 1e4 / minuteMs, 1) : null,
              stallMs: sliceStalls[longest]!,
              longestStallSliceEndS: ((longest + 1) * SLICE_MS) / 1000,
              sliceStallsMs: sliceStalls,
              retentionEndedAtS: retentionAt !== undefined && retentionAt >= 0 && retentionAt <= minuteSecs ? round(retentionAt, 1) : null,
              // The histogram's values include its 10 ms resolution, as the server's stalls do before stallOf.
              generatorDelayP99Ms: stallOf(generatorDelay.percentile(99) / 1e6),
              generatorDelayMaxMs: stallOf(generatorDelay.max / 1e6),
            };
            generatorDelay.reset();
            cpuPrevious = cpuNow;
            mainCpuPrevious = mainCpuNow;
            scrapedPrevious = scraped;
            waitPrevious = waitNow;
            minutes.push(record);
            log(
              `soak ${minuteLabel} ${minute}: PATCH ${record.patch.requestsPerSecond} req/s, p50 ${record.patch.p50Ms} ms, p99 ${record.patch.p99Ms} ms, ` +
                `${record.patch.errors + record.readers.errors} errors; readers ${record.readers.requestsPerSecond} req/s; RSS ${record.rssMb} MB (heap ${record.heapUsedMb} of ${record.heapTotalMb}); ` +
                `CPU ${record.serverCpuPercent}% (main thread ${record.mainThreadCpuPercent}%; waiting for one ${record.runQueueWaitPercent}%); GC > 10 ms ${record.gcOver10Ms}, > 100 ms ${record.gcOver100Ms}; database ${record.databaseMb} MB; longest stall ${record.stallMs} ms (slice ending at ${record.longestStallSliceEndS} s; by slice ${record.sliceStallsMs.join(', ')}); retention ended at ${record.retentionEndedAtS} s; this load generator's loop late by ${record.generatorDelayP99Ms} ms (p99), ${record.generatorDelayMaxMs} ms at most`,
            );
          }
        } finally {
          clearInterval(rssTimer);
          generatorDelay.disable();
        }
      } finally {
        writerStop.abort();
        await Promise.all([patchLoad?.stop(), readerLoad.stop()]);
      }
      written = await writing;
      receivers.send({ type: 'collect', written: written.written, drainTimeoutMs: options.drainTimeout * 1000 });
      collected = await nextMessage(receivers, isMessage<CollectedReport>('collected'), options.drainTimeout * 1000 + 60_000, 'collecting the soak streams');
    } finally {
      publishClient.close();
      if (receivers.connected) receivers.send({ type: 'close' });
      await stop(receivers, 'SIGTERM', 5_000);
    }

    // The server after the soak, with many streams open: the memory row of issue #19.
    // Idle first, as long as the main run's server is between its load rows and its 1,000 streams
    // (the floor's scenario runs in between); its RSS is sampled meanwhile, to show what V8 gives back.
    const rssWhenLoadStopped = rssMb(pid);
    const settleSeconds = options.smoke ? 2 : 20;
    const rssWhileIdle: number[] = [];
    for (let second = 0; second < settleSeconds; second++) {
      await sleep(1000);
      const value = rssMb(pid);
      if (value !== undefined) rssWhileIdle.push(round(value, 1));
    }
    const streamCount = memoryStreams(options);
    log(`soak: RSS with ${streamCount.toLocaleString('en-US')} streams after it`);
    const memoryClient = new JsonClient(server.origin, auth, 64);
    let memory: Awaited<ReturnType<typeof streamScenario>>;
    try {
      memory = await streamScenario(
        { name: 'soak', streamUrl: `${server.origin}/api/v1/events/stream`, headers: auth, publishClient: memoryClient, publishPath: '/api/v1/events', pid },
        { streams: streamCount, eventsPerSecond: 10 },
        options,
        seeded.resource,
      );
    } finally {
      memoryClient.close();
    }

    const conditions = conditionsOf(minutes);
    const streamErrors = collected.lost + collected.duplicates + collected.outOfOrder + collected.endedEarly + opened.failed + written.errors;
    const requestErrors = minutes.reduce((sum, minute) => sum + minute.patch.errors + minute.readers.errors, 0);
    const patchRequests = minutes.reduce((sum, minute) => sum + minute.patch.requests, 0);
    const first = minutes[0]!;
    const last = minutes[minutes.length - 1]!;
    const soakRow: Row = {
      key: 'soak',
      label: `soak: ${options.soakMinutes} × ${minuteLabel}, PATCH at ${LOAD_SHARE * 100}% of capacity (${rate.toLocaleString('en-US')} req/s), readers at ${READER_RATE} req/s, ${SOAK_STREAMS} streams (per ${minuteLabel} below; p50/p99 of the last)`,
      kind: 'soak',
      requestsPerSecond: round(patchRequests / soakSecs, 0),
      p50Ms: last.patch.p50Ms,
      p99Ms: last.patch.p99Ms,
      errors: requestErrors + streamErrors,
      rssMb: null,
      ratio: round(last.patch.requestsPerSecond / first.patch.requestsPerSecond, 2),
      ratioOf: `first ${minuteLabel}'s req/s`,
      target: 'last minute ±10% of the first (req/s, p99); RSS ≤ +10% after minute 2; stalls ≤ 50 ms',
      met: conditions.every((condition) => condition.met) && requestErrors + streamErrors === 0,
      detail: {
        capacityRequestsPerSecond: capacityRow?.requestsPerSecond ?? null,
        capacityClosedLoopRequestsPerSecond: closedLoopRate ?? null,
        capacityAloneRequestsPerSecond: alone.rate,
        patchRate: rate,
        readerRate: READER_RATE,
        minuteSeconds: minuteSecs,
        minutes,
        conditions,
        streams: {
          opened: opened.opened,
          openFailures: opened.failed,
          eventsPerSecond: STREAM_EVENTS_PER_SECOND,
          eventsWritten: written.written.length,
          writeErrors: written.errors,
          delivered: collected.delivered,
          expected: collected.expected,
          lost: collected.lost,
          duplicates: collected.duplicates,
          outOfOrder: collected.outOfOrder,
          endedEarly: collected.endedEarly,
          latencyMs: collected.latencyMs,
        },
      },
    };
    const memoryErrors = memory.collected.lost + memory.collected.duplicates + memory.collected.outOfOrder + memory.opened.failed + memory.writeErrors;
    const memoryRow: Row = {
      key: 'soak-rss-streams',
      label: `server RSS with ${streamCount.toLocaleString('en-US')} open streams after the soak (peak; ${rssWhenLoadStopped === undefined ? '?' : round(rssWhenLoadStopped, 1)} MB when its load stopped, ${memory.rssBeforeOpenMb === undefined ? '?' : round(memory.rssBeforeOpenMb, 1)} MB ${settleSeconds} s later, just before they opened)`,
      kind: 'memory',
      requestsPerSecond: null,
      p50Ms: null,
      p99Ms: null,
      errors: memoryErrors,
      rssMb: memory.rssMaxMb === undefined ? null : round(memory.rssMaxMb, 1),
      ratio: null,
      ratioOf: '',
      target: `< ${RSS_WITH_STREAMS_LIMIT_MB} MB`,
      met: memory.rssMaxMb === undefined ? null : memory.rssMaxMb < RSS_WITH_STREAMS_LIMIT_MB && memoryErrors === 0,
      detail: {
        streams: streamCount,
        loadStoppedMb: rssWhenLoadStopped === undefined ? null : round(rssWhenLoadStopped, 1),
        idleSeconds: settleSeconds,
        idleMb: rssWhileIdle,
        beforeOpenMb: memory.rssBeforeOpenMb === undefined ? null : round(memory.rssBeforeOpenMb, 1),
        afterOpenMb: memory.rssAfterOpenMb === undefined ? null : round(memory.rssAfterOpenMb, 1),
        delivered: memory.collected.delivered,
        expected: memory.collected.expected,
        latencyMs: memory.collected.latencyMs,
      },
    };
    const conditionLines = [
      ...conditions.map((condition) => `- ${condition.what}: ${condition.value}: ${condition.met ? 'met' : '**missed**'}`),
      `- RSS with ${streamCount.toLocaleString('en-US')} streams open after the soak under ${RSS_WITH_STREAMS_LIMIT_MB} MB: ${memoryRow.rssMb ?? '?'} MB: ${memoryRow.met ? 'met' : '**missed**'}`,
    ];
    const table = `Soak: ${minuteLabel} by ${minuteLabel}\n\n${minuteTable(minutes, minuteLabel)}\n\n${conditionLines.join('\n')}`;
    soakRow.detail.table = table;
    return { rows: [capacityRow as Row, soakRow, memoryRow], table };
  } finally {
    launched.client.close();
    await stop(server.child, 'SIGTERM', 15_000);
    if (options.profile) printProfile(profileDir, pid);
  }
}

/** The soak server's own CPU profile (the run's summary is of the newest, the main server's). */
function printProfile(profileDir: string, pid: number | undefined): void {
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile') && name.includes(`.${pid}.`));
  if (file === undefined) {
    log('soak: no CPU profile was written (the server did not exit cleanly)');
    return;
  }
  log(`soak server CPU profile: ${join(profileDir, file)}`);
  console.log(formatSummary(summarizeProfile(JSON.parse(readFileSync(join(profileDir, file), 'utf8')), 25)));
}
