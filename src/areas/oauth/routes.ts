// The OAuth 2.0 endpoints: metadata (RFC 8414), the approval page, token and revocation. Token
// and revocation speak form data and answer errors as RFC 6749 §5.2 JSON, not the API's body.
import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { DomainError } from '../../domain-errors.js';
import { describeError, parseFormRefusingNul, sendError } from '../../platform/http-contract.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { ref } from '../../platform/schemas.js';
import { OAUTH_GRANTABLE } from '../../platform/scopes.js';
import { STATE_LENGTH } from './authorization.js';
import { approvalPage, errorPage } from './page.js';
import { CODE_TTL_MS, CONNECTION_DAYS, OAuthError, UntrustedRedirectError, type AuthorizationRequest, type OAuthService } from './service.js';
import type { Capability } from '../system/capability.js';
import type { Config } from '../../config.js';

const OAuthErrorSchema = Type.Object(
  { error: Type.String(), error_description: Type.Optional(Type.String()) },
  { $id: 'OAuthError', description: 'RFC 6749 §5.2 error' },
);
const TokenResponseSchema = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ maximum: 900 }),
    scope: Type.String(),
    refresh_token: Type.Optional(Type.String()),
  },
  { $id: 'TokenResponse' },
);
const MetadataSchema = Type.Object(
  {
    issuer: Type.String(),
    authorization_endpoint: Type.String(),
    token_endpoint: Type.String(),
    revocation_endpoint: Type.String(),
    response_types_supported: Type.Array(Type.String()),
    grant_types_supported: Type.Array(Type.String()),
    code_challenge_methods_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
    authorization_response_iss_parameter_supported: Type.Boolean(),
  },
  { $id: 'AuthorizationServerMetadata' },
);

export const oauthSchemas = [OAuthErrorSchema, TokenResponseSchema, MetadataSchema];

const noStore = (description: string) => ({ 'cache-control': { type: 'string', enum: ['no-store'], description } });
const Html = (description: string) => ({
  description,
  content: { 'text/html': { schema: Type.String() } },
  headers: noStore('Always: no page is kept'),
});
const Redirect = {
  description: 'See Other: to the app’s redirect URI',
  type: 'null',
  headers: {
    location: { type: 'string', description: 'The redirect URI with code, state and iss, or error, error_description, state and iss' },
    ...noStore('Always: the address may carry an authorization code'),
  },
};
const authorizeFields = {
  response_type: Type.Optional(Type.String()),
  client_id: Type.Optional(Type.String()),
  redirect_uri: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String()),
  state: Type.Optional(Type.String()),
  code_challenge: Type.Optional(Type.String()),
  code_challenge_method: Type.Optional(Type.String()),
};
const AuthorizeParams = Type.Object(authorizeFields, { additionalProperties: true });
/**
 * The same, as the document states it: `state` is required and of a length the service checks
 * (STATE_LENGTH), so that a request from a trusted client and redirect URI that breaks the rule is
 * answered at the redirect URI with error=invalid_request (RFC 6749 §4.1.2.1), not by the validator.
 */
const DocumentedAuthorizeParams = Type.Object(
  {
    ...authorizeFields,
    state: Type.String({
      minLength: STATE_LENGTH.min,
      maxLength: STATE_LENGTH.max,
      description: 'Sent back unchanged with the code; outside this length the answer is a redirect with error=invalid_request',
    }),
  },
  { additionalProperties: true },
);
const FormFields = (names: string[]) =>
  Type.Object(Object.fromEntries(names.map((name) => [name, Type.Optional(Type.String())])), { additionalProperties: true });

type Params = Record<string, string | undefined>;

/** A 303 to the app: never kept by a cache, as its address may carry an authorization code. */
function redirectWith(reply: FastifyReply, redirectUri: string, params: Record<string, string>): FastifyReply {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return reply.code(303).header('location', url.toString()).header('cache-control', 'no-store').send();
}

/** Headers of every page: never cached, never framed, no scripts, forms only to us and the app. */
function pageHeaders(reply: FastifyReply, redirectUri?: string): FastifyReply {
  const formTargets = redirectUri ? ` ${new URL(redirectUri).origin}` : '';
  return reply
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'${formTargets}; frame-ancestors 'none'; base-uri 'none'`,
    );
}

/**
 * The error responses of a JSON endpoint here: RFC 6749 §5.2 bodies (the ranges are the
 * serializer's), except the API's 429. The token and revocation endpoints add 401 invalid_client.
 */
const oauthErrors = {
  400: ref('OAuthError'),
  429: errorResponse('rate_limited'),
  500: ref('OAuthError'),
  '4xx': ref('OAuthError'),
  '5xx': ref('OAuthError'),
};

