import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._~:@+=/-]{1,128}$/;

// A random prefix per process and a counter: unique across restarts and processes without asking
// for random bytes on every request (a UUID per request showed in a GET's profile: bench/HISTORY.md,
// "What changed").
const PROCESS_PREFIX = `req_${randomBytes(10).toString('hex')}`;
let counter = 0;

/** Keeps a caller's `X-Request-Id` of 1-128 safe characters, so logs on both sides line up; else a new one. */
export function requestIdFor(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id'];
  if (typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming)) return incoming;
  return newRequestId();
}

export function newRequestId(): string {
  counter = (counter + 1) % 0x1000000000000;
  return PROCESS_PREFIX + counter.toString(16).padStart(12, '0');
}
