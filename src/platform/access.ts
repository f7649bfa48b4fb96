// Who is calling and may they: resolves the credential, applies the rate limit, then enforces the
// route's access rule, all before the body is read (so an anonymous caller learns nothing from
// validation errors). Routes declare `config.auth`; a route that declares nothing needs a credential.
// CORS preflights (OPTIONS) are answered after the rate limit and before the access rule: they need no credential.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { hasScopes, type Credential, type CredentialResolver } from './credential.js';
import { insufficientScope, rateLimited, unauthorized } from '../domain-errors.js';
import { addCorsHeaders, answerPreflight, installCorsRoutes } from './cors.js';
import { addContractHeaders, targetProblem } from './http-contract.js';
import type { RateLimitDecision, RateLimiter } from './rate-limit.js';
import type { Scope } from './scopes.js';

/** `public`: no credential; `unmetered`: public and never counted (liveness); else the scopes needed. */
export type RouteAccess = 'public' | 'unmetered' | { scopes: Scope[] };

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAccess;
    /**
     * How many requests of the rate allowance one request of the route counts as, once its body is
     * read (a batch: one per 100 operations); one when absent. The first is counted on arrival.
     */
    requestsCounted?: (body: unknown) => number;
  }
  interface FastifyRequest {
    credential: Credential | undefined;
  }
}

/** A rate-limit decision, marked when it is the account's (counted across all its credentials). */
type Binding = RateLimitDecision & { perAccount?: true };

interface Presented {
  secret: string | undefined;
  sent: boolean;
  /** An Authorization header that is not `Bearer <secret>`: another scheme, or a bare key. */
  malformed?: true;
}

/** What a caller whose Authorization header is not `Bearer <secret>` is told. */
const AUTHORIZATION_FORM =
  'The Authorization header must be "Bearer <key>": the word Bearer, a space, then the API key (ddk_…) or access token (dda_…); an API key may go in the X-API-Key header instead';

function presentedSecret(request: FastifyRequest): Presented {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer +(\S+) *$/i.exec(authorization);
    return match ? { secret: match[1], sent: true } : { secret: undefined, sent: true, malformed: true };
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
 * the RateLimit headers), then the route's access rule. One hook rather than one per concern, and
 * a callback hook that stays synchronous when the credential and the rate-limit count are in
 * memory: an async hook costs promises and microtask turns on every request.
 */
