// The OpenAPI 3.1 document is generated from the route schemas (never written by hand): every
// route gets the error statuses and the security requirement its access rule implies
// (openapi-responses.ts), every response its headers, and every GET route its HEAD twin.
import swagger from '@fastify/swagger';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { type TObject, type TSchema, Type } from 'typebox';
import type { Config } from '../config.js';
import type { RouteAccess } from './access.js';
import { checkDeclaredErrors, documentedResponses } from './openapi-responses.js';
import { ErrorSchema, ref } from './schemas.js';
import { OAUTH_GRANTABLE, SCOPE_DESCRIPTIONS, type Scope } from './scopes.js';
import { API_NAME, API_VERSION } from './api-version.js';
import { IDEMPOTENCY_KEPT_HOURS, IDEMPOTENCY_KEY_PATTERN, takesIdempotencyKey } from './idempotency.js';
import { DISCRIMINATOR_VALUES } from './validation-messages.js';

function securityFor(access: RouteAccess | undefined): Array<Record<string, string[]>> {
  if (access === 'public' || access === 'unmetered') return [];
  const scopes = access?.scopes ?? [];
  const keyOnly = scopes.some((scope) => !OAUTH_GRANTABLE.has(scope));
  return keyOnly ? [{ bearerAuth: scopes }, { apiKeyHeader: scopes }] : [{ bearerAuth: scopes }, { apiKeyHeader: scopes }, { oauth2: scopes }];
}

/**
 * Adds the serializer's error schemas and the security requirement to a route's schema as it is
 * registered, and refuses a route without an operationId: client generators name their methods
 * after it. The document's exact error statuses are made from the route when it is generated.
 */
function documentRoute(route: RouteOptions): void {
  route.schema ??= {};
  const schema = route.schema as RouteOptions['schema'] & { operationId?: string; security?: unknown; hide?: boolean };
  if (!schema.operationId && !schema.hide) throw new Error(`route ${String(route.method)} ${route.url} has no operationId`);
  checkDeclaredErrors(route);
  schema.response ??= {};
  const response = schema.response as Record<string, unknown>;
  response['4xx'] ??= ref('Error');
  response['5xx'] ??= ref('Error');
  schema.security ??= securityFor(route.config?.auth);
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  if (methods.some((method) => takesIdempotencyKey(method, route.url))) withIdempotencyKey(schema);
}

type SchemaObject = { oneOf?: Array<{ $ref?: string }>; discriminator?: Record<string, unknown> };

/**
 * A tagged union's discriminator as the document states it: the `mapping` from each tag value to its
 * member (OpenAPI reads a missing mapping as the members' names), made from the values the
 * validator's copy lists (Ajv refuses a mapping; validation-messages.ts, DISCRIMINATOR_VALUES).
 */
function withDiscriminatorMappings(schemas: Record<string, SchemaObject> = {}): Record<string, SchemaObject> {
  return Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => {
      const values = schema.discriminator?.[DISCRIMINATOR_VALUES];
      if (!Array.isArray(values) || !schema.oneOf) return [name, schema];
      const { [DISCRIMINATOR_VALUES]: _values, ...discriminator } = schema.discriminator!;
      const mapping = Object.fromEntries(values.map((value, index) => [String(value), schema.oneOf![index]!.$ref]));
      return [name, { ...schema, discriminator: { ...discriminator, mapping } }];
    }),
  );
}

/** The Idempotency-Key header among a write's headers: documented, and validated like the others. */
function withIdempotencyKey(schema: { headers?: unknown }): void {
  const headers = (schema.headers ?? Type.Object({})) as TObject;
  schema.headers = Type.Object(
    {
      ...headers.properties,
      'idempotency-key': Type.Optional(
        Type.String({
          pattern: IDEMPOTENCY_KEY_PATTERN,
          // What a key does is said once, in the operation's 409 and 422 and the docs; here what it is, and how long it is kept.
          description: `1-255 visible ASCII characters (0x21-0x7E), new for each request: a UUID. Kept ${IDEMPOTENCY_KEPT_HOURS} hours`,
          'x-kept-hours': IDEMPOTENCY_KEPT_HOURS,
        }),
      ),
    },
    { additionalProperties: true },
  );
}

