// The webhook rows: webhooks to a bare local receiver (bench/webhook-receiver.ts) while events are
// published at a steady rate, one webhook and twenty; replays of the first row's events, to a
// receiver answering nothing and one answering 1 KiB (what recording the answer's start costs).
import { randomBytes } from 'node:crypto';
import { cpuMs, nextMessage, stop } from './children.js';
import { JsonClient } from './http-client.js';
import type { Options } from './options.js';
import { isMessage, type WebhookCollectedReport } from './protocol.js';
import { round, type Row } from './results.js';
import { forkListening, type Server } from './server.js';
import { writeSteadily } from './stream-rows.js';

/** The most a webhook row's p99 from publish to receipt may be (issue #41). */
const P99_GOAL_MS = 100;
/** What the excerpt row's receiver answers: as much as an attempt records. */
const ANSWER_BYTES = 1024;

interface Hook {
  id: string;
  path: string;
  secret: string;
}

interface Measured {
  collected: WebhookCollectedReport;
  deliveriesPerSecond: number;
  eventsWritten: number;
  writeErrors: number;
  serverCpuUsPerEvent: number | null;
}

/**
 * Deliveries/s = distinct (webhook, event) pairs received ÷ (last receipt − first publish); latency =
 * receipt − `data.sentAt`, both Date.now() on this machine, so it includes the write. The replay
 * row counts from its request instead.
 */
export async function webhookRows(
  server: Server,
  client: JsonClient,
  auth: Record<string, string>,
  options: Options,
  payload: Record<string, unknown>,
): Promise<Row[]> {
  const receiver = await forkListening('webhook-receiver.js');
  const publishClient = new JsonClient(server.origin, auth, 64);
  const createHooks = async (count: number, answerBytes = 0): Promise<Hook[]> => {
    const hooks: Hook[] = [];
    for (let index = 0; index < count; index++) {
      const path = `/hook-${randomBytes(4).toString('hex')}`;
      const created = (await client.expect(201, 'POST', '/api/v1/webhooks', {
        name: `bench receiver ${index + 1}`,
        url: `${receiver.origin}${path}${answerBytes > 0 ? `?answer=${answerBytes}` : ''}`,
        events: ['custom.bench'],
      })) as { id: string; secret: string };
      hooks.push({ id: created.id, path, secret: created.secret });
    }
    return hooks;
  };
  const deleteHooks = async (hooks: Hook[]) => {
    for (const hook of hooks) await client.expect(204, 'DELETE', `/api/v1/webhooks/${hook.id}`);
  };
  const collect = async (hooks: Hook[], run: string, written: number[], replay: boolean, startedAt?: number) => {
    const drainTimeoutMs = (options.webhookDuration + options.drainTimeout) * 1000;
    receiver.child.send({
      type: 'webhook-collect',
      run,
      written,
      hooks: hooks.map(({ path, secret }) => ({ path, secret })),
      replay,
      startedAt,
      drainTimeoutMs,
    });
    return nextMessage(receiver.child, isMessage<WebhookCollectedReport>('webhook-collected'), drainTimeoutMs + 60_000, 'collecting webhook deliveries');
  };
  const live = async (hooks: Hook[]): Promise<Measured & { run: string; written: number[] }> => {
    const run = randomBytes(6).toString('hex');
    const count = Math.max(1, Math.round(options.webhookRate * options.webhookDuration));
    const cpuBefore = cpuMs(server.child.pid);
    const { written, errors } = await writeSteadily(
      { publishClient, publishPath: '/api/v1/events' },
      { eventsPerSecond: options.webhookRate },
      count,
      run,
      payload,
    );
    const collected = await collect(hooks, run, written, false);
    const cpuAfter = cpuMs(server.child.pid);
    return {
      run,
      written,
      eventsWritten: written.length,
      collected,
      deliveriesPerSecond: collected.spanMs > 0 ? collected.delivered / (collected.spanMs / 1000) : 0,
      writeErrors: errors,
      serverCpuUsPerEvent:
        cpuBefore !== undefined && cpuAfter !== undefined && written.length > 0 ? round(((cpuAfter - cpuBefore) * 1000) / written.length, 1) : null,
    };
  };
  const rate = `${options.webhookRate} events/s for ${options.webhookDuration} s`;
  try {
    const rows: Row[] = [];
    // One webhook, then replays of the same events to it: alternately to a receiver answering
    // nothing and one answering 1 KiB (whose start each attempt records), at the dispatcher's full
    // rate, so the recording's cost per delivery shows apart from the server's fixed work.
    const [single] = await createHooks(1);
    // The replays start after a marker written just before the row (no webhook takes custom.marker).
    const before = (await client.expect(201, 'POST', '/api/v1/events', { type: 'custom.marker', data: {} })) as { id: number };
    const one = await live([single!]);
    rows.push(liveRow('webhooks', `webhook deliveries: 1 webhook, ${rate} to a bare local receiver`, one, options.webhookRate));
    const replayTo = async (answerBytes: number) => {
      const path = `/replay-${randomBytes(4).toString('hex')}`;
      await client.expect(200, 'PATCH', `/api/v1/webhooks/${single!.id}`, {
        url: `${receiver.origin}${path}${answerBytes > 0 ? `?answer=${answerBytes}` : ''}`,
      });
      const cpuBefore = cpuMs(server.child.pid);
      const startedAt = Date.now();
      const replay = (await client.expect(202, 'POST', `/api/v1/webhooks/${single!.id}/replay`, { after: before.id })) as { queued: number; skipped: number };
      const collected = await collect([{ ...single!, path }], one.run, one.written, true, startedAt);
      const cpuAfter = cpuMs(server.child.pid);
      const cpuUsPerDelivery =
        cpuBefore !== undefined && cpuAfter !== undefined && collected.delivered > 0 ? ((cpuAfter - cpuBefore) * 1000) / collected.delivered : null;
      return { replay, collected, perSecond: collected.spanMs > 0 ? collected.delivered / (collected.spanMs / 1000) : 0, cpuUsPerDelivery };
    };
    const plain = [await replayTo(0)];
    const answered = [await replayTo(ANSWER_BYTES)];
    plain.push(await replayTo(0));
    answered.push(await replayTo(ANSWER_BYTES));
    await deleteHooks([single!]);
    const first = plain[0]!;
    rows.push({
      ...measuredRow(first.collected, one.written.length, 0),
      key: 'webhooks-replay',
      label: `webhook replay: the ${one.written.length} events of the row above again (POST …/replay), request to last receipt`,
      requestsPerSecond: round(first.perSecond, 0),
      ratio: one.deliveriesPerSecond > 0 ? round(first.perSecond / one.deliveriesPerSecond, 2) : null,
      ratioOf: 'the 1-webhook row',
      target: '≥ 1× the live row',
      met: first.perSecond >= one.deliveriesPerSecond && first.collected.lost === 0 && first.collected.duplicates === 0,
      detail: { ...first.replay, ...first.collected, serverCpuUsPerDelivery: first.cpuUsPerDelivery === null ? null : round(first.cpuUsPerDelivery, 1) },
    });
    const sum = (runs: typeof plain) => runs.reduce((total, run) => total + (run.cpuUsPerDelivery ?? Number.NaN), 0);
    const cpuRatio = sum(answered) / sum(plain);
    const last = answered.at(-1)!;
    rows.push({
      ...measuredRow(last.collected, one.written.length, 0),
      key: 'webhooks-excerpt',
      label: `webhook replay to a receiver answering ${ANSWER_BYTES} bytes (each attempt records them), against one answering nothing, twice each in turn`,
      requestsPerSecond: round(last.perSecond, 0),
      ratio: Number.isFinite(cpuRatio) ? round(cpuRatio, 2) : null,
      ratioOf: 'server CPU per delivery answered nothing',
      target: '≤ 1.1×',
      met: Number.isFinite(cpuRatio) && cpuRatio <= 1.1 && answered.every((run) => run.collected.lost === 0),
      detail: {
        serverCpuUsPerDeliveryAnswered: answered.map((run) => run.cpuUsPerDelivery && round(run.cpuUsPerDelivery, 1)),
        serverCpuUsPerDeliveryPlain: plain.map((run) => run.cpuUsPerDelivery && round(run.cpuUsPerDelivery, 1)),
        deliveriesPerSecondAnswered: answered.map((run) => round(run.perSecond, 0)),
        deliveriesPerSecondPlain: plain.map((run) => round(run.perSecond, 0)),
        ...last.collected,
      },
    });

    const twenty = await createHooks(20);
    const many = await live(twenty);
    rows.push(liveRow('webhooks-20', `webhook deliveries: 20 webhooks, ${rate} each to a bare local receiver`, many, options.webhookRate * 20));
    await deleteHooks(twenty);
    return rows;
  } finally {
    publishClient.close();
    await stop(receiver.child);
  }
}

