// CORS (decisions §2): the API, token and revocation endpoints and the OAuth metadata may be called
// from any origin, never with cookies; the developer (cookie) routes and the approval page may not.
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

const EXPOSED_HEADERS = ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'ETag', 'WWW-Authenticate'];
const ALLOWED_HEADERS = ['Authorization', 'X-API-Key', 'Content-Type', 'If-Match', 'If-None-Match', 'Last-Event-ID', 'X-Request-Id'];

export function corsAllowed(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  if (path === '/api/v1/developer' || path.startsWith('/api/v1/developer/')) return false;
  return (
    path === '/api/v1' ||
    path.startsWith('/api/v1/') ||
    path === '/oauth/token' ||
    path === '/oauth/revoke' ||
    path === '/.well-known/oauth-authorization-server'
  );
}

export async function installCors(app: FastifyInstance): Promise<void> {
  await app.register(cors, {
    delegator: (request, callback) => {
      callback(
        null,
        corsAllowed(request.url ?? '')
          ? {
              origin: '*',
              credentials: false,
              methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
              exposedHeaders: EXPOSED_HEADERS,
              allowedHeaders: ALLOWED_HEADERS,
              maxAge: 600,
              // An OPTIONS without the preflight headers is answered 204 too, not with a plain-text 400.
              strictPreflight: false,
            }
          : { origin: false },
      );
    },
  });
}
