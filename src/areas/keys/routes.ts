// GET /api/v1/auth/me and the API key management routes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { outcomeRecordOf } from '../../platform/idempotency.js';
import { API_NAME, API_VERSION } from '../../platform/api-version.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { IdParams, NoContent, ref } from '../../platform/schemas.js';
import { actorOf } from '../audit/service.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT, type IssuedKey, type KeysService } from './service.js';
import { CreateKeyBody, DEFAULT_KEY_DAYS, ENDED_KEYS_LISTED, ListKeysQuery, MAX_KEY_DAYS, RenameKeyBody } from './schemas.js';
import type { Capability } from '../system/capability.js';

export { keySchemas } from './schemas.js';

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
        summary: 'List API keys: the active ones, or with status=all also those that ended last',
        tags: ['keys'],
        querystring: ListKeysQuery,
        response: { 200: Type.Object({ data: Type.Array(ref('ApiKey')) }) },
      },
    },
    async (request) => ({ data: await keys.list(credentialOf(request).accountId, request.query.status) }),
  );

  app.patch(
    '/api/v1/keys/:id',
    {
      config: { auth: { scopes: ['keys:manage'] }, outcome: { status: 200 } },
      schema: {
        operationId: 'renameApiKey',
        summary: 'Rename an active API key (its name is all that changes)',
        tags: ['keys'],
        params: IdParams,
        body: RenameKeyBody,
        response: { 200: ref('ApiKey') },
      },
    },
    async (request) => keys.rename(credentialOf(request), request.params.id, request.body.name, outcomeRecordOf(request)),
  );

  app.post(
    '/api/v1/keys',
    {
      config: { auth: { scopes: ['keys:manage'] }, outcome: { status: 201, payload: ({ lastUsedAt: _unused, ...shown }: IssuedKey) => shown, secret: true } },
      schema: {
        operationId: 'createApiKey',
        summary: 'Create an API key',
        tags: ['keys'],
        body: CreateKeyBody,
        response: {
          201: ref('CreatedApiKey'),
          409: errorResponse('conflict', `the account holds ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active API keys: revoke one first`),
        },
      },
    },
    async (request) => keys.create(credentialOf(request), request.body, outcomeRecordOf(request)),
  );

  app.delete(
    '/api/v1/keys/:id',
    {
      config: { auth: { scopes: ['keys:manage'] }, outcome: { status: 204, payload: () => undefined } },
      schema: { operationId: 'revokeApiKey', summary: 'Revoke an API key immediately', tags: ['keys'], params: IdParams, response: { 204: NoContent } },
    },
    async (request) => {
      const credential = credentialOf(request);
      await keys.revoke(credential.accountId, request.params.id, actorOf(credential), outcomeRecordOf(request));
    },
  );
};

export function keysCapability(): Capability {
  return {
    feature: {
      name: 'keys',
      description: 'API keys with scopes and expiry; renamed by PATCH; listed with their status, ended ones too with ?status=all',
      maxExpiresInDays: MAX_KEY_DAYS,
      endedKeysListed: ENDED_KEYS_LISTED,
    },
    limits: { apiKeyExpiresInDays: { min: 1, max: MAX_KEY_DAYS, default: DEFAULT_KEY_DAYS } },
  };
}