function measuredRow(
  collected: WebhookCollectedReport,
  eventsWritten: number,
  writeErrors: number,
): Omit<Row, 'key' | 'label' | 'requestsPerSecond' | 'ratio' | 'ratioOf' | 'target' | 'met'> {
  return {
    kind: 'webhook',
    p50Ms: collected.latencyMs.p50,
    p99Ms: collected.latencyMs.p99,
    errors: collected.lost + collected.duplicates + collected.badSignatures + writeErrors,
    rssMb: null,
    detail: { eventsWritten, writeErrors, ...collected },
  };
}

function liveRow(key: string, label: string, measured: Measured, expectedPerSecond: number): Row {
  const { collected } = measured;
  return {
    ...measuredRow(collected, measured.eventsWritten, measured.writeErrors),
    key,
    label,
    requestsPerSecond: round(measured.deliveriesPerSecond, 0),
    ratio: round(measured.deliveriesPerSecond / expectedPerSecond, 2),
    ratioOf: 'publish rate × webhooks',
    target: `p99 < ${P99_GOAL_MS} ms, every delivery`,
    met: collected.latencyMs.p99 < P99_GOAL_MS && collected.lost === 0 && collected.duplicates === 0 && collected.badSignatures === 0,
    detail: {
      eventsWritten: measured.eventsWritten,
      writeErrors: measured.writeErrors,
      ...collected,
      // Publishing and delivering together: the server's CPU per event over the whole row.
      serverCpuUsPerEvent: measured.serverCpuUsPerEvent,
    },
  };
}