/** The token and revocation endpoints' 401: the client failed to authenticate. */
const InvalidClient = {
  ...ref('OAuthError'),
  headers: { 'www-authenticate': { type: 'string', description: '`Basic realm="devdata"`, to a client that authenticated with HTTP Basic' } },
};

/** Where the authorization server metadata (RFC 8414) is served. */
const METADATA_PATH = '/.well-known/oauth-authorization-server';

export const oauthRoutes: FastifyPluginAsyncTypebox<{ oauth: OAuthService }> = async (app, { oauth }) => {
  await app.register(formbody, { parser: parseFormRefusingNul });
  // The OAuth endpoints answer their errors through the handler below, so each declares its statuses.
  const publicRoute = { auth: 'public' as const, ownErrorBodies: true as const };

  // Token and revocation errors are RFC 6749 JSON, and the approval page's are pages: whatever
  // else goes wrong (a body the parser or validation refuses, no content type) is shown the same
  // way. Only the rate limit (429), and the metadata document's errors, keep the API's error body.
  app.setErrorHandler((error: FastifyError | OAuthError | DomainError, request, reply) => {
    if (error instanceof OAuthError) {
      // RFC 6749 section 5.2: a client that failed to authenticate gets 401, every other error 400.
      const status = error.error === 'invalid_client' ? 401 : 400;
      if (status === 401 && request.headers.authorization?.toLowerCase().startsWith('basic')) {
        reply.header('www-authenticate', 'Basic realm="devdata"');
      }
      return reply.code(status).header('cache-control', 'no-store').send({ error: error.error, error_description: error.description });
    }
    const described = describeError(error);
    const status = described.status;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    // The metadata document is an API response like any other: its errors keep the API's body.
    if (described.code === 'rate_limited' || request.routeOptions.url === METADATA_PATH) return sendError(request, reply, described);
    if (request.routeOptions.url === '/oauth/authorize') {
      return pageHeaders(reply)
        .code(status >= 500 ? 500 : 400)
        .send(
          errorPage(
            status >= 500
              ? 'Something went wrong on our side. Start again from the application.'
              : 'The request is malformed. Start again from the application.',
          ),
        );
    }
    const description =
      status === 413
        ? 'The request body is too large'
        : status >= 500
          ? 'Internal server error'
          : 'The request is malformed: send each field once, as form data';
    return reply
      .code(status >= 500 ? 500 : 400)
      .header('cache-control', 'no-store')
      .send({ error: status >= 500 ? 'server_error' : 'invalid_request', error_description: description });
  });

  app.get(
    METADATA_PATH,
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'getAuthorizationServerMetadata',
        summary: 'Authorization server metadata (RFC 8414)',
        tags: ['oauth'],
        response: { 200: ref('AuthorizationServerMetadata') },
      },
    },
    async () => {
      const issuer = oauth.issuer;
      return {
        issuer,
        authorization_endpoint: `${issuer}/oauth/authorize`,
        token_endpoint: `${issuer}/oauth/token`,
        revocation_endpoint: `${issuer}/oauth/revoke`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none', 'client_secret_basic'],
        revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic'],
        scopes_supported: [...OAUTH_GRANTABLE],
        authorization_response_iss_parameter_supported: true,
      };
    },
  );

  /** Validates an authorization request, answering the fault itself: a page, or a redirect to the app. */
  async function authorizationRequest(params: Params, reply: FastifyReply): Promise<AuthorizationRequest | undefined> {
    let trusted: Awaited<ReturnType<typeof oauth.authorization.trustedClient>>;
    try {
      trusted = await oauth.authorization.trustedClient(params);
    } catch (error) {
      if (!(error instanceof UntrustedRedirectError)) throw error;
      pageHeaders(reply).code(400).send(errorPage(error.message));
      return undefined;
    }
    try {
      return oauth.authorization.validateRequest(trusted.app, trusted.redirectUri, params);
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      redirectWith(reply, trusted.redirectUri, {
        error: error.error,
        error_description: error.description,
        ...(params.state !== undefined ? { state: params.state } : {}),
        iss: oauth.issuer,
      });
      return undefined;
    }
  }

  app.get(
    '/oauth/authorize',
    {
      config: { ...publicRoute, documentedQuerystring: DocumentedAuthorizeParams },
      schema: {
        operationId: 'showAuthorizationPage',
        summary: 'The approval page (browser)',
        tags: ['oauth'],
        querystring: AuthorizeParams,
        response: {
          200: Html('The approval page'),
          303: Redirect,
          400: Html('An unknown client or redirect URI, or a malformed request'),
          500: Html('A server error'),
        },
      },
    },
    async (request, reply) => {
      const params = request.query as Params;
      const authorization = await authorizationRequest(params, reply);
      if (!authorization) return reply;
      return pageHeaders(reply, authorization.redirectUri).send(approvalPage(authorization, await oauth.authorization.formToken(authorization)));
    },
  );

  app.post(
    '/oauth/authorize',
    {
      config: publicRoute,
      schema: {
        operationId: 'submitAuthorizationPage',
        summary: 'The approval page’s choice: Connect (with an API key) or Cancel',
        tags: ['oauth'],
        consumes: ['application/x-www-form-urlencoded'],
        body: FormFields([
          'response_type',
          'client_id',
          'redirect_uri',
          'scope',
          'state',
          'code_challenge',
          'code_challenge_method',
          'api_key',
          'csrf',
          'action',
        ]),
        response: {
          303: Redirect,
          400: Html('An unknown client or redirect URI, or an expired form'),
          401: Html('The page again: the API key is not valid'),
          403: Html('The page again: the API key lacks a requested scope'),
          500: Html('A server error'),
        },
      },
    },
    async (request, reply) => {
      const form = (request.body ?? {}) as Params;
      const authorization = await authorizationRequest(form, reply);
      if (!authorization) return reply;
      if (!(await oauth.authorization.checkFormToken(authorization, form.csrf))) {
        return pageHeaders(reply)
          .code(400)
          .send(errorPage('This approval form has expired or was not issued by this service. Start again from the application.'));
      }
      const iss = oauth.issuer;
      if (form.action === 'cancel') {
        return redirectWith(reply, authorization.redirectUri, {
          error: 'access_denied',
          error_description: 'The user cancelled',
          state: authorization.state,
          iss,
        });
      }
      if (form.action !== 'approve') return pageHeaders(reply).code(400).send(errorPage('Choose Connect or Cancel.'));
      const outcome = await oauth.authorization.approve(authorization, (form.api_key ?? '').trim());
      if ('problem' in outcome) {
        const status = outcome.problem.includes('permission') ? 403 : 401;
        return pageHeaders(reply, authorization.redirectUri)
          .code(status)
          .send(approvalPage(authorization, await oauth.authorization.formToken(authorization), outcome.problem));
      }
      return redirectWith(reply, authorization.redirectUri, { code: outcome.code, state: authorization.state, iss });
    },
  );

  /** Form data only, each field once (RFC 6749 §3.2). */
  function formOf(request: { headers: Record<string, unknown>; body: unknown }): Params {
    const type = String(request.headers['content-type'] ?? '')
      .split(';')[0]
      ?.trim()
      .toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') throw new OAuthError('invalid_request', 'Send form data (application/x-www-form-urlencoded)');
    const body = (request.body ?? {}) as Record<string, unknown>;
    for (const [name, value] of Object.entries(body)) {
      if (typeof value !== 'string') throw new OAuthError('invalid_request', `${name} must be sent once`);
    }
    return body as Params;
  }

  app.post(
    '/oauth/token',
    {
      config: publicRoute,
      schema: {
        operationId: 'requestToken',
        summary: 'Token endpoint: authorization_code, refresh_token, client_credentials',
        tags: ['oauth'],
        consumes: ['application/x-www-form-urlencoded'],
        body: FormFields(['grant_type', 'client_id', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope']),
        response: { 200: ref('TokenResponse'), 401: InvalidClient, ...oauthErrors },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      const form = formOf(request);
      const client = await oauth.authenticateClient(request.headers.authorization, form);
      return oauth.token(client, form);
    },
  );

  app.post(
    '/oauth/revoke',
    {
      config: publicRoute,
      schema: {
        operationId: 'revokeToken',
        summary: 'Revoke a token (RFC 7009): a refresh token ends its connection',
        tags: ['oauth'],
        consumes: ['application/x-www-form-urlencoded'],
        body: FormFields(['token', 'token_type_hint', 'client_id']),
        response: { 200: { description: 'Revoked, or nothing to revoke', type: 'null' }, 401: InvalidClient, ...oauthErrors },
      },
    },
    async (request, reply) => {
      const form = formOf(request);
      const client = await oauth.authenticateClient(request.headers.authorization, form);
      await oauth.revoke(client, form.token);
      return reply.code(200).header('cache-control', 'no-store').send();
    },
  );
};

export function oauthCapability(config: Config): Capability {
  return {
    feature: {
      name: 'oauth',
      description: 'OAuth 2.0 authorization server: authorization code with PKCE (S256), refresh tokens, client credentials',
      metadata: METADATA_PATH,
      accessTokenTtlSeconds: config.accessTokenTtlSeconds,
      connectionDays: CONNECTION_DAYS,
      codeTtlSeconds: CODE_TTL_MS / 1000,
    },
    limits: { accessTokenTtlSeconds: config.accessTokenTtlSeconds, oauthConnectionDays: CONNECTION_DAYS },
  };
}
