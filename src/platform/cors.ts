// CORS (docs/decisions.md, "HTTP contract"): the API, token and revocation endpoints, the OAuth
// metadata and the OpenAPI document may be called from any origin, never with cookies; the
// developer (cookie) routes and the approval page may not. Decided on the route a request reaches,
// not on how its path is spelt.
// The headers are fixed strings, set by the one request hook (access.ts): no per-request options.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const EXPOSED_HEADERS = [
  'X-Request-Id',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'ETag',
  'WWW-Authenticate',
  'Idempotent-Replayed',
];
const ALLOWED_HEADERS = ['Authorization', 'X-API-Key', 'Content-Type', 'If-Match', 'If-None-Match', 'Last-Event-ID', 'X-Request-Id', 'Idempotency-Key'];
const ALLOWED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const EXPOSED = EXPOSED_HEADERS.join(', ');
const PREFLIGHT_HEADERS = {
  'access-control-allow-methods': ALLOWED_METHODS.join(', '),
  'access-control-allow-headers': ALLOWED_HEADERS.join(', '),
  'access-control-max-age': '600',
};

declare module 'fastify' {
  interface FastifyRequest {
    /** Whether CORS applies to this request's path. */
    corsAllowed: boolean;
  }
}

/** Whether CORS applies to a path: a route's pattern, or a decoded path (routedPath). */
export function corsAllowed(path: string): boolean {
  if (path === '/api/v1/developer' || path.startsWith('/api/v1/developer/')) return false;
  return (
    path === '/api/v1' ||
    path.startsWith('/api/v1/') ||
    path === '/oauth/token' ||
    path === '/oauth/revoke' ||
    path === '/.well-known/oauth-authorization-server' ||
    // Documentation tools (Swagger UI, Redoc) load the document from their own origin.
    path === '/openapi.json'
  );
}

/**
 * The path CORS is decided on: the matched route's pattern, since the router decodes the path
 * (`/api/v1/%64eveloper/session` is the developer route). Unknown paths and OPTIONS requests (all
 * routed by the wildcard below) have no pattern of their own: their path, fully percent-decoded
 * so no spelling hides a developer path; undefined when it does not decode.
 */
function routedPath(request: FastifyRequest): string | undefined {
  const pattern = request.routeOptions.url;
  if (!request.is404 && pattern !== undefined && pattern !== '*') return pattern;
  // The router's own split: the path ends at the query or a fragment.
  const end = request.url.search(/[?#]/);
  try {
    return decodeURIComponent(end === -1 ? request.url : request.url.slice(0, end));
  } catch {
    return undefined;
  }
}

/** The CORS headers of every response; the answer to a preflight comes later (answerPreflight). */
export function addCorsHeaders(request: FastifyRequest, reply: FastifyReply): void {
  // Whether a response allows an origin depends on the request's path, so caches key on Origin.
  reply.header('vary', 'Origin');
  const path = routedPath(request);
  request.corsAllowed = path !== undefined && corsAllowed(path);
  if (!request.corsAllowed) return;
  reply.header('access-control-allow-origin', '*');
  reply.header('access-control-expose-headers', EXPOSED);
}

/**
 * Answers an OPTIONS request where CORS applies (a preflight, or any OPTIONS: a bare one gets the
 * same 204 rather than an error); true when it did. Runs before authorization: browsers send no
 * credential with a preflight.
 */
export function answerPreflight(request: FastifyRequest, reply: FastifyReply): boolean {
  if (request.method !== 'OPTIONS' || !request.corsAllowed) return false;
  reply.headers(PREFLIGHT_HEADERS);
  // Safari needs the length of a 204, or it waits for a body.
  reply.code(204).header('content-length', '0').send();
  return true;
}

/** Routes OPTIONS requests; those CORS does not apply to are not found, as any unknown method is. */
export function installCorsRoutes(app: FastifyInstance): void {
  app.decorateRequest('corsAllowed', false);
  // Public: a 404 needs no credential, and a preflight carries none.
  app.options('*', { schema: { hide: true }, config: { auth: 'public' } }, (_request, reply) => {
    reply.callNotFound();
  });
}
