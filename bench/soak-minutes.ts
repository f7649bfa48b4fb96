// The soak's sampling minute by minute: the server's metrics, CPU, RSS, wait for a CPU, database size and event-loop stalls, into a SoakMinute each.
import { readFileSync, statSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { cpuMs, rssMb, sleep } from './children.js';
import { log, round } from './results.js';
import type { Recorder, Window } from './soak-load.js';
import { summarize } from './stats.js';

/**
 * prom-client samples the event loop with monitorEventLoopDelay at its default resolution, 10 ms:
 * the histogram records the gaps between a 10 ms timer's ticks, so a stall is the gap minus 10 ms.
 */
const LAG_RESOLUTION_MS = 10;
/** The metrics are scraped every 5 s, so a minute's longest stall can be placed in it (next to retention's run). */
const SLICE_MS = 5000;

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

/** When the retention and history housekeeping tasks last finished (GET /api/v1/status, their worker reports), in ms since the epoch. */
async function housekeepingLastRuns(origin: string): Promise<{ retention: number | undefined; history: number | undefined }> {
  const response = await fetch(`${origin}/api/v1/status`);
  const status = (await response.json()) as { workers?: Record<string, { lastRunAt?: string | null } | undefined> };
  const at = (worker: string) => {
    const last = status.workers?.[worker]?.lastRunAt;
    return typeof last === 'string' ? Date.parse(last) : undefined;
  };
  return { retention: at('retention'), history: at('history') };
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
  /** The same for history's housekeeping (HISTORY_INTERVAL_MS, a run a minute by default). */
  historyEndedAtS: number | null;
  /**
   * This process's own event-loop delay in the minute (p99 and longest, ms): the load generator
   * measures each latency here, so a late loop here lengthens the PATCH latencies it records.
   */
  generatorDelayP99Ms: number;
  generatorDelayMaxMs: number;
}

export const ms = (value: number) => round(value, 1);

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

/** Where the minutes are read: the soak server (its metrics, status and process) and database file; how long a minute is and how many. */
export interface MinuteSources {
  metricsUrl: string;
  origin: string;
  pid: number | undefined;
  databaseFile: string;
  minuteSeconds: number;
  minuteLabel: string;
  soakMinutes: number;
}

/**
 * The soak's minutes, from when it is called (both loads running): each minute's PATCH and readers
 * (their recorders record from here on), the server's RSS (its highest, sampled each second), CPU,
 * metrics, stalls by 5 s slice and when retention ended, and this process's own event-loop delay.
 */
export async function recordMinutes(sources: MinuteSources, patch: Recorder, readers: Recorder): Promise<SoakMinute[]> {
  const { metricsUrl, origin, pid, databaseFile, minuteSeconds, minuteLabel } = sources;
  const minuteMs = minuteSeconds * 1000;
  const minutes: SoakMinute[] = [];
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
    for (let minute = 1; minute <= sources.soakMinutes; minute++) {
      const minuteStart = t0 + (minute - 1) * minuteMs;
      const sliceStalls: number[] = [];
      for (let slice = 1; slice < minuteMs / SLICE_MS; slice++) {
        await sleep(Math.max(0, minuteStart + slice * SLICE_MS - performance.now()));
        sliceStalls.push(stallOf((await scrape(metricsUrl)).nodejs_eventloop_lag_max_seconds * 1000));
      }
      await sleep(Math.max(0, t0 + minute * minuteMs - performance.now()));
      const base = minuteOf(minute, minuteSeconds, patch.take(), readers.take());
      const rssNow = rssMb(pid);
      const rss = rssNow === undefined ? rssHighest : Math.max(rssNow, rssHighest ?? 0);
      rssHighest = undefined;
      const cpuNow = cpuMs(pid);
      const mainCpuNow = cpuMs(pid, true);
      const scraped = await scrape(metricsUrl);
      sliceStalls.push(stallOf(scraped.nodejs_eventloop_lag_max_seconds * 1000));
      const longest = sliceStalls.indexOf(Math.max(...sliceStalls));
      const lastRuns = await housekeepingLastRuns(origin);
      // Seconds into this minute, or null when the task's last run ended in another.
      const inMinute = (ended: number | undefined) => {
        const at = ended === undefined ? undefined : (ended - (wallT0 + (minute - 1) * minuteMs)) / 1000;
        return at !== undefined && at >= 0 && at <= minuteSeconds ? round(at, 1) : null;
      };
      const waitNow = runQueueWaitNs(pid);
      const gcPauses = scraped.gcPauses - scrapedPrevious.gcPauses;
      const record: SoakMinute = {
        ...base,
        rssMb: rss === undefined ? null : round(rss, 1),
        serverCpuPercent: cpuNow !== undefined && cpuPrevious !== undefined ? round(((cpuNow - cpuPrevious) / minuteMs) * 100, 0) : null,
        mainThreadCpuPercent: mainCpuNow !== undefined && mainCpuPrevious !== undefined ? round(((mainCpuNow - mainCpuPrevious) / minuteMs) * 100, 0) : null,
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
        retentionEndedAtS: inMinute(lastRuns.retention),
        historyEndedAtS: inMinute(lastRuns.history),
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
          `CPU ${record.serverCpuPercent}% (main thread ${record.mainThreadCpuPercent}%; waiting for one ${record.runQueueWaitPercent}%); GC > 10 ms ${record.gcOver10Ms}, > 100 ms ${record.gcOver100Ms}; database ${record.databaseMb} MB; longest stall ${record.stallMs} ms (slice ending at ${record.longestStallSliceEndS} s; by slice ${record.sliceStallsMs.join(', ')}); retention ended at ${record.retentionEndedAtS} s, history's housekeeping at ${record.historyEndedAtS} s; this load generator's loop late by ${record.generatorDelayP99Ms} ms (p99), ${record.generatorDelayMaxMs} ms at most`,
      );
    }
  } finally {
    clearInterval(rssTimer);
    generatorDelay.disable();
  }
  return minutes;
}