/** A route's schema as the document states it: exact statuses, and the query string it documents. */
function documentedSchema({ schema, url, route }: { schema: RouteOptions['schema']; url: string; route: RouteOptions }) {
  const querystring = route.config?.documentedQuerystring;
  return { schema: { ...schema, response: documentedResponses(route), ...(querystring && { querystring }) }, url };
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
  'WWW-Authenticate': {
    description:
      'The RFC 6750 challenge: `Bearer realm="devdata"`, with `error="invalid_token"` when a credential was sent and refused, or `error="insufficient_scope", scope="…"` naming the scopes the operation needs',
    schema: { type: 'string' },
  },
  'Idempotent-Replayed': {
    description: '`true` on the stored answer to an earlier request with the same Idempotency-Key: nothing was done again',
    schema: { type: 'string', enum: ['true'] },
  },
  'Accept-Ranges': { description: '`bytes`: a Range request gets part of the file', schema: { type: 'string', enum: ['bytes'] } },
  'Content-Disposition': { description: '`attachment; filename="<the file\'s name>"`', schema: { type: 'string' } },
  'Content-Range': {
    description: 'On 206 the part sent, `bytes <first>-<last>/<size>`; on 416 the size, `bytes */<size>`',
    schema: { type: 'string' },
  },
} as const;
type ResponseHeader = keyof typeof RESPONSE_HEADERS;
const EVERY_RESPONSE: ResponseHeader[] = ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

interface ResponseObject {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: unknown }>;
}

interface OperationObject {
  operationId?: string;
  summary?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ in: string; name?: string; required?: boolean; schema?: { default?: unknown } }>;
  responses?: Record<string, ResponseObject>;
}

/**
 * Fastify's own answer to a request that arrives while the server is closing (`return503OnClosing`):
 * sent before any hook, so with neither the API's error body nor its headers.
 */
const SHUTTING_DOWN_SCHEMA = {
  type: 'object',
  required: ['error', 'message', 'statusCode'],
  properties: { error: { type: 'string', enum: ['Service Unavailable'] }, message: { type: 'string' }, statusCode: { type: 'integer', enum: [503] } },
  description: 'Fastify’s body for a request that arrives while the server shuts down',
};
const SHUTTING_DOWN = 'The server is shutting down (`Connection: close`): try again, another instance may answer';

/**
 * The HEAD twin of a GET operation (Fastify answers HEAD on every GET route, exposeHeadRoutes):
 * the same statuses and headers without a body, and an operationId of its own that generators accept.
 */
function headOperation(operation: OperationObject): void {
  operation.operationId = operation.operationId?.replace(/-head$/, 'Head');
  operation.summary = `${operation.summary ?? ''} (headers only)`.trim();
  for (const response of Object.values(operation.responses ?? {})) delete response.content;
}

/** Every operation may answer 503 while the server shuts down; one that has a 503 of its own gets either body. */
function addShuttingDown(operation: OperationObject, head: boolean): void {
  operation.responses ??= {};
  const responses = operation.responses;
  const own = responses['503'];
  const body = own?.content?.['application/json'];
  if (own === undefined) responses['503'] = { $ref: `#/components/responses/${head ? 'ShuttingDownHead' : 'ShuttingDown'}` } as ResponseObject;
  else if (body) {
    body.schema = { anyOf: [body.schema, { $ref: '#/components/schemas/ShuttingDown' }] };
    own.description = `${own.description}; or: ${SHUTTING_DOWN}`;
  }
}

/**
 * What the generated document needs beyond what @fastify/swagger writes: a query parameter with a
 * default is optional for the caller (Ajv fills the default in), every response documents its
 * headers, HEAD operations have no body, and every operation may answer 503 while shutting down.
 * A route declares its own headers (e.g. `etag`) in its response schema, by any case.
 */
