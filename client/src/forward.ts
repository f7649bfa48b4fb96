// One webhook delivery as the service sends it, made by the CLI's `listen`: POST, the same body
// and the same headers (and no others: node:http, not fetch, which adds its own), 10 s at most,
// no redirects followed. Both signatures are made as the server's signing.ts makes them: its
// X-Service-Signature, and Standard Webhooks' three headers keyed with the bytes of the secret's
// base64 after `whsec_` (Node's decoder, which reads the base64url of older secrets too).
import { createHmac, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { signWebhook } from './webhooks.js';

export const DELIVERY_TIMEOUT_MS = 10_000;

export interface ForwardResult {
  deliveryId: string;
  /** The receiver's status, or null when it could not be reached or timed out. */
  status: number | null;
  durationMs: number;
  error?: string;
}

/** The webhooks' filter rule: an exact type, or `custom.*` for every custom event. */
export function matchesEventFilters(filters: readonly string[], type: string): boolean {
  return filters.includes(type) || (type.startsWith('custom.') && filters.includes('custom.*'));
}

/** `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, exactly as the server's signing.ts makes it. */
function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(secret.indexOf('_') + 1), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export async function forwardDelivery(target: URL, body: string, options: { eventId: number; secret: string; userAgent: string }): Promise<ForwardResult> {
  const deliveryId = `dlv_${randomBytes(16).toString('base64url')}`;
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': options.userAgent,
    'x-service-signature': await signWebhook(body, options.secret, timestamp),
    'x-service-event-id': String(options.eventId),
    'x-service-delivery-id': deliveryId,
    'webhook-id': deliveryId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardSignature(options.secret, deliveryId, timestamp, body),
    'content-length': String(Buffer.byteLength(body)),
  };
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const request = send(target, { method: 'POST', headers, timeout: DELIVERY_TIMEOUT_MS }, (response) => {
      response.resume();
      response.once('end', () => resolve({ deliveryId, status: response.statusCode ?? null, durationMs: elapsed() }));
      response.once('error', (error) => resolve({ deliveryId, status: null, durationMs: elapsed(), error: error.message }));
    });
    request.once('timeout', () => request.destroy(new Error(`timed out after ${DELIVERY_TIMEOUT_MS / 1000} s`)));
    request.once('error', (error: NodeJS.ErrnoException) => resolve({ deliveryId, status: null, durationMs: elapsed(), error: error.code ?? error.message }));
    request.end(body);
  });
}
