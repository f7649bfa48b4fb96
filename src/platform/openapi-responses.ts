// The responses the OpenAPI document declares for an operation (docs/decisions.md, "HTTP
// contract"): the error statuses its facts imply (access rule, method, path, headers) and the ones
// the route declares itself with errorResponse, each status described by the codes it carries. The
// route schemas keep `4xx`/`5xx` for the serializer; the document lists exact statuses only.
import type { RouteOptions } from 'fastify';
import { type Static, type TSchema, Type } from 'typebox';
import type { ErrorCode } from '../domain-errors.js';
import { STATUS_BY_CODE } from './errors.js';
import { takesIdempotencyKey } from './idempotency.js';
import type { ErrorSchema } from './schemas.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route answers its errors in bodies of its own (RFC 6749 JSON, HTML pages) and declares
     * each status itself; the document adds only the API's 429.
     */
    ownErrorBodies?: true;
    /**
     * The query string as the document states it, where a rule is the service's to check rather
     * than the validator's, so that its fault is answered the route's own way.
     */
    documentedQuerystring?: TSchema;
  }
}

/** What each code means, as a response's description says it unless the route words it itself. */
const MEANING: Readonly<Record<ErrorCode, string>> = {
  invalid_request: 'a parameter, header or body breaks its schema or a rule (`details` points at it), or the target holds a NUL',
  unauthorized: 'no credential was sent, or it is unknown, expired or revoked',
  forbidden: 'not allowed',
  insufficient_scope: 'the credential lacks a scope the operation needs',
  signup_closed: 'signup is closed: the service has reached its capacity',
  not_found: 'no such record in this account',
  method_not_allowed: 'the path does not take this method; `Allow` lists the methods it takes',
  conflict: 'the request conflicts with what is stored',
  idempotency_key_in_use: 'a request with this Idempotency-Key is still running; retry after Retry-After',
  idempotency_key_reused: 'this Idempotency-Key was used with another method, path or body',
  cursor_expired: 'the cursor is older than the retained events (`details[0].oldestCursor` is the oldest that works)',
  precondition_failed: 'If-Match names another version than the current one (`details[0].currentVersion`)',
  payload_too_large: 'the body is larger than the operation accepts',
  unsupported_media_type: 'a body of another type than application/json, or a body the operation needs sent without Content-Type',
  range_not_satisfiable: 'the range starts beyond the end of the file',
  rate_limited: 'the rate limit is reached; Retry-After says when to try again',
  internal_error: 'an unexpected failure on the server',
  unavailable: 'the service cannot answer now',
};

/** Codes whose answer carries an RFC 6750 challenge (platform/errors.ts, errorHeaders). */
const CHALLENGED = new Set<ErrorCode>(['unauthorized', 'insufficient_scope']);

/** Methods whose body Fastify reads, so that it can be too large or of another type. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

type Entry = readonly [ErrorCode, string];

/** The codes an error response carries, under a symbol: JSON Schema tools do not see it, and copies (withHeaders) keep it. */
const CODES = Symbol('error codes');

const entriesOf = (schema: object): readonly Entry[] | undefined => (schema as { [CODES]?: readonly Entry[] })[CODES];

function errorBody(entries: readonly Entry[]) {
  return Object.assign(
    Type.Unsafe<Static<typeof ErrorSchema>>({
      $ref: 'Error#',
      description: entries.map(([code, meaning]) => `\`${code}\`: ${meaning}`).join('; '),
      ...(entries.some(([code]) => CHALLENGED.has(code)) && { headers: { 'WWW-Authenticate': { type: 'string' } } }),
    }),
    { [CODES]: entries },
  );
}

/**
 * An error response a route can answer beyond those its facts imply, declared under its code's
 * status: `409: errorResponse('conflict', 'the account has 50 apps')`.
 */
export function errorResponse(code: ErrorCode, meaning: string = MEANING[code]) {
  return errorBody([[code, meaning]]);
}

/** The error codes a route can answer by what it is, whatever its handler does. */
export function impliedCodes(route: Pick<RouteOptions, 'method' | 'url' | 'config' | 'schema'>): ErrorCode[] {
  const access = route.config?.auth;
  if (route.config?.ownErrorBodies) return ['rate_limited'];
  const credentialed = access !== 'public' && access !== 'unmetered';
  const headers = (route.schema?.headers as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const codes: Array<ErrorCode | false> = [
    // Every route validates its request and refuses a NUL in its target (http-contract.ts).
    'invalid_request',
    credentialed && 'unauthorized',
    typeof access === 'object' && access.scopes.length > 0 && 'insufficient_scope',
    route.url.includes(':') && 'not_found',
    'if-match' in headers && 'precondition_failed',
    methods.some((method) => BODY_METHODS.has(method)) && 'payload_too_large',
    methods.some((method) => BODY_METHODS.has(method)) && 'unsupported_media_type',
    access !== 'unmetered' && 'rate_limited',
    ...(methods.some((method) => takesIdempotencyKey(method, route.url)) ? (['idempotency_key_in_use', 'idempotency_key_reused'] as const) : []),
    'internal_error',
  ];
  return codes.filter((code): code is ErrorCode => code !== false);
}

/** Refuses an errorResponse declared under another status than its code's. */
export function checkDeclaredErrors(route: Pick<RouteOptions, 'method' | 'url' | 'schema'>): void {
  for (const [status, schema] of Object.entries((route.schema?.response ?? {}) as Record<string, object>)) {
    for (const [code] of entriesOf(schema) ?? []) {
      if (String(STATUS_BY_CODE[code]) !== status) throw new Error(`${String(route.method)} ${route.url}: ${code} declared under ${status}`);
    }
  }
}

/**
 * The route's responses as the document states them: its own exact statuses, and each implied
 * error status it does not answer its own way, with the codes of both. Ranges (`4xx`) are left
 * out: they are the serializer's fallbacks, not statuses.
 */
export function documentedResponses(route: Pick<RouteOptions, 'method' | 'url' | 'config' | 'schema'>): Record<string, object> {
  const responses: Record<string, object> = {};
  for (const [status, schema] of Object.entries((route.schema?.response ?? {}) as Record<string, object>)) {
    if (/^\d{3}$/.test(status)) responses[status] = schema;
  }
  const implied = new Map<string, Entry[]>();
  for (const code of impliedCodes(route)) {
    const status = String(STATUS_BY_CODE[code]);
    implied.set(status, [...(implied.get(status) ?? []), [code, MEANING[code]]]);
  }
  for (const [status, entries] of implied) {
    const declared = responses[status];
    const declaredEntries = declared === undefined ? [] : entriesOf(declared);
    // A status the route answers its own way (a page, an OAuth error) stays as it declared it.
    if (declaredEntries === undefined) continue;
    const codes = new Set(declaredEntries.map(([code]) => code));
    responses[status] = errorBody([...entries.filter(([code]) => !codes.has(code)), ...declaredEntries]);
  }
  return responses;
}
