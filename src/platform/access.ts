// Who is calling and may they: resolves the credential, applies the rate limit, then enforces the
// route's access rule, all before the body is read (so an anonymous caller learns nothing from
// validation errors). Routes declare `config.auth`; a route that declares nothing needs a credential.
// CORS preflights (OPTIONS) are answered between the two hooks, and need no credential.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { hasScopes, type Credential, type CredentialResolver } from './credential.js';
import { ApiError, insufficientScope, unauthorized } from './errors.js';
import { rateLimitHeaders, type RateLimiter } from './rate-limit.js';
import type { Scope } from './scopes.js';

/** `public`: no credential; `unmetered`: public and never counted (liveness); else the scopes needed. */
export type RouteAccess = 'public' | 'unmetered' | { scopes: Scope[] };

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAccess;
  }
  interface FastifyRequest {
    credential: Credential | undefined;
    /** Whether the request presented any credential (valid or not), for the 401 challenge. */
    credentialSent: boolean;
  }
}

interface Presented {
  secret: string | undefined;
  sent: boolean;
}

function presentedSecret(request: FastifyRequest): Presented {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer +(\S+) *$/i.exec(authorization);
    return { secret: match?.[1], sent: true };
  }
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string') return { secret: apiKey.trim(), sent: true };
  return { secret: undefined, sent: false };
}

export function routeAccess(request: FastifyRequest): RouteAccess {
  if (request.is404) return 'public';
  return request.routeOptions.config.auth ?? { scopes: [] };
}

/** The authenticated credential of a route that requires one. */
export function credentialOf(request: FastifyRequest): Credential {
  if (!request.credential) throw unauthorized('A credential is required', false);
  return request.credential;
}

/**
 * Identifies the caller and applies the rate limit. Registered before CORS, so preflights carry
 * the RateLimit headers too (they see the allowance but never spend it).
 */
export function installRateLimitedIdentity(
  app: FastifyInstance,
  options: { config: Config; resolvers: CredentialResolver[]; limiter: RateLimiter },
): void {
  const { config, resolvers, limiter } = options;

  async function resolve(secret: string): Promise<Credential | undefined> {
    const resolver = resolvers.find((candidate) => secret.startsWith(candidate.prefix));
    return resolver?.resolve(secret);
  }

  app.decorateRequest('credential', undefined);
  app.decorateRequest('credentialSent', false);
  app.addHook('onRequest', async (request, reply) => {
    const presented = presentedSecret(request);
    const credential = presented.secret ? await resolve(presented.secret) : undefined;
    request.credential = credential;
    request.credentialSent = presented.sent;

    // CORS preflights and liveness probes see their allowance but never spend it, nor are refused.
    const counted = routeAccess(request) !== 'unmetered' && request.method !== 'OPTIONS';
    const decision = credential
      ? await limiter.check(credential.rateLimitKey, config.rateLimitPerMinute, counted)
      : await limiter.check(`ip:${request.ip}`, config.rateLimitAnonPerMinute, counted);
    reply.headers(rateLimitHeaders(decision));
    if (counted && !decision.allowed) {
      throw new ApiError(429, 'rate_limited', `Rate limit of ${decision.limit} requests per minute reached`, undefined, {
        'retry-after': String(decision.resetSeconds),
      });
    }
  });
}

/** Enforces the route's access rule; registered after CORS, whose preflights need no credential. */
export function installAuthorization(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const access = routeAccess(request);
    if (access === 'public' || access === 'unmetered') return;
    const credential = request.credential;
    if (!credential) {
      throw unauthorized(request.credentialSent ? 'The credential is invalid, expired or revoked' : 'A credential is required', request.credentialSent);
    }
    if (!hasScopes(credential, access.scopes)) throw insufficientScope(access.scopes);
  });
}
