// Who is calling and may they: resolves the credential, applies the rate limit, then enforces the
// route's access rule, all before the body is read (so an anonymous caller learns nothing from
// validation errors). Routes declare `config.auth`; a route that declares nothing needs a credential.
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

export function installAccess(
  app: FastifyInstance,
  options: { config: Config; resolvers: CredentialResolver[]; limiter: RateLimiter },
): void {
  const { config, resolvers, limiter } = options;

  async function resolve(secret: string): Promise<Credential | undefined> {
    const resolver = resolvers.find((candidate) => secret.startsWith(candidate.prefix));
    return resolver?.resolve(secret);
  }

  app.decorateRequest('credential', undefined);
  app.addHook('onRequest', async (request, reply) => {
    const access = routeAccess(request);
    const presented = presentedSecret(request);
    const credential = presented.secret ? await resolve(presented.secret) : undefined;
    request.credential = credential;

    // CORS preflights and liveness probes see their allowance but never spend it.
    const counted = access !== 'unmetered' && request.method !== 'OPTIONS';
    const decision = credential
      ? await limiter.check(credential.rateLimitKey, config.rateLimitPerMinute, counted)
      : await limiter.check(`ip:${request.ip}`, config.rateLimitAnonPerMinute, counted);
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) {
      throw new ApiError(429, 'rate_limited', `Rate limit of ${decision.limit} requests per minute reached`, undefined, {
        'retry-after': String(decision.resetSeconds),
      });
    }

    if (access === 'public' || access === 'unmetered') return;
    if (!credential) {
      throw unauthorized(presented.sent ? 'The credential is invalid, expired or revoked' : 'A credential is required', presented.sent);
    }
    if (!hasScopes(credential, access.scopes)) throw insufficientScope(access.scopes);
  });
}
