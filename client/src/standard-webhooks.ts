// Verifying a delivery by its Standard Webhooks headers (standardwebhooks.com, api-decisions §14):
// `webhook-id` (the delivery id), `webhook-timestamp` (unix seconds) and `webhook-signature:
// v1,<base64>[ v1,<base64>…]`, HMAC-SHA256 over "<id>.<timestamp>.<raw body>" keyed with the bytes
// the secret's base64 after `whsec_` encodes. What the standardwebhooks and svix libraries check,
// with Web Crypto only, like verifyWebhook beside it.
import type { WebhookPayload } from './types.js';
import { bytesOf, checkedPayload, signedBytes, type VerifyWebhookOptions, WebhookVerificationError } from './webhooks.js';

/** The three headers, by their lower-case names. */
export const STANDARD_WEBHOOK_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/** A request's headers: a fetch `Headers`, or an object such as Node's `request.headers` (any case of names). */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | null | undefined>>;

const SECRET_PREFIX = 'whsec_';

/** Standard base64, or the base64url of secrets made before the Standard Webhooks form; undefined when neither. */
function base64Bytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  const standard = text
    .replace(/-/g, '+')
    .replace(/_/g, '/')
    .replace(/={1,2}$/, '');
  if (!/^[A-Za-z0-9+/]*$/.test(standard) || standard.length % 4 === 1) return undefined;
  const binary = atob(standard.padEnd(Math.ceil(standard.length / 4) * 4, '='));
  return Uint8Array.from(binary, (character) => character.charCodeAt(0));
}

/**
 * The HMAC key of a `whsec_…` secret: the bytes its base64 encodes. Throws a TypeError for a secret
 * that is not base64 (a mistake in the receiver's configuration, not in the delivery).
 */
function standardKey(secret: string, usage: 'sign' | 'verify'): Promise<CryptoKey> {
  const bytes = base64Bytes(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
  if (!bytes || bytes.length === 0) throw new TypeError('The secret is not a Standard Webhooks secret: whsec_ followed by base64');
  return crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, [usage]);
}

function headerValue(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Readonly<Record<string, string | readonly string[] | null | undefined>>;
  const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return (typeof value === 'string' ? value : value?.join(' ')) || undefined;
}

/** The `webhook-signature` value of a delivery, as the service computes it: `v1,<base64>`. */
export async function signStandardWebhook(
  rawBody: string | Uint8Array,
  secret: string,
  webhookId: string,
  timestampSeconds = Math.floor(Date.now() / 1000),
): Promise<string> {
  const key = await standardKey(secret, 'sign');
  const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, signedBytes(`${webhookId}.${timestampSeconds}`, bytesOf(rawBody))));
  return `v1,${btoa(String.fromCharCode(...signature))}`;
}

/**
 * Checks a delivery by its Standard Webhooks headers and returns its event (or a test delivery's
 * `webhook.test`). `rawBody` must be the body exactly as received; `headers` the request's (only
 * the three are read). Any `v1` signature of the space-separated list may match, so a receiver
 * keeps working while a secret is rotated; the comparison is Web Crypto's HMAC verify (constant
 * time). The timestamp may be `toleranceSeconds` (300) away. `webhook-id` is the delivery id, the
 * same on every retry: remember the ones handled to ignore a repeat. Throws a
 * WebhookVerificationError when the delivery must not be trusted.
 */
export async function verifyStandardWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookPayload> {
  const [id, timestampText, signatureHeader] = STANDARD_WEBHOOK_HEADERS.map((name) => headerValue(headers, name));
  const missing = STANDARD_WEBHOOK_HEADERS.filter((_name, index) => [id, timestampText, signatureHeader][index] === undefined);
  if (missing.length > 0)
    throw new WebhookVerificationError('missing_header', `The ${missing.join(', ')} header${missing.length > 1 ? 's are' : ' is'} missing`);
  if (!/^\d{1,12}$/.test(timestampText!.trim())) throw new WebhookVerificationError('invalid_header', 'The webhook-timestamp header is not unix seconds');
  const timestamp = Number(timestampText!.trim());
  const signatures: Array<Uint8Array<ArrayBuffer>> = [];
  for (const entry of signatureHeader!.trim().split(/\s+/)) {
    const comma = entry.indexOf(',');
    if (entry.slice(0, comma) !== 'v1') continue;
    const bytes = base64Bytes(entry.slice(comma + 1));
    if (bytes?.length === 32) signatures.push(bytes);
  }
  if (signatures.length === 0) throw new WebhookVerificationError('invalid_header', 'The webhook-signature header has no v1 signature');

  const body = bytesOf(rawBody);
  return checkedPayload(await standardKey(secret, 'verify'), signatures, signedBytes(`${id}.${timestamp}`, body), timestamp, body, options);
}
