// The webhook row: one webhook to a bare local receiver (bench/webhook-receiver.ts).
import { randomBytes } from 'node:crypto';
import { cpuMs, nextMessage, stop } from './children.js';
import { JsonClient } from './http-client.js';
import type { Options } from './options.js';
import { isMessage, type WebhookCollectedReport } from './protocol.js';
import { round, type Row } from './results.js';
import { forkListening, type Server } from './server.js';
import { writeSteadily } from './stream-rows.js';

/**
 * One webhook to a bare receiver child (bench/webhook-receiver.ts); events published at a steady
 * rate. Deliveries/s = distinct events received ÷ (last receipt − first publish); latency =
 * receipt − `data.sentAt`, both Date.now() on this machine, so it includes the write.
 */
export async function webhookRow(
  server: Server,
  client: JsonClient,
  auth: Record<string, string>,
  options: Options,
  payload: Record<string, unknown>,
): Promise<Row> {
  const receiver = await forkListening('webhook-receiver.js');
  const publishClient = new JsonClient(server.origin, auth, 64);
  try {
    const hook = (await client.expect(201, 'POST', '/api/v1/webhooks', {
      name: 'bench receiver',
      url: `${receiver.origin}/hook`,
      events: ['custom.bench'],
    })) as {
      id: string;
      secret: string;
    };
    const run = randomBytes(6).toString('hex');
    const count = Math.max(1, Math.round(options.webhookRate * options.webhookDuration));
    const cpuBefore = cpuMs(server.child.pid);
    const { written, errors: writeErrors } = await writeSteadily(
      { publishClient, publishPath: '/api/v1/events' },
      { eventsPerSecond: options.webhookRate },
      count,
      run,
      payload,
    );
    // A backlog may still be draining: wait as long again as the writing took, plus the drain time.
    const drainTimeoutMs = (options.webhookDuration + options.drainTimeout) * 1000;
    receiver.child.send({ type: 'webhook-collect', run, written, secret: hook.secret, drainTimeoutMs });
    const collected = await nextMessage(
      receiver.child,
      isMessage<WebhookCollectedReport>('webhook-collected'),
      drainTimeoutMs + 60_000,
      'collecting webhook deliveries',
    );
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
        serverCpuUsPerEvent:
          cpuBefore !== undefined && cpuAfter !== undefined && written.length > 0 ? round(((cpuAfter - cpuBefore) * 1000) / written.length, 1) : null,
      },
    };
  } finally {
    publishClient.close();
    await stop(receiver.child);
  }
}
