// Errors in HTTP: the one table from error code to status, the headers an error's facts become,
// and the code for a status that Fastify itself refused. Services raise DomainErrors
// (src/domain-errors.ts) and never speak HTTP; the error body is written by sendError
// (platform/http-contract.ts).
import type { DomainError, ErrorCode } from '../domain-errors.js';

export { DomainError, type ErrorCode, type ErrorDetail } from '../domain-errors.js';

/** Each error code's HTTP status (the API decisions' list, with the project's own codes). */
export const STATUS_BY_CODE: Readonly<Record<ErrorCode, number>> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  insufficient_scope: 403,
  signup_closed: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_key_in_use: 409,
  cursor_expired: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
};

const CODE_BY_STATUS = new Map<number, ErrorCode>();
for (const [code, status] of Object.entries(STATUS_BY_CODE) as Array<[ErrorCode, number]>) if (!CODE_BY_STATUS.has(status)) CODE_BY_STATUS.set(status, code);

/** The code for an error status Fastify or Node.js produced without a DomainError (the table read backwards). */
export function codeForStatus(status: number): ErrorCode {
  return CODE_BY_STATUS.get(status) ?? (status >= 500 ? 'internal_error' : 'invalid_request');
}

/** The headers an error's facts become (RFC 6750 challenges, Retry-After). */
export function errorHeaders(error: DomainError): Record<string, string> | undefined {
  const { facts } = error;
  switch (error.code) {
    case 'unauthorized':
      return { 'www-authenticate': facts.credentialSent ? 'Bearer realm="devdata", error="invalid_token"' : 'Bearer realm="devdata"' };
    case 'insufficient_scope':
      return { 'www-authenticate': `Bearer realm="devdata", error="insufficient_scope", scope="${(facts.scopes ?? []).join(' ')}"` };
    case 'rate_limited':
    case 'idempotency_key_in_use':
      return facts.retryAfterSeconds === undefined ? undefined : { 'retry-after': String(facts.retryAfterSeconds) };
    default:
      return undefined;
  }
}
