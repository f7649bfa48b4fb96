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
// Its parts: the load in soak-load.ts, the capacity before it in soak-capacity.ts, the minutes' sampling in soak-minutes.ts, the goal and rows in soak-report.ts.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nextMessage, rssMb, sleep, stop } from './children.js';
import { JsonClient } from './http-client.js';
import { cannon } from './http-rows.js';
import { httpSpecsFor, type HttpSpec } from './http-specs.js';
import { metricsUrlOf } from './metrics-overhead.js';
import type { Options } from './options.js';
import { formatSummary, summarizeProfile } from './profile-top.js';
import { isMessage, type CollectedReport } from './protocol.js';
import { log, round, type Row } from './results.js';
import { eventPagePath } from './seed.js';
import { launchDevdata } from './server.js';
import { BESIDE_SETTLE_SECONDS, capacityBesideSeconds, capacityOf, capacityRowOf, capacitySeconds, sustainedRate } from './soak-capacity.js';
import { fixedRate, LOAD_SHARE, newestEventId, openStreams, READER_CONNECTIONS, READER_RATE, Recorder, STREAM_EVENTS_PER_SECOND } from './soak-load.js';
import { recordMinutes, type SoakMinute } from './soak-minutes.js';
import { soakReport } from './soak-report.js';
import { streamScenario, writeSteadily } from './stream-rows.js';

function minuteSeconds(options: Options): number {
  return options.smoke ? 20 : 60;
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

/** The soak: its capacity row, the soak row, and the RSS with 1,000 streams after it; plus the per-minute table. */
export async function measureSoak(options: Options, workDir: string, profileDir: string): Promise<{ rows: Row[]; table: string }> {
  if (!['info', 'debug', 'trace'].includes(options.logLevel))
    throw new Error(`--soak reads the metrics URL from the server's log: --log-level must be info or lower`);
  const minuteSecs = minuteSeconds(options);
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
    let minutes: SoakMinute[] = [];
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
        minutes = await recordMinutes(
          { metricsUrl, origin: server.origin, pid, databaseFile, minuteSeconds: minuteSecs, minuteLabel, soakMinutes: options.soakMinutes },
          patch,
          readers,
        );
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

    const { soakRow, memoryRow, table } = soakReport(
      {
        soakMinutes: options.soakMinutes,
        minuteLabel,
        minuteSeconds: minuteSecs,
        soakSeconds: soakSecs,
        rate,
        capacityRow,
        closedLoopRate,
        aloneRate: alone.rate,
        minutes,
        opened,
        written,
        collected,
      },
      { streamCount, rssWhenLoadStopped, settleSeconds, rssWhileIdle, memory },
    );
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
