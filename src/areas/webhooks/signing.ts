// A delivery as the receiver sees it: its headers and the signature over its body, which receivers
// verify (docs/webhook-verification.md) and the client's listen command reproduces.
import { createHmac } from 'node:crypto';
import { API_VERSION } from '../../platform/api-version.js';

/** The header a delivery's signature travels in. */
export const SIGNATURE_HEADER = 'X-Service-Signature';

/** `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`, keyed with the whole secret. */
export function signature(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The headers of one attempt of a delivery, signed at `timestamp` (unix seconds). */
export function deliveryHeaders(
  secret: string,
  timestamp: number,
  delivery: { id: string; eventId: number; payload: string; gap: string | null },
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': `devdata-webhooks/${API_VERSION}`,
    [SIGNATURE_HEADER]: signature(secret, timestamp, delivery.payload),
    'x-service-event-id': String(delivery.eventId),
    'x-service-delivery-id': delivery.id,
  };
  if (delivery.gap) headers['x-service-event-gap'] = delivery.gap;
  return headers;
}