function completeOperations(paths: Record<string, Record<string, OperationObject>>): void {
  const byLowerCase = new Map(Object.keys(RESPONSE_HEADERS).map((name) => [name.toLowerCase(), name as ResponseHeader]));
  for (const operations of Object.values(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (method === 'head') headOperation(operation);
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && parameter.schema?.default !== undefined) delete parameter.required;
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const headers: Record<string, unknown> = {};
        const credentialed = (operation.security ?? []).some((requirement) => Object.keys(requirement).length > 0);
        const keyed = (operation.parameters ?? []).some((parameter) => parameter.in === 'header' && parameter.name === 'idempotency-key');
        const shared: ResponseHeader[] = [
          ...EVERY_RESPONSE,
          ...(status === '429' || (status === '409' && keyed) ? ['Retry-After' as const] : []),
          ...(keyed && /^(2\d\d|404|409|412)$/.test(status) ? ['Idempotent-Replayed' as const] : []),
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
      addShuttingDown(operation, method === 'head');
    }
  }
}

/**
 * The error responses many operations share, moved to components.responses and referenced: named
 * by their codes (`InvalidRequest`), `Public` without Cache-Control, `Head` without a body. One
 * worded for its route alone stays where it is.
 */
function shareErrorResponses(paths: Record<string, Record<string, OperationObject>>): Record<string, ResponseObject> {
  const uses = new Map<string, number>();
  const each = (visit: (responses: Record<string, ResponseObject>, status: string, json: string) => void) => {
    for (const operations of Object.values(paths)) {
      for (const operation of Object.values(operations)) {
        for (const [status, response] of Object.entries(operation.responses ?? {})) {
          if (Number(status) >= 400 && !('$ref' in response)) visit(operation.responses ?? {}, status, JSON.stringify(response));
        }
      }
    }
  };
  each((_responses, _status, json) => uses.set(json, (uses.get(json) ?? 0) + 1));
  const names = new Map<string, string>();
  const shared: Record<string, ResponseObject> = {};
  each((responses, status, json) => {
    const response = responses[status] as ResponseObject;
    const codes = [...(response.description ?? '').matchAll(/`([a-z_]+)`: /g)].map((match) => match[1] ?? '');
    if ((uses.get(json) ?? 0) < 2 || codes.length === 0) return;
    let name = names.get(json);
    if (name === undefined) {
      const base = codes.map((code) => code.replace(/(^|_)([a-z])/g, (_match, _underscore: string, letter: string) => letter.toUpperCase())).join('Or');
      const stem = `${base}${response.headers?.['Cache-Control'] ? '' : 'Public'}${response.content ? '' : 'Head'}`;
      name = stem;
      for (let n = 2; name in shared; n++) name = `${stem}${n}`;
      names.set(json, name);
      shared[name] = response;
    }
    responses[status] = { $ref: `#/components/responses/${name}` } as ResponseObject;
  });
  return shared;
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

/**
 * Installs the document. `securitySchemes` are the areas' own (the developer session cookie), named
 * by the security requirements of their routes.
 */
export async function installOpenApi(
  app: FastifyInstance,
  config: Config,
  componentSchemas: TSchema[],
  options: { securitySchemes?: Record<string, object> } = {},
): Promise<void> {
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
    ...options.securitySchemes,
  });
  await app.register(swagger, {
    exposeHeadRoutes: true,
    transform: documentedSchema as never,
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
        { name: 'history', description: 'Every state a resource took: points, buckets for a chart, backfill' },
        { name: 'events', description: 'The account’s event log: polling, publishing, the live stream' },
        { name: 'batch', description: 'Many writes in one request, all or nothing' },
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
      const sharedResponses = shareErrorResponses(openapiObject.paths);
      return {
        ...openapiObject,
        servers: [{ url: config.baseUrl }],
        components: {
          ...openapiObject.components,
          schemas: { ...withDiscriminatorMappings(openapiObject.components?.schemas as Record<string, SchemaObject>), ShuttingDown: SHUTTING_DOWN_SCHEMA },
          responses: {
            ...sharedResponses,
            ShuttingDown: { description: SHUTTING_DOWN, content: { 'application/json': { schema: { $ref: '#/components/schemas/ShuttingDown' } } } },
            ShuttingDownHead: { description: SHUTTING_DOWN },
          },
          headers: RESPONSE_HEADERS,
          securitySchemes: securitySchemes(),
        },
      } as never;
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, index) => (typeof json.$id === 'string' ? json.$id : `def-${index}`),
    },
  });
}
