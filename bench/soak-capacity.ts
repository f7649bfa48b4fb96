// PATCH capacity before the soak: closed loop alone and beside the readers and streams, then the highest fixed rate sustained; its row.
import type autocannon from 'autocannon';
import { cpuMs, sleep } from './children.js';
import { cannon } from './http-rows.js';
import type { HttpSpec } from './http-specs.js';
import type { Options } from './options.js';
import { log, round, type Row } from './results.js';
import { fixedRate, type Recorder } from './soak-load.js';
import { ms } from './soak-minutes.js';
import { summarize } from './stats.js';

/** After the readers and streams start, before the capacity beside them is measured. */
export const BESIDE_SETTLE_SECONDS = 2;
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

export function capacitySeconds(options: Options): { warm: number; measure: number; step: number } {
  return options.smoke ? { warm: 1, measure: 2, step: 2 } : { warm: 5, measure: 10, step: 10 };
}

/** The most the capacity beside the readers and streams takes, from their start: they run that much longer than the soak. */
export function capacityBesideSeconds(options: Options): number {
  const { measure, step } = capacitySeconds(options);
  // A fixed-rate step: a second of start, the step, its stop and a second's pause.
  return BESIDE_SETTLE_SECONDS + measure + FIXED_RATE_SHARES.length * (step + 3);
}

export interface FixedRateStep {
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
export async function sustainedRate(
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

export interface Capacity {
  rate: number;
  result: autocannon.Result;
  serverCpuUsPerRequest: number | null;
}

/** PATCH closed loop for `seconds`: its req/s and the server's CPU a request; `recorder` counts its answers. */
export async function capacityOf(spec: HttpSpec, options: Options, seconds: number, pid: number | undefined, recorder?: Recorder): Promise<Capacity> {
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
export function capacityRowOf(
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
