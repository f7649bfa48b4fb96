// The webhook rows: webhooks to a bare local receiver (bench/webhook-receiver.ts) while events are
// published at a steady rate: one webhook, twenty, one whose receiver answers 1 KiB (what recording
// the answer's start costs), and a replay of the first row's events (issue #41).
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
    // One webhook, then a replay of the same events to it.
    const [single] = await createHooks(1);
    // The replay starts after a marker written just before the row (no webhook takes custom.marker).
    const before = (await client.expect(201, 'POST', '/api/v1/events', { type: 'custom.marker', data: {} })) as { id: number };
    const one = await live([single!]);
    rows.push(liveRow('webhooks', `webhook deliveries: 1 webhook, ${rate} to a bare local receiver`, one, options.webhookRate));
    const cpuBefore = cpuMs(server.child.pid);
    const startedAt = Date.now();
    const replay = (await client.expect(202, 'POST', `/api/v1/webhooks/${single!.id}/replay`, { after: before.id })) as { queued: number; skipped: number };
    const replayed = await collect([single!], one.run, one.written, true, startedAt);
    const cpuAfter = cpuMs(server.child.pid);
    const replayPerSecond = replayed.spanMs > 0 ? replayed.delivered / (replayed.spanMs / 1000) : 0;
    rows.push({
      ...measuredRow(replayed, one.written.length, 0),
      key: 'webhooks-replay',
      label: `webhook replay: the ${one.written.length} events of the row above again (POST …/replay), request to last receipt`,
      requestsPerSecond: round(replayPerSecond, 0),
      ratio: one.deliveriesPerSecond > 0 ? round(replayPerSecond / one.deliveriesPerSecond, 2) : null,
      ratioOf: 'the 1-webhook row',
      target: '≥ 1× the live row',
      met: replayPerSecond >= one.deliveriesPerSecond && replayed.lost === 0,
      detail: {
        queued: replay.queued,
        skipped: replay.skipped,
        ...replayed,
        serverCpuUsPerDelivery:
          cpuBefore !== undefined && cpuAfter !== undefined && replayed.delivered > 0 ? round(((cpuAfter - cpuBefore) * 1000) / replayed.delivered, 1) : null,
      },
    });
    await deleteHooks([single!]);

    // A receiver answering 1 KiB, whose start every attempt records: its cost against the first row.
    const answering = await createHooks(1, ANSWER_BYTES);
    const excerpt = await live(answering);
    const cpuRatio = one.serverCpuUsPerEvent && excerpt.serverCpuUsPerEvent ? excerpt.serverCpuUsPerEvent / one.serverCpuUsPerEvent : null;
    rows.push({
      ...liveRow(
        'webhooks-excerpt',
        `webhook deliveries: 1 webhook, ${rate}, the receiver answering ${ANSWER_BYTES} bytes (each attempt records them)`,
        excerpt,
        options.webhookRate,
      ),
      ratio: cpuRatio === null ? null : round(cpuRatio, 2),
      ratioOf: 'server CPU per event of the 1-webhook row',
      target: '≤ 1.1× its CPU, p99 < 100 ms',
      met: cpuRatio !== null && cpuRatio <= 1.1 && excerpt.collected.latencyMs.p99 < P99_GOAL_MS && excerpt.collected.lost === 0,
    });
    await deleteHooks(answering);

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
