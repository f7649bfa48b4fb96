// GET /api/v1/auth/me and the API key management routes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { API_NAME, API_VERSION } from '../../platform/api-version.js';
import { DisplayName, IdParams, NoContent, ref, Timestamp } from '../../platform/schemas.js';
import { actorOf } from '../audit/service.js';
import { DEFAULT_KEY_DAYS, type KeysService } from './service.js';
import type { Capability } from '../system/capability.js';

/** The longest a key may be issued for, in days. */
export const MAX_KEY_DAYS = 365;

const ApiKey = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    scopes: Type.Array(Type.String()),
    createdAt: Timestamp,
    expiresAt: Timestamp,
    lastUsedAt: Type.Union([Timestamp, Type.Null()]),
  },
  { $id: 'ApiKey' },
);
const CreatedApiKey = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    scopes: Type.Array(Type.String()),
    createdAt: Timestamp,
    expiresAt: Timestamp,
    key: Type.String({ description: 'The secret; shown only in this response' }),
  },
  { $id: 'CreatedApiKey' },
);
const CredentialSummary = Type.Object(
  {
    account: Type.Object({ id: Type.String(), name: Type.String() }),
    credential: Type.Object({
      id: Type.String(),
      kind: Type.Union([Type.Literal('api_key'), Type.Literal('oauth_access_token')]),
      scopes: Type.Array(Type.String()),
      expiresAt: Timestamp,
      clientId: Type.Optional(Type.String()),
    }),
    api: Type.Object({ name: Type.String(), version: Type.String() }),
  },
  { $id: 'CredentialSummary' },
);
const CreateKeyBody = Type.Object(
  {
    name: DisplayName(),
    scopes: Type.Array(Type.String(), { maxItems: 20 }),
    expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_KEY_DAYS, default: DEFAULT_KEY_DAYS })),
  },
  { additionalProperties: false },
);

export const keySchemas = [ApiKey, CreatedApiKey, CredentialSummary];

export const keyRoutes: FastifyPluginAsyncTypebox<{ keys: KeysService }> = async (app, { keys }) => {
  app.get(
    '/api/v1/auth/me',
    {
      schema: { operationId: 'getCurrentCredential', summary: 'Describe the calling credential', tags: ['keys'], response: { 200: ref('CredentialSummary') } },
    },
    async (request) => {
      const credential = credentialOf(request);
      return {
        account: { id: credential.accountId, name: credential.accountName },
        credential: {
          id: credential.id,
          kind: credential.kind,
          scopes: credential.scopes,
          expiresAt: credential.expiresAt,
          ...(credential.clientId !== undefined && { clientId: credential.clientId }),
        },
        api: { name: API_NAME, version: API_VERSION },
      };
    },
  );

  app.get(
    '/api/v1/keys',
    {
      config: { auth: { scopes: ['keys:manage'] } },
      schema: {
        operationId: 'listApiKeys',
        summary: 'List active API keys',
        tags: ['keys'],
        response: { 200: Type.Object({ data: Type.Array(ref('ApiKey')) }) },
      },
    },
    async (request) => ({ data: await keys.list(credentialOf(request).accountId) }),
  );

  app.post(
    '/api/v1/keys',
    {
      config: { auth: { scopes: ['keys:manage'] } },
      schema: { operationId: 'createApiKey', summary: 'Create an API key', tags: ['keys'], body: CreateKeyBody, response: { 201: ref('CreatedApiKey') } },
    },
    async (request, reply) => {
      const created = await keys.create(credentialOf(request), request.body);
      const { lastUsedAt: _unused, ...body } = created;
      return reply.code(201).send(body);
    },
  );

  app.delete(
    '/api/v1/keys/:id',
    {
      config: { auth: { scopes: ['keys:manage'] } },
      schema: { operationId: 'revokeApiKey', summary: 'Revoke an API key immediately', tags: ['keys'], params: IdParams, response: { 204: NoContent } },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      await keys.revoke(credential.accountId, request.params.id, actorOf(credential));
      return reply.code(204).send(null);
    },
  );
};

export function keysCapability(): Capability {
  return {
    feature: { name: 'keys', description: 'API keys with scopes and expiry', maxExpiresInDays: MAX_KEY_DAYS },
    limits: { apiKeyExpiresInDays: { min: 1, max: MAX_KEY_DAYS, default: DEFAULT_KEY_DAYS } },
  };
}
