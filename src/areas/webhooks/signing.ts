// A delivery as the receiver sees it: its headers and the signatures over its body, which receivers
// verify (docs/webhook-verification.md) and the client's listen command reproduces. Two schemes
// sign every delivery: this service's `X-Service-Signature`, and Standard Webhooks' three headers
// (api-decisions §14), so its maintained verifiers work unchanged.
import { createHmac, randomBytes } from 'node:crypto';
import { API_VERSION } from '../../platform/api-version.js';

/** The header a delivery's signature travels in. */
export const SIGNATURE_HEADER = 'X-Service-Signature';
/** Standard Webhooks' headers, beside it. */
export const STANDARD_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/** A new signing secret in the Standard Webhooks form: `whsec_` + standard base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`, keyed with the whole secret. */
export function signature(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/**
 * Standard Webhooks' `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with
 * the bytes the secret's base64 after `whsec_` encodes (Node's decoder reads standard base64 and
 * the base64url of secrets made before 2026-11-28 alike).
 */
export function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(secret.indexOf('_') + 1), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export interface SignedDelivery {
  id: string;
  /** 0 for a test delivery. */
  eventId: number;
  payload: string;
  gap: string | null;
  /** Sent again by a replay or a recover. */
  replay: boolean;
}

/** The headers of one attempt of a delivery, signed at `timestamp` (unix seconds), by lower-case name. */
export function deliveryHeaders(secret: string, timestamp: number, delivery: SignedDelivery): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': `devdata-webhooks/${API_VERSION}`,
    'x-service-signature': signature(secret, timestamp, delivery.payload),
    'x-service-event-id': String(delivery.eventId),
    'x-service-delivery-id': delivery.id,
    'webhook-id': delivery.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardSignature(secret, delivery.id, timestamp, delivery.payload),
  };
  if (delivery.gap) headers['x-service-event-gap'] = delivery.gap;
  if (delivery.replay) headers['x-service-replay'] = 'true';
  return headers;
}
