// The fetch every call goes through: the credential, retries and one error type for whatever else
// goes wrong. Every POST, PATCH and DELETE of the API carries an Idempotency-Key (a fresh one per
// call unless the caller gives one), so that a write, like a safe method, can be retried after a
// network failure: the server runs it once and answers a repeat with the stored response. Retried:
// a 429 after its Retry-After; a network failure with backoff; a keyed write's 409
// idempotency_key_in_use (its first attempt still runs) after its Retry-After, with the same key.
import { DevdataError, errorFromResponse } from './errors.js';

export interface RetryOptions {
  /** How often a 429 is retried after its Retry-After (default 2; 0 never retries). */
  rateLimited?: number;
  /** The longest Retry-After that is waited for; a longer one is thrown at once (default 60). */
  maxRetryAfterSeconds?: number;
  /** How often a network failure is retried (default 2): any call of the API, writes with their Idempotency-Key. */
  network?: number;
  /** How often a write is sent again after a 409 idempotency_key_in_use, after its Retry-After (default 5). */
  keyInUse?: number;
  /** The first backoff delay, doubled on each retry with ±25% jitter (default 500). */
  initialDelayMs?: number;
}

/** An API key (`ddk_…`) or an OAuth access token (`dda_…`), or a function that returns a fresh one. */
export type Credential = string | (() => string | Promise<string>);

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const WRITE_METHODS = new Set(['POST', 'PATCH', 'DELETE']);
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/**
 * A fresh Idempotency-Key: a random UUID. crypto.randomUUID exists only in secure contexts (https,
 * localhost); a console opened over plain http on a LAN address has getRandomValues alone.
 */
export function newIdempotencyKey(): string {
  if (typeof globalThis.crypto.randomUUID === 'function') return globalThis.crypto.randomUUID();
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function resolveCredential(credential: Credential | undefined): Promise<string | undefined> | string | undefined {
  return typeof credential === 'function' ? credential() : credential;
}

/** Resolves after `ms`, or rejects with the signal's reason when it fires first. */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortedError(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(signal as AbortSignal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortedError(signal: AbortSignal): DevdataError {
  return new DevdataError({ status: 0, code: 'aborted', message: 'The call was aborted', cause: signal.reason });
}

/** The nth backoff delay (n from 1): initial · 2^(n-1), ±25%, at most `maxMs`. */
export function backoffDelay(attempt: number, initialMs: number, maxMs = 30_000): number {
  const base = Math.min(maxMs, initialMs * 2 ** (attempt - 1));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

/** Seconds from a Retry-After header (delta-seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(headers: Headers): number | undefined {
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

export function connectionError(url: string, error: unknown): DevdataError {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const reason = cause?.code ?? cause?.message ?? (error as Error).message;
  return new DevdataError({ status: 0, code: 'connection_error', message: `Could not reach ${new URL(url).origin}: ${reason}`, cause: error });
}

export interface TransportOptions {
  /** The API's root (`https://host/api/v1/`): writes below it get an Idempotency-Key (the OAuth endpoints take none). */
  apiRoot: string;
  credential?: Credential | undefined;
  retry?: RetryOptions | undefined;
  fetch?: typeof fetch | undefined;
}

/**
 * The attempt, or the abort of the call, whichever comes first. Node's fetch loses a cloned
 * request's abort after a garbage collection (undici issue 4068): the attempt is given the signal
 * itself, and the call does not wait for the attempt to notice.
 */
function untilAborted<T>(attempt: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(abortedError(signal));
    const onAbort = () => reject(abortedError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    attempt.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Whether a 409 is the server saying that the first request with this key still runs. */
async function isKeyInUse(response: Response): Promise<boolean> {
  if (response.status !== 409) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as { error?: { code?: unknown } } | undefined;
  return body?.error?.code === 'idempotency_key_in_use';
}

/** The request with the credential, and an Idempotency-Key when it is a write of the API without one. */
async function prepared(original: Request, options: TransportOptions): Promise<{ request: Request; keyed: boolean }> {
  const credential = await resolveCredential(options.credential);
  const keyed = WRITE_METHODS.has(original.method) && original.url.startsWith(options.apiRoot);
  const addCredential = credential !== undefined && !original.headers.has('authorization');
  const addKey = keyed && !original.headers.has(IDEMPOTENCY_KEY_HEADER);
  if (!addCredential && !addKey) return { request: original, keyed };
  const headers = new Headers(original.headers);
  if (addCredential) headers.set('authorization', `Bearer ${credential}`);
  if (addKey) headers.set(IDEMPOTENCY_KEY_HEADER, newIdempotencyKey());
  return { request: new Request(original, { headers }), keyed };
}

/** A fetch for openapi-fetch: adds the credential and Idempotency-Key, retries, and throws a DevdataError for any non-2xx (304 aside). */
export function createTransport(options: TransportOptions): (request: Request) => Promise<Response> {
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  const retry = { rateLimited: 2, maxRetryAfterSeconds: 60, network: 2, keyInUse: 5, initialDelayMs: 500, ...options.retry };
  return async (original) => {
    // Every attempt sends the same request, so a write's retries carry the same key.
    const { request, keyed } = await prepared(original, options);
    const retries = { network: 0, rateLimited: 0, keyInUse: 0 };
    for (;;) {
      let response: Response;
      try {
        response = await untilAborted(fetchImpl(request.clone(), { signal: request.signal }), request.signal);
      } catch (error) {
        if (request.signal.aborted) throw abortedError(request.signal);
        if ((keyed || SAFE_METHODS.has(request.method)) && retries.network < retry.network) {
          retries.network++;
          await sleep(backoffDelay(retries.network, retry.initialDelayMs), request.signal);
          continue;
        }
        throw connectionError(request.url, error);
      }
      const reason = response.status === 429 ? 'rateLimited' : keyed && (await isKeyInUse(response)) ? 'keyInUse' : undefined;
      if (reason !== undefined && retries[reason] < retry[reason]) {
        const wait = retryAfterSeconds(response.headers) ?? 1;
        if (wait <= retry.maxRetryAfterSeconds) {
          retries[reason]++;
          await response.body?.cancel();
          await sleep(wait * 1000, request.signal);
          continue;
        }
      }
      if (!response.ok && response.status !== 304) throw await errorFromResponse(response);
      return response;
    }
  };
}
