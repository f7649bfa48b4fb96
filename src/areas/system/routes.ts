// Public endpoints: liveness, readiness, status, API info, capabilities, the OpenAPI document, echo.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../../config.js';
import { ALL_SCOPES } from '../../platform/scopes.js';
import { API_NAME, API_VERSION } from '../../platform/api-version.js';
import { openApiJson } from '../../platform/openapi.js';
import { JSON_CONTENT_TYPE, ref, Timestamp } from '../../platform/schemas.js';
import { BODY_LIMIT } from '../../platform/request-limits.js';
import { WINDOW_MS } from '../../platform/rate-limit.js';
import { MAX_APPS_PER_ACCOUNT } from '../apps/service.js';
import { EVENT_TYPES } from '../events/event.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT } from '../keys/service.js';
import { MAX_SCHEDULES_PER_ACCOUNT } from '../schedules/service.js';
import { MAX_WEBHOOKS_PER_ACCOUNT } from '../webhooks/service.js';
import type { Capability } from './capability.js';
import type { SystemService } from './service.js';

export const ECHO_BODY_LIMIT = 16 * 1024;

const StorageCheck = Type.Object({ status: Type.Union([Type.Literal('ok'), Type.Literal('error')]) });
const Readiness = Type.Object(
  { status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]), checks: Type.Object({ storage: StorageCheck }) },
  { $id: 'Readiness' },
);
const Status = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
    ready: Type.Boolean(),
    version: Type.String(),
    uptimeSeconds: Type.Integer(),
    startedAt: Timestamp,
    checks: Type.Object({
      storage: Type.Object({ status: Type.Union([Type.Literal('ok'), Type.Literal('error')]), latencyMs: Type.Number() }),
    }),
    workers: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown())),
  },
  { $id: 'Status' },
);
const ApiInfo = Type.Object({ name: Type.String(), version: Type.String() }, { $id: 'ApiInfo' });
const Count = (description: string) => Type.Integer({ minimum: 1, description });
/** The limits every deployment has; each area adds entries of its own (hence additionalProperties). */
const Limits = Type.Object(
  {
    rateLimitPerMinute: Count('Requests per credential per window'),
    rateLimitAccountPerMinute: Count("Requests per account per window, all of the account's credentials together"),
    rateLimitAnonPerMinute: Count('Requests per IP per window without a valid credential'),
    rateLimitWindowSeconds: Count('The rate-limit window'),
    requestBodyBytes: Count('Largest request body'),
    echoBodyBytes: Count('Largest body of POST /api/v1/echo'),
    echoMessageLength: Count('Longest message of POST /api/v1/echo'),
    activeApiKeysPerAccount: Count('Active API keys an account may hold (409 conflict beyond)'),
    appsPerAccount: Count('Apps an account may register (409 conflict beyond)'),
    schedulesPerAccount: Count('Schedules an account may have (409 conflict beyond)'),
    webhooksPerAccount: Count('Webhooks an account may have (409 conflict beyond)'),
  },
  { additionalProperties: true },
);
const Capabilities = Type.Object(
  {
    features: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown())),
    scopes: Type.Array(Type.String()),
    eventTypes: Type.Array(Type.String()),
    limits: Limits,
  },
  { $id: 'Capabilities' },
);
const ECHO_MESSAGE_MAX = 1000;
const EchoRequest = Type.Object({ message: Type.String({ minLength: 1, maxLength: ECHO_MESSAGE_MAX }) }, { additionalProperties: false });
const EchoResponse = Type.Object({ message: Type.String(), receivedAt: Timestamp }, { $id: 'Echo' });

export const systemSchemas = [Readiness, Status, ApiInfo, Capabilities, EchoResponse];

export const systemRoutes: FastifyPluginAsyncTypebox<{
  config: Config;
  system: SystemService;
  /** Each other area's line of the catalogue and its limits. */
  capabilities: Capability[];
}> = async (app, { config, system, capabilities: areas }) => {
  app.get(
    '/health',
    {
      config: { auth: 'unmetered' },
      schema: {
        operationId: 'getLiveness',
        summary: 'Liveness (legacy); never rate limited',
        tags: ['system'],
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/api/v1/health',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'getReadiness',
        summary: 'Readiness: includes a storage read',
        tags: ['system'],
        response: { 200: ref('Readiness'), 503: ref('Readiness') },
      },
    },
    async (_request, reply) => {
      const storage = await system.checkStorage();
      const ready = storage.status === 'ok';
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks: { storage: { status: storage.status } } });
    },
  );

  app.get(
    '/api/v1/status',
    {
      config: { auth: 'public' },
      schema: { operationId: 'getStatus', summary: 'Service status', tags: ['system'], response: { 200: ref('Status'), 503: ref('Status') } },
    },
    async (_request, reply) => {
      const status = await system.status();
      return reply.code(status.ready ? 200 : 503).send(status);
    },
  );

  app.get(
    '/api/v1',
    { config: { auth: 'public' }, schema: { operationId: 'getApiInfo', summary: 'API name and version', tags: ['system'], response: { 200: ref('ApiInfo') } } },
    async () => ({ name: API_NAME, version: API_VERSION }),
  );

  const capabilities = {
    features: Object.fromEntries(areas.map(({ feature: { name, ...rest } }) => [name, rest])),
    scopes: ALL_SCOPES,
    eventTypes: [...EVENT_TYPES],
    limits: {
      rateLimitPerMinute: config.rateLimitPerMinute,
      rateLimitAccountPerMinute: config.rateLimitAccountPerMinute,
      rateLimitAnonPerMinute: config.rateLimitAnonPerMinute,
      rateLimitWindowSeconds: WINDOW_MS / 1000,
      requestBodyBytes: BODY_LIMIT,
      echoBodyBytes: ECHO_BODY_LIMIT,
      echoMessageLength: ECHO_MESSAGE_MAX,
      // The per-account caps (api-decisions §10) side by side, from the constants their services check.
      activeApiKeysPerAccount: MAX_ACTIVE_KEYS_PER_ACCOUNT,
      appsPerAccount: MAX_APPS_PER_ACCOUNT,
      schedulesPerAccount: MAX_SCHEDULES_PER_ACCOUNT,
      webhooksPerAccount: MAX_WEBHOOKS_PER_ACCOUNT,
      ...Object.assign({}, ...areas.map((area) => area.limits ?? {})),
    },
  };
  app.get(
    '/api/v1/capabilities',
    {
      config: { auth: 'public' },
      schema: { operationId: 'getCapabilities', summary: 'Feature discovery', tags: ['system'], response: { 200: ref('Capabilities') } },
    },
    async () => capabilities,
  );

  app.get(
    '/openapi.json',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'getOpenApiDocument',
        summary: 'This OpenAPI 3.1 document',
        tags: ['system'],
        // Sent as the JSON text made once (openApiJson), hence the string type.
        response: { 200: Type.Unsafe<string>(Type.Object({}, { additionalProperties: true, description: 'An OpenAPI 3.1 document' })) },
      },
    },
    async (_request, reply) => reply.type(JSON_CONTENT_TYPE).send(openApiJson(app)),
  );

  app.post(
    '/api/v1/echo',
    {
      config: { auth: 'public' },
      bodyLimit: ECHO_BODY_LIMIT,
      schema: { operationId: 'echo', summary: 'Echo a message back', tags: ['system'], body: EchoRequest, response: { 200: ref('Echo') } },
    },
    async (request) => ({ message: request.body.message, receivedAt: new Date().toISOString() }),
  );
};
