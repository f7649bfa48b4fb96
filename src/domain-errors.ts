// What services raise when a request cannot be done: a code from a closed set, a message, and the
// facts a client needs. Nothing here is HTTP: platform/errors.ts maps each code to its status and
// headers, in one table.

/** The API's error codes (docs/decisions.md, "Errors"). */
export const ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'insufficient_scope',
  'signup_closed',
  'not_found',
  'method_not_allowed',
  'conflict',
  'idempotency_key_in_use',
  'cursor_expired',
  'precondition_failed',
  'payload_too_large',
  'unsupported_media_type',
  'range_not_satisfiable',
  'idempotency_key_reused',
  'rate_limited',
  'internal_error',
  'unavailable',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetail {
  path: string;
  message: string;
  [key: string]: unknown;
}

/** Facts that travel with an error, which the HTTP layer turns into headers. */
export interface ErrorFacts {
  /** unauthorized: whether a credential was presented (and refused). */
  credentialSent?: boolean;
  /** insufficient_scope: the scopes the operation needs. */
  scopes?: readonly string[];
  /** rate_limited, idempotency_key_in_use: when to try again. */
  retryAfterSeconds?: number;
}

export class DomainError extends Error {
  override name = 'DomainError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly facts: ErrorFacts = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details?: ErrorDetail[]) => new DomainError('invalid_request', message, details);

/** An invalid_request that points at one field, in the same shape as schema validation failures. */
export const invalidField = (path: string, message: string) => new DomainError('invalid_request', `${path.slice(1)} ${message}`, [{ path, message }]);

export const notFound = (what: string) => new DomainError('not_found', `${what} not found`);

export const conflict = (message: string) => new DomainError('conflict', message);

export const insufficientScope = (scopes: readonly string[]) =>
  new DomainError('insufficient_scope', `This credential lacks the required scope: ${scopes.join(' ')}`, undefined, { scopes });

export const unauthorized = (message: string, credentialSent: boolean) => new DomainError('unauthorized', message, undefined, { credentialSent });

export const rateLimited = (message: string, retryAfterSeconds: number) => new DomainError('rate_limited', message, undefined, { retryAfterSeconds });
