// The OpenAPI 3.1 document is generated from the route schemas (never written by hand): every
// route gets the shared error responses and the security requirement its access rule implies.
import swagger from '@fastify/swagger';
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import type { Config } from '../config.js';
import type { RouteAccess } from './access.js';
import { ErrorSchema, ref } from './schemas.js';
import { OAUTH_GRANTABLE, SCOPE_DESCRIPTIONS, type Scope } from './scopes.js';

export const API_NAME = 'Developer Data Service API';
export const API_VERSION = '1.3.0';

function securityFor(access: RouteAccess | undefined): Array<Record<string, string[]>> {
  if (access === 'public' || access === 'unmetered') return [];
  const scopes = access?.scopes ?? [];
  const keyOnly = scopes.some((scope) => !OAUTH_GRANTABLE.has(scope));
  return keyOnly ? [{ bearerAuth: scopes }, { apiKeyHeader: scopes }] : [{ bearerAuth: scopes }, { apiKeyHeader: scopes }, { oauth2: scopes }];
}

/** Adds error responses and security to a route's schema as it is registered. */
function documentRoute(route: RouteOptions): void {
  const schema = (route.schema ??= {});
  const response = (schema.response ??= {}) as Record<string, unknown>;
  response['4xx'] ??= ref('Error');
  response['5xx'] ??= ref('Error');
  (schema as { security?: unknown }).security ??= securityFor(route.config?.auth);
}

export async function installOpenApi(app: FastifyInstance, config: Config, componentSchemas: TSchema[]): Promise<void> {
  app.addSchema(ErrorSchema);
  for (const schema of componentSchemas) app.addSchema(schema);
  app.addHook('onRoute', documentRoute);
  const oauthScopes = Object.fromEntries(Object.entries(SCOPE_DESCRIPTIONS).filter(([scope]) => OAUTH_GRANTABLE.has(scope as Scope)));
  // The base URL is read when the document is first generated, which is after the server has
  // listened: with PORT=0 it then names the port actually chosen.
  const securitySchemes = () => ({
    bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key (ddk_…) or an OAuth access token (dda_…)' },
    apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
    oauth2: {
      type: 'oauth2',
      flows: {
        authorizationCode: {
          authorizationUrl: `${config.baseUrl}/oauth/authorize`,
          tokenUrl: `${config.baseUrl}/oauth/token`,
          refreshUrl: `${config.baseUrl}/oauth/token`,
          scopes: oauthScopes,
        },
        clientCredentials: { tokenUrl: `${config.baseUrl}/oauth/token`, scopes: oauthScopes },
      },
    },
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: API_NAME,
        version: API_VERSION,
        description: 'Store named data values, read every change as an event, receive signed webhooks, and connect apps with OAuth 2.0.',
      },
      // Needed at registration (routes' security requirements are checked against it); replaced below.
      components: { securitySchemes: securitySchemes() as never },
    },
    transformObject: (document) => {
      const { openapiObject } = document as { openapiObject: { components?: Record<string, unknown> } };
      return {
        ...openapiObject,
        servers: [{ url: config.baseUrl }],
        components: { ...openapiObject.components, securitySchemes: securitySchemes() },
      } as never;
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, index) => (typeof json.$id === 'string' ? json.$id : `def-${index}`),
    },
  });
}
