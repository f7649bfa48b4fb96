// The soak's goal and report: its conditions over the minutes, the minutes' table, the soak row and the RSS with many streams after it.
import type { CollectedReport, OpenedReport } from './protocol.js';
import { round, type Row } from './results.js';
import { LOAD_SHARE, READER_RATE, SOAK_STREAMS, STREAM_EVENTS_PER_SECOND } from './soak-load.js';
import type { SoakMinute } from './soak-minutes.js';
import { RSS_WITH_STREAMS_LIMIT_MB, type StreamOutcome } from './stream-rows.js';

/** The goal's bounds (issue #19). */
const LAST_MINUTE_TOLERANCE = 0.1;
const RSS_GROWTH_TOLERANCE = 0.1;
const STALL_LIMIT_MS = 50;

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
    `| ${minuteLabel} | PATCH req/s | p50 ms | p99 ms | max ms | errors | readers req/s | readers p99 ms | server RSS MB | V8 heap used / total MB | server CPU (main thread) | waiting for a CPU | GC pauses > 10 / > 100 ms | database MB | longest stall ms (5 s slice ending at) | retention ended at | history housekeeping ended at | load generator late, p99 / max ms |`,
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const minute of minutes) {
    lines.push(
      `| ${minute.minute} | ${number(minute.patch.requestsPerSecond)} | ${number(minute.patch.p50Ms, 1)} | ${number(minute.patch.p99Ms, 1)} | ${number(minute.patch.maxMs, 0)} | ${minute.patch.errors + minute.readers.errors} | ${number(minute.readers.requestsPerSecond)} | ${number(minute.readers.p99Ms, 1)} | ${number(minute.rssMb, 1)} | ${number(minute.heapUsedMb, 0)} / ${number(minute.heapTotalMb, 0)} | ${minute.serverCpuPercent === null ? '—' : `${minute.serverCpuPercent}%`} (${minute.mainThreadCpuPercent === null ? '—' : `${minute.mainThreadCpuPercent}%`}) | ${minute.runQueueWaitPercent === null ? '—' : `${minute.runQueueWaitPercent}%`} | ${minute.gcOver10Ms} / ${minute.gcOver100Ms} | ${number(minute.databaseMb, 1)} | ${number(minute.stallMs, 0)} (${minute.longestStallSliceEndS} s) | ${minute.retentionEndedAtS === null ? '—' : `${minute.retentionEndedAtS} s`} | ${minute.historyEndedAtS === null ? '—' : `${minute.historyEndedAtS} s`} | ${number(minute.generatorDelayP99Ms, 1)} / ${number(minute.generatorDelayMaxMs, 0)} |`,
    );
  }
  return lines.join('\n');
}

/** The soak as run: its minutes, its PATCH rate and the capacities measured before it, and its streams. */
export interface SoakRun {
  soakMinutes: number;
  minuteLabel: string;
  minuteSeconds: number;
  soakSeconds: number;
  rate: number;
  capacityRow: Row | undefined;
  closedLoopRate: number | undefined;
  aloneRate: number;
  minutes: SoakMinute[];
  opened: OpenedReport;
  written: { written: number[]; errors: number };
  collected: CollectedReport;
}

/** After the soak: the server's RSS when its load stopped and while idle, then with many streams open. */
export interface AfterSoak {
  streamCount: number;
  rssWhenLoadStopped: number | undefined;
  settleSeconds: number;
  rssWhileIdle: number[];
  memory: StreamOutcome;
}

/** The soak row and the memory row after it, and the table of the minutes with the goal's conditions (also in the soak row's detail). */
export function soakReport(run: SoakRun, after: AfterSoak): { soakRow: Row; memoryRow: Row; table: string } {
  const { soakMinutes, minuteLabel, minuteSeconds, soakSeconds, rate, capacityRow, closedLoopRate, aloneRate, minutes, opened, written, collected } = run;
  const { streamCount, rssWhenLoadStopped, settleSeconds, rssWhileIdle, memory } = after;
  const conditions = conditionsOf(minutes);
  const streamErrors = collected.lost + collected.duplicates + collected.outOfOrder + collected.endedEarly + opened.failed + written.errors;
  const requestErrors = minutes.reduce((sum, minute) => sum + minute.patch.errors + minute.readers.errors, 0);
  const patchRequests = minutes.reduce((sum, minute) => sum + minute.patch.requests, 0);
  const first = minutes[0]!;
  const last = minutes[minutes.length - 1]!;
  const soakRow: Row = {
    key: 'soak',
    label: `soak: ${soakMinutes} × ${minuteLabel}, PATCH at ${LOAD_SHARE * 100}% of capacity (${rate.toLocaleString('en-US')} req/s), readers at ${READER_RATE} req/s, ${SOAK_STREAMS} streams (per ${minuteLabel} below; p50/p99 of the last)`,
    kind: 'soak',
    requestsPerSecond: round(patchRequests / soakSeconds, 0),
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
      capacityAloneRequestsPerSecond: aloneRate,
      patchRate: rate,
      readerRate: READER_RATE,
      minuteSeconds,
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
  return { soakRow, memoryRow, table };
}
