// The stream rows: N SSE streams (bench/sse-receivers.ts) against a bare node:http broadcaster
// (bench/sse-floor-server.ts) and against the service, with events written at a steady rate.
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { forkTracked, nextMessage, rssMb, sampleRss, sleep, stop } from './children.js';
import { JsonClient } from './http-client.js';
import type { Options, StreamSpec } from './options.js';
import { isMessage, type CollectedReport, type OpenedReport } from './protocol.js';
import { log, round, type Row } from './results.js';
import { forkListening, HERE, ROOT, type Server } from './server.js';

/** The server's RSS with the memory row's streams open must stay under this (the goal of issue #19, for the main run and the soak). */
export const RSS_WITH_STREAMS_LIMIT_MB = 200;

export interface StreamTarget {
  name: string;
  streamUrl: string;
  headers: Record<string, string>;
  publishClient: JsonClient;
  publishPath: string;
  pid: number | undefined;
}

export interface StreamOutcome {
  opened: OpenedReport;
  rssBeforeOpenMb: number | undefined;
  collected: CollectedReport;
  written: number;
  writeErrors: number;
  rssAfterOpenMb: number | undefined;
  rssMaxMb: number | undefined;
}

/** Writes `count` events at a steady rate (an absolute schedule, so no drift); sentAt = the write's start. */
export async function writeSteadily(
  target: Pick<StreamTarget, 'publishClient' | 'publishPath'>,
  spec: Pick<StreamSpec, 'eventsPerSecond'>,
  count: number,
  run: string,
  payload: Record<string, unknown>,
  /** Ends the writing early: the events written so far are the ones reported. */
  stop?: AbortSignal,
): Promise<{ written: number[]; errors: number }> {
  const interval = 1000 / spec.eventsPerSecond;
  const written: number[] = [];
  let errors = 0;
  const inFlight: Array<Promise<void>> = [];
  const start = performance.now() + 20;
  for (let seq = 0; seq < count && !stop?.aborted; seq++) {
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

export async function streamScenario(target: StreamTarget, spec: StreamSpec, options: Options, payload: Record<string, unknown>): Promise<StreamOutcome> {
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

export function streamRow(
  key: string,
  label: string,
  spec: StreamSpec,
  outcome: StreamOutcome,
  options: Options,
  floorP99: number | null,
  withTarget: boolean,
): Row {
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

/** Each stream scenario: the floor, then the service; and the memory row of the largest one. */
export async function measureStreamRows(options: Options, server: Server, auth: Record<string, string>, payload: Record<string, unknown>): Promise<Row[]> {
  const rows: Row[] = [];
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
        {
          name: 'floor',
          streamUrl: `${floorServer.origin}/stream`,
          headers: {},
          publishClient: floorClient,
          publishPath: '/publish',
          pid: floorServer.child.pid,
        },
        spec,
        options,
        payload,
      );
    } finally {
      floorClient.close();
      await stop(floorServer.child);
    }
    const floorRow = streamRow(
      `stream-floor-${spec.streams}x${spec.eventsPerSecond}`,
      `SSE floor (bare node:http): ${name}`,
      spec,
      floor,
      options,
      null,
      false,
    );
    rows.push(floorRow);
    log(`${floorRow.label}: p50 ${floorRow.p50Ms} ms, p99 ${floorRow.p99Ms} ms, ${floorRow.errors} errors`);

    log(`${name}: devdata`);
    const publishClient = new JsonClient(server.origin, auth, 64);
    let outcome: StreamOutcome;
    try {
      outcome = await streamScenario(
        {
          name: 'devdata',
          streamUrl: `${server.origin}/api/v1/events/stream`,
          headers: auth,
          publishClient,
          publishPath: '/api/v1/events',
          pid: server.child.pid,
        },
        spec,
        options,
        payload,
      );
    } finally {
      publishClient.close();
    }
    const row = streamRow(`stream-${spec.streams}x${spec.eventsPerSecond}`, `SSE fan-out: ${name}`, spec, outcome, options, floorRow.p99Ms, true);
    rows.push(row);
    log(`${row.label}: p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms, ${row.errors} errors`);
    if (spec.streams === memoryStreams && streamsRss === undefined)
      streamsRss = { devdata: outcome.rssMaxMb, before: outcome.rssBeforeOpenMb, floor: floor.rssMaxMb };
    await sleep(1000); // the server notices the closed streams
  }
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
      target: `< ${RSS_WITH_STREAMS_LIMIT_MB} MB`,
      met: value === undefined ? null : value < RSS_WITH_STREAMS_LIMIT_MB,
      detail: {
        streams: memoryStreams,
        // The server's RSS just before the streams opened (after the HTTP rows, when they ran).
        beforeOpenMb: streamsRss.before === undefined ? null : round(streamsRss.before, 1),
        floorRssMb: streamsRss.floor === undefined ? null : round(streamsRss.floor, 1),
      },
    });
  }
  return rows;
}
