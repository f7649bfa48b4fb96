// Verifying a webhook delivery: `X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`,
// HMAC-SHA256 keyed with the whole `whsec_…` secret over "<t>.<raw body>". Web Crypto only, so it
// runs in Node 20+, browsers, Deno and edge runtimes alike. The Standard Webhooks headers every
// delivery carries as well are verified by ./standard-webhooks.ts.
import type { WebhookPayload } from './types.js';

export const SIGNATURE_HEADER = 'x-service-signature';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookVerificationErrorCode = 'missing_header' | 'invalid_header' | 'no_matching_signature' | 'timestamp_out_of_tolerance' | 'invalid_payload';

/** Why a delivery was refused: answer it with 400 and do not act on it. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    readonly code: WebhookVerificationErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface VerifyWebhookOptions {
  /** How old (or how far ahead) the signed timestamp may be, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The current time in ms (tests). */
  now?: number;
}

const encoder = new TextEncoder();

export function bytesOf(body: string | Uint8Array): Uint8Array {
  return typeof body === 'string' ? encoder.encode(body) : body;
}

/** `<prefix>` then the body's bytes: what a signature covers. */
export function signedBytes(prefix: string | number, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const head = encoder.encode(`${prefix}.`);
  const bytes = new Uint8Array(head.length + body.length);
  bytes.set(head, 0);
  bytes.set(body, head.length);
  return bytes;
}

function hmacKey(secret: string, usage: 'sign' | 'verify'): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [usage]);
}

function hexToBytes(hex: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return undefined;
  const bytes = new Uint8Array(32);
  for (let index = 0; index < 32; index++) bytes[index] = parseInt(hex.slice(index * 2, index * 2 + 2), 16);
  return bytes;
}

/** The `X-Service-Signature` value for a body, as the service computes it. */
export async function signWebhook(rawBody: string | Uint8Array, secret: string, timestampSeconds = Math.floor(Date.now() / 1000)): Promise<string> {
  const signature = new Uint8Array(await crypto.subtle.sign('HMAC', await hmacKey(secret, 'sign'), signedBytes(timestampSeconds, bytesOf(rawBody))));
  return `t=${timestampSeconds},v1=${Array.from(signature, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/** Refuses a signed timestamp further than the tolerance from now. */
export function checkTimestamp(timestamp: number, options: VerifyWebhookOptions): void {
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const age = Math.floor((options.now ?? Date.now()) / 1000) - timestamp;
  if (Math.abs(age) > tolerance) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `The signature is ${age} s old; at most ${tolerance} s is accepted`);
  }
}

/** The body's JSON: an event of the log, or a test delivery's `webhook.test`. */
export function payloadOf(body: Uint8Array): WebhookPayload {
  try {
    return JSON.parse(new TextDecoder().decode(body)) as WebhookPayload;
  } catch {
    throw new WebhookVerificationError('invalid_payload', 'The body is not JSON');
  }
}

/**
 * Checks a delivery and returns its event (or a test delivery's `webhook.test`, id 0). `rawBody` must be the body exactly as received (before
 * any JSON parsing); `signatureHeader` is `X-Service-Signature`. Any `v1` signature may match, so a
 * receiver keeps working while a secret is rotated. The comparison is Web Crypto's HMAC verify
 * (constant time). Throws a WebhookVerificationError when the delivery must not be trusted.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  signatureHeader: string | null | undefined,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookPayload> {
  if (!signatureHeader) throw new WebhookVerificationError('missing_header', 'The X-Service-Signature header is missing');
  let timestamp: number | undefined;
  const signatures: Array<Uint8Array<ArrayBuffer>> = [];
  for (const part of signatureHeader.split(',')) {
    const separator = part.indexOf('=');
    const key = part.slice(0, separator).trim();
    const value = part.slice(separator + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1') {
      const bytes = hexToBytes(value);
      if (bytes) signatures.push(bytes);
    }
  }
  if (timestamp === undefined) throw new WebhookVerificationError('invalid_header', 'The X-Service-Signature header has no timestamp (t=…)');
  if (signatures.length === 0) throw new WebhookVerificationError('invalid_header', 'The X-Service-Signature header has no v1 signature');

  const body = bytesOf(rawBody);
  return checkedPayload(await hmacKey(secret, 'verify'), signatures, signedBytes(timestamp, body), timestamp, body, options);
}

/** The payload once one of `signatures` matches `signed` under `key` and the timestamp is recent; throws otherwise. */
export async function checkedPayload(
  key: CryptoKey,
  signatures: readonly Uint8Array<ArrayBuffer>[],
  signed: Uint8Array<ArrayBuffer>,
  timestamp: number,
  body: Uint8Array,
  options: VerifyWebhookOptions,
): Promise<WebhookPayload> {
  let matched = false;
  // Every signature is checked, matching or not, so the time taken says nothing about which.
  for (const signature of signatures) {
    if (await crypto.subtle.verify('HMAC', key, signature, signed)) matched = true;
  }
  if (!matched) throw new WebhookVerificationError('no_matching_signature', 'No signature matches the body and the secret');
  checkTimestamp(timestamp, options);
  return payloadOf(body);
}
