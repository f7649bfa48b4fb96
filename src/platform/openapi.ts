// The OpenAPI 3.1 document is generated from the route schemas (never written by hand): every
// route gets the shared error responses and the security requirement its access rule implies.
import swagger from '@fastify/swagger';
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import type { Config } from '../config.js';
import type { RouteAccess } from './access.js';
import { ErrorSchema, ref } from './schemas.js';
import { OAUTH_GRANTABLE, SCOPE_DESCRIPTIONS, type Scope } from './scopes.js';
import { API_NAME, API_VERSION } from './api-version.js';

function securityFor(access: RouteAccess | undefined): Array<Record<string, string[]>> {
  if (access === 'public' || access === 'unmetered') return [];
  const scopes = access?.scopes ?? [];
  const keyOnly = scopes.some((scope) => !OAUTH_GRANTABLE.has(scope));
  return keyOnly ? [{ bearerAuth: scopes }, { apiKeyHeader: scopes }] : [{ bearerAuth: scopes }, { apiKeyHeader: scopes }, { oauth2: scopes }];
}

/**
 * Adds error responses and security to a route's schema as it is registered, and refuses a route
 * without an operationId: client generators name their methods after it.
 */
function documentRoute(route: RouteOptions): void {
  route.schema ??= {};
  const schema = route.schema as RouteOptions['schema'] & { operationId?: string; security?: unknown; hide?: boolean };
  if (!schema.operationId && !schema.hide) throw new Error(`route ${String(route.method)} ${route.url} has no operationId`);
  schema.response ??= {};
  const response = schema.response as Record<string, unknown>;
  response['4xx'] ??= ref('Error');
  response['5xx'] ??= ref('Error');
  // Named apart from 4xx so that its Retry-After header can be documented; /health is never limited.
  if (route.config?.auth !== 'unmetered') response['429'] ??= ref('Error');
  schema.security ??= securityFor(route.config?.auth);
}

/** Response headers, documented once as components and referenced by every response that has them. */
const RESPONSE_HEADERS = {
  'X-Request-Id': {
    description: 'The request id (the caller’s own X-Request-Id when it sent a safe one); quote it when reporting a problem',
    schema: { type: 'string' },
  },
  'RateLimit-Limit': { description: 'Requests allowed in the current one-minute window', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Reset': { description: 'Seconds until the current window ends', schema: { type: 'integer', minimum: 1 } },
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer', minimum: 0 } },
  ETag: { description: 'The version of the representation: a resource\'s `"<version>"`, a download\'s `"<sha256>"`', schema: { type: 'string' } },
  'Cache-Control': {
    description: "`no-store` on every response to a request that carries a credential (a key shown once, an account's data): no browser or proxy may keep it",
    schema: { type: 'string', enum: ['no-store'] },
  },
} as const;
type ResponseHeader = keyof typeof RESPONSE_HEADERS;
const EVERY_RESPONSE: ResponseHeader[] = ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

interface OperationObject {
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ in: string; required?: boolean; schema?: { default?: unknown } }>;
  responses?: Record<string, { headers?: Record<string, unknown> }>;
}

/**
 * What the generated document needs beyond what @fastify/swagger writes: a query parameter with a
 * default is optional for the caller (Ajv fills the default in), and every response documents its
 * headers. A route declares its own headers (e.g. `etag`) in its response schema, by any case.
 */
function completeOperations(paths: Record<string, Record<string, OperationObject>>): void {
  const byLowerCase = new Map(Object.keys(RESPONSE_HEADERS).map((name) => [name.toLowerCase(), name as ResponseHeader]));
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && parameter.schema?.default !== undefined) delete parameter.required;
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const headers: Record<string, unknown> = {};
        const credentialed = (operation.security ?? []).some((requirement) => Object.keys(requirement).length > 0);
        const shared: ResponseHeader[] = [
          ...EVERY_RESPONSE,
          ...(status === '429' ? ['Retry-After' as const] : []),
          ...(credentialed ? ['Cache-Control' as const] : []),
        ];
        for (const name of shared) headers[name] = { $ref: `#/components/headers/${name}` };
        // A header the route describes itself keeps its own description, under the usual spelling.
        for (const [name, header] of Object.entries(response.headers ?? {})) {
          const known = byLowerCase.get(name.toLowerCase());
          const spelt = known ?? name.replace(/(^|-)([a-z])/g, (_match, dash: string, letter: string) => dash + letter.toUpperCase());
          headers[spelt] = known && !(header as { description?: string }).description ? { $ref: `#/components/headers/${known}` } : header;
        }
        response.headers = headers;
      }
    }
  }
}

const servedJson = new WeakMap<object, string>();

/**
 * The document as `GET /openapi.json` sends it, made once: @fastify/swagger generates the object on
 * the first call (after the server listens, so it names the right base URL) and keeps it. The
 * installations download serves these same bytes.
 */
export function openApiJson(app: FastifyInstance): string {
  const document = app.swagger();
  let json = servedJson.get(document);
  if (json === undefined) {
    json = JSON.stringify(document);
    servedJson.set(document, json);
  }
  return json;
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
        license: { name: 'MIT', identifier: 'MIT' },
      },
      tags: [
        { name: 'system', description: 'Liveness, readiness, status, API information, capabilities, this document, echo' },
        { name: 'keys', description: 'The calling credential and API keys' },
        { name: 'resources', description: 'Named data values with a version for If-Match' },
        { name: 'events', description: 'The account’s event log: polling, publishing, the live stream' },
        { name: 'webhooks', description: 'Signed event delivery to HTTPS receivers' },
        { name: 'apps', description: 'Applications registered for OAuth 2.0' },
        { name: 'oauth', description: 'The OAuth 2.0 authorization server' },
        { name: 'schedules', description: 'Cron and one-shot schedules that set a state or publish an event' },
        { name: 'usage', description: 'Daily request counts' },
        { name: 'audit', description: 'The history of account changes' },
        { name: 'installations', description: 'Files to download, such as this document' },
        { name: 'integrations', description: 'The Home Assistant integration' },
        { name: 'developer', description: 'Developer signup and its session cookie' },
      ],
      // Needed at registration (routes' security requirements are checked against it); replaced below.
      components: { securitySchemes: securitySchemes() as never },
    },
    transformObject: (document) => {
      const { openapiObject } = document as { openapiObject: { paths: Record<string, Record<string, OperationObject>>; components?: Record<string, unknown> } };
      completeOperations(openapiObject.paths);
      return {
        ...openapiObject,
        servers: [{ url: config.baseUrl }],
        components: { ...openapiObject.components, headers: RESPONSE_HEADERS, securitySchemes: securitySchemes() },
      } as never;
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, index) => (typeof json.$id === 'string' ? json.$id : `def-${index}`),
    },
  });
}
