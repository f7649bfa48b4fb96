// Registered applications (apps:manage, which no OAuth token can hold).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { outcomeRecordOf } from '../../platform/idempotency.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { IdParams, NoContent, ref } from '../../platform/schemas.js';
import { MAX_APPS_PER_ACCOUNT, type AppsService } from './service.js';
import { CreateAppBody, MAX_REDIRECT_URIS, UpdateAppBody } from './schemas.js';
import type { Capability } from '../system/capability.js';

export { appSchemas } from './schemas.js';

export const appRoutes: FastifyPluginAsyncTypebox<{ apps: AppsService }> = async (app, { apps }) => {
  const config = { auth: { scopes: ['apps:manage' as const] } };

  app.post(
    '/api/v1/apps',
    {
      config: { ...config, outcome: { status: 201, secret: true } },
      schema: {
        operationId: 'createApp',
        summary: 'Register an application',
        tags: ['apps'],
        body: CreateAppBody,
        response: { 201: ref('AppWithSecret'), 409: errorResponse('conflict', `the account has ${MAX_APPS_PER_ACCOUNT} apps`) },
      },
    },
    async (request) => apps.create(credentialOf(request), request.body, outcomeRecordOf(request)),
  );

  app.get(
    '/api/v1/apps',
    {
      config,
      schema: { operationId: 'listApps', summary: 'List applications', tags: ['apps'], response: { 200: Type.Object({ data: Type.Array(ref('App')) }) } },
    },
    async (request) => ({ data: await apps.list(credentialOf(request).accountId) }),
  );

  app.get(
    '/api/v1/apps/:id',
    { config, schema: { operationId: 'getApp', summary: 'Get an application', tags: ['apps'], params: IdParams, response: { 200: ref('App') } } },
    async (request) => apps.get(credentialOf(request).accountId, request.params.id),
  );

  app.patch(
    '/api/v1/apps/:id',
    {
      config: { ...config, outcome: { status: 200 } },
      schema: {
        operationId: 'updateApp',
        summary: 'Change an application',
        tags: ['apps'],
        params: IdParams,
        body: UpdateAppBody,
        response: { 200: ref('App') },
      },
    },
    async (request) => apps.update(credentialOf(request), request.params.id, request.body, outcomeRecordOf(request)),
  );

  app.delete(
    '/api/v1/apps/:id',
    {
      config: { ...config, outcome: { status: 204, payload: () => undefined } },
      schema: {
        operationId: 'deleteApp',
        summary: 'Delete an application (ends its connections and tokens)',
        tags: ['apps'],
        params: IdParams,
        response: { 204: NoContent },
      },
    },
    async (request) => apps.delete(credentialOf(request), request.params.id, outcomeRecordOf(request)),
  );

  app.post(
    '/api/v1/apps/:id/rotate-secret',
    {
      config: { ...config, outcome: { status: 200, secret: true } },
      schema: {
        operationId: 'rotateAppSecret',
        summary: 'Replace the client secret',
        tags: ['apps'],
        params: IdParams,
        response: { 200: ref('AppWithSecret'), 409: errorResponse('conflict', 'a public app has no client secret') },
      },
    },
    async (request) => apps.rotateSecret(credentialOf(request), request.params.id, outcomeRecordOf(request)),
  );
};

export function appsCapability(): Capability {
  return { feature: { name: 'apps', description: 'Registered applications, public and confidential', maxRedirectUris: MAX_REDIRECT_URIS } };
}
