// CORS (docs/decisions.md, "HTTP contract"): the API, token and revocation endpoints, the OAuth
// metadata and the OpenAPI document may be called from any origin, never with cookies; the
// developer (cookie) routes and the approval page may not.
// The headers are fixed strings, set by the one request hook (access.ts): no per-request options.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const EXPOSED_HEADERS = ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'ETag', 'WWW-Authenticate'];
const ALLOWED_HEADERS = ['Authorization', 'X-API-Key', 'Content-Type', 'If-Match', 'If-None-Match', 'Last-Event-ID', 'X-Request-Id'];
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

export function corsAllowed(url: string): boolean {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
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

/** The CORS headers of every response; the answer to a preflight comes later (answerPreflight). */
export function addCorsHeaders(request: FastifyRequest, reply: FastifyReply): void {
  // Whether a response allows an origin depends on the request's path, so caches key on Origin.
  reply.header('vary', 'Origin');
  request.corsAllowed = corsAllowed(request.url);
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
