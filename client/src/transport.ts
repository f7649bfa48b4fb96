// The fetch every call goes through: the credential, retries (429 after Retry-After; network
// failures of safe methods, with backoff) and one error type for whatever else goes wrong.
import { DevdataError, errorFromResponse } from './errors.js';

export interface RetryOptions {
  /** How often a 429 is retried after its Retry-After (default 2; 0 never retries). */
  rateLimited?: number;
  /** The longest Retry-After that is waited for; a longer one is thrown at once (default 60). */
  maxRetryAfterSeconds?: number;
  /** How often a network failure of a safe method (GET, HEAD, OPTIONS) is retried (default 2). */
  network?: number;
  /** The first backoff delay, doubled on each retry with ±25% jitter (default 500). */
  initialDelayMs?: number;
}

/** An API key (`ddk_…`) or an OAuth access token (`dda_…`), or a function that returns a fresh one. */
export type Credential = string | (() => string | Promise<string>);

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

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
  credential?: Credential | undefined;
  retry?: RetryOptions | undefined;
  fetch?: typeof fetch | undefined;
}

/** A fetch for openapi-fetch: adds the credential, retries, and throws a DevdataError for any non-2xx (304 aside). */
export function createTransport(options: TransportOptions): (request: Request) => Promise<Response> {
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  const retry = { rateLimited: 2, maxRetryAfterSeconds: 60, network: 2, initialDelayMs: 500, ...options.retry };
  return async (original) => {
    let request = original;
    const credential = await resolveCredential(options.credential);
    if (credential !== undefined && !request.headers.has('authorization')) {
      const headers = new Headers(request.headers);
      headers.set('authorization', `Bearer ${credential}`);
      request = new Request(request, { headers });
    }
    let rateLimitedRetries = 0;
    let networkRetries = 0;
    for (;;) {
      let response: Response;
      try {
        response = await fetchImpl(request.clone());
      } catch (error) {
        if (request.signal.aborted) throw abortedError(request.signal);
        if (SAFE_METHODS.has(request.method) && networkRetries < retry.network) {
          networkRetries++;
          await sleep(backoffDelay(networkRetries, retry.initialDelayMs), request.signal);
          continue;
        }
        throw connectionError(request.url, error);
      }
      if (response.status === 429 && rateLimitedRetries < retry.rateLimited) {
        const wait = retryAfterSeconds(response.headers) ?? 1;
        if (wait <= retry.maxRetryAfterSeconds) {
          rateLimitedRetries++;
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