export function installAccess(app: FastifyInstance, options: { config: Config; resolvers: CredentialResolver[]; limiter: RateLimiter }): void {
  const { config, resolvers, limiter } = options;

  function resolve(secret: string): Credential | undefined | Promise<Credential | undefined> {
    for (const resolver of resolvers) if (secret.startsWith(resolver.prefix)) return resolver.resolve(secret);
    return undefined;
  }

  /** Whether the hook answered the request itself (a CORS preflight); throws a DomainError to refuse it. */
  function admit(request: FastifyRequest, reply: FastifyReply): boolean | Promise<boolean> {
    addContractHeaders(request, reply);
    addCorsHeaders(request, reply);
    const presented = presentedSecret(request);
    const credential = presented.secret ? resolve(presented.secret) : undefined;
    return credential instanceof Promise
      ? credential.then((resolved) => limitAndAuthorize(request, reply, presented, resolved))
      : limitAndAuthorize(request, reply, presented, credential);
  }

  function limitAndAuthorize(
    request: FastifyRequest,
    reply: FastifyReply,
    presented: Presented,
    credential: Credential | undefined,
  ): boolean | Promise<boolean> {
    request.credential = credential;
    // CORS preflights and liveness probes see their allowance but never spend it, nor are refused.
    const access = routeAccess(request);
    const counted = access !== 'unmetered' && request.method !== 'OPTIONS';
    const decision = credential ? limitCredential(credential, counted) : limiter.check(`ip:${request.ip}`, config.rateLimitAnonPerMinute, counted);
    return decision instanceof Promise
      ? decision.then((decided) => authorize(request, reply, presented, access, counted, decided))
      : authorize(request, reply, presented, access, counted, decision);
  }

  /**
   * The credential's allowance, then its account's, so minting keys does not multiply the allowance.
   * The account counts only what the credential admitted: a key retrying its 429s does not spend its
   * siblings' allowance. One the account refuses has spent the credential's count as well, which is
   * harmless: both windows are the same minute and the account stays spent until it ends. Checked
   * one after the other, as the account needs the credential's answer; no promise while both
   * counters answer at once (in process).
   */
  function limitCredential(credential: Credential, counted: boolean): Binding | Promise<Binding> {
    const own = limiter.check(credential.rateLimitKey, config.rateLimitPerMinute, counted);
    return own instanceof Promise ? own.then((decided) => withAccount(credential, counted, decided)) : withAccount(credential, counted, own);
  }

  function withAccount(credential: Credential, counted: boolean, own: RateLimitDecision): Binding | Promise<Binding> {
    // Refused with none left: the credential binds whatever the account has left.
    if (!own.allowed) return own;
    const account = limiter.check(`account:${credential.accountId}`, config.rateLimitAccountPerMinute, counted);
    return account instanceof Promise ? account.then((decided) => binding(own, decided)) : binding(own, account);
  }

  /** The headers report the limit that binds: the one refusing, else fewer left (a tie: the credential's). */
  function binding(own: RateLimitDecision, account: RateLimitDecision): Binding {
    return !account.allowed || account.remaining < own.remaining ? { ...account, perAccount: true } : own;
  }

  /** The RateLimit headers of the decision; a counted request it refuses is refused (429). */
  function applyLimit(reply: FastifyReply, counted: boolean, decision: Binding): void {
    reply.header('ratelimit-limit', String(decision.limit));
    reply.header('ratelimit-remaining', String(decision.remaining));
    reply.header('ratelimit-reset', String(decision.resetSeconds));
    if (counted && !decision.allowed) {
      const whose = decision.perAccount ? "The account's rate limit" : 'Rate limit';
      throw rateLimited(`${whose} of ${decision.limit} requests per minute reached`, decision.resetSeconds);
    }
  }

  function authorize(request: FastifyRequest, reply: FastifyReply, presented: Presented, access: RouteAccess, counted: boolean, decision: Binding): boolean {
    applyLimit(reply, counted, decision);

    if (answerPreflight(request, reply)) return true;
    if (access === 'public' || access === 'unmetered') return false;
    const credential = request.credential;
    if (!credential) {
      // RFC 6750 §3.1: a request in another scheme presented no bearer token, so its challenge names no error.
      if (presented.malformed) throw unauthorized(AUTHORIZATION_FORM, false);
      throw unauthorized(presented.sent ? 'The credential is invalid, expired or revoked' : 'A credential is required', presented.sent);
    }
    if (!hasScopes(credential, access.scopes)) throw insufficientScope(access.scopes);
    return false;
  }

  /** The allowance a route's request counts beyond the one counted on arrival; refuses it with 429 past the limit. */
  async function countMore(request: FastifyRequest, reply: FastifyReply, more: number): Promise<void> {
    const credential = request.credential;
    if (!credential || more <= 0) return;
    // One count per request it stands for, as the counters count; at most a few.
    let decision: Binding | undefined;
    for (let counted = 0; counted < more; counted++) decision = await limitCredential(credential, true);
    applyLimit(reply, true, decision!);
  }

  app.addHook('onRoute', (route) => {
    const requestsCounted = route.config?.requestsCounted;
    if (!requestsCounted) return;
    const existing = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
    route.preHandler = [async (request, reply) => countMore(request, reply, requestsCounted(request.body) - 1), ...existing];
  });

  app.decorateRequest('credential', undefined);
  installCorsRoutes(app);
  // A callback hook that answered the request does not call done: the route must not run as well.
  app.addHook('onRequest', (request, reply, done) => {
    let answered: boolean | Promise<boolean>;
    try {
      answered = admit(request, reply);
    } catch (error) {
      done(error as Error);
      return;
    }
    // Checks of the request itself come after its access rule: an anonymous caller learns nothing.
    if (answered instanceof Promise) {
      answered.then((sent) => {
        if (!sent) done(targetProblem(request));
      }, done);
    } else if (!answered) done(targetProblem(request));
  });
}
