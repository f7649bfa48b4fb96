// The common error body (decisions §2) and the error type every layer throws.

export interface ErrorDetail {
  path: string;
  message: string;
  [key: string]: unknown;
}

const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'not_found',
  409: 'conflict',
  410: 'cursor_expired',
  412: 'precondition_failed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  500: 'internal_error',
  503: 'unavailable',
};

export function codeForStatus(status: number): string {
  return CODE_BY_STATUS[status] ?? (status >= 500 ? 'internal_error' : 'invalid_request');
}

/** A failure the client can act on: carries its HTTP status, error code, and optional headers. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details?: ErrorDetail[]) =>
  new ApiError(400, 'invalid_request', message, details);

/** A 400 that points at one field, in the same shape as schema validation failures. */
export const invalidField = (path: string, message: string) =>
  new ApiError(400, 'invalid_request', `${path.slice(1)} ${message}`, [{ path, message }]);

export const notFound = (what: string) => new ApiError(404, 'not_found', `${what} not found`);

export const conflict = (message: string) => new ApiError(409, 'conflict', message);

export function insufficientScope(scopes: readonly string[]): ApiError {
  const needed = scopes.join(' ');
  return new ApiError(403, 'insufficient_scope', `This credential lacks the required scope: ${needed}`, undefined, {
    'www-authenticate': `Bearer realm="devdata", error="insufficient_scope", scope="${needed}"`,
  });
}

export function unauthorized(message: string, credentialSent: boolean): ApiError {
  const challenge = credentialSent ? 'Bearer realm="devdata", error="invalid_token"' : 'Bearer realm="devdata"';
  return new ApiError(401, 'unauthorized', message, undefined, { 'www-authenticate': challenge });
}
