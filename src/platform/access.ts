// Who is calling and may they: resolves the credential, applies the rate limit, then enforces the
// route's access rule, all before the body is read (so an anonymous caller learns nothing from
// validation errors). Routes declare `config.auth`; a route that declares nothing needs a credential.
// CORS preflights (OPTIONS) are answered after the rate limit and before the access rule: they need no credential.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { hasScopes, type Credential, type CredentialResolver } from './credential.js';
import { ApiError, insufficientScope, unauthorized } from './errors.js';
import { addCorsHeaders, answerPreflight, installCorsRoutes } from './cors.js';
import { addContractHeaders } from './http-contract.js';
import type { RateLimiter } from './rate-limit.js';
import type { Scope } from './scopes.js';

/** `public`: no credential; `unmetered`: public and never counted (liveness); else the scopes needed. */
export type RouteAccess = 'public' | 'unmetered' | { scopes: Scope[] };

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAccess;
  }
  interface FastifyRequest {
    credential: Credential | undefined;
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
 * The one request hook every route shares, in this order: the contract headers, CORS, the caller's
 * identity and rate limit, the answer to a CORS preflight (which needs no credential but carries
 * the RateLimit headers), then the route's access rule. One hook rather than one per concern: each
 * hook costs a promise and a turn of the event loop on every request.
 */
export function installAccess(app: FastifyInstance, options: { config: Config; resolvers: CredentialResolver[]; limiter: RateLimiter }): void {
  const { config, resolvers, limiter } = options;

  function resolve(secret: string): Promise<Credential | undefined> | undefined {
    for (const resolver of resolvers) if (secret.startsWith(resolver.prefix)) return resolver.resolve(secret);
    return undefined;
  }

  app.decorateRequest('credential', undefined);
  installCorsRoutes(app);
  app.addHook('onRequest', async (request, reply) => {
    addContractHeaders(request, reply);
    addCorsHeaders(request, reply);

    const presented = presentedSecret(request);
    const credential = presented.secret ? await resolve(presented.secret) : undefined;
    request.credential = credential;

    // CORS preflights and liveness probes see their allowance but never spend it, nor are refused.
    const access = routeAccess(request);
    const counted = access !== 'unmetered' && request.method !== 'OPTIONS';
    let decision = credential
      ? limiter.check(credential.rateLimitKey, config.rateLimitPerMinute, counted)
      : limiter.check(`ip:${request.ip}`, config.rateLimitAnonPerMinute, counted);
    if (decision instanceof Promise) decision = await decision;
    reply.header('ratelimit-limit', String(decision.limit));
    reply.header('ratelimit-remaining', String(decision.remaining));
    reply.header('ratelimit-reset', String(decision.resetSeconds));
    if (counted && !decision.allowed) {
      throw new ApiError(429, 'rate_limited', `Rate limit of ${decision.limit} requests per minute reached`, undefined, {
        'retry-after': String(decision.resetSeconds),
      });
    }

    if (answerPreflight(request, reply)) return;
    if (access === 'public' || access === 'unmetered') return;
    if (!credential) {
      throw unauthorized(presented.sent ? 'The credential is invalid, expired or revoked' : 'A credential is required', presented.sent);
    }
    if (!hasScopes(credential, access.scopes)) throw insufficientScope(access.scopes);
  });
}
