// Registered applications (apps:manage, which no OAuth token can hold).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { DisplayName, IdParams, NoContent, ref, Timestamp } from '../../platform/schemas.js';
import type { AppsService } from './service.js';
import type { Capability } from '../system/capability.js';

const AppType = Type.Union([Type.Literal('public'), Type.Literal('confidential')]);
/** The most redirect URIs an app may register. */
const MAX_REDIRECT_URIS = 10;
const RedirectUris = Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
  minItems: 1,
  maxItems: MAX_REDIRECT_URIS,
  description: 'https, or http to a loopback host; matched exactly',
});
const Scopes = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 20 });

const appFields = {
  id: Type.String(),
  clientId: Type.String(),
  name: Type.String(),
  type: AppType,
  redirectUris: Type.Array(Type.String()),
  scopes: Type.Array(Type.String()),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};
const AppSchema = Type.Object(appFields, { $id: 'App' });
const AppWithSecret = Type.Object(
  { ...appFields, clientSecret: Type.Optional(Type.String({ description: 'Confidential apps only; shown only here' })) },
  { $id: 'AppWithSecret' },
);

export const appSchemas = [AppSchema, AppWithSecret];

export const appRoutes: FastifyPluginAsyncTypebox<{ apps: AppsService }> = async (app, { apps }) => {
  const config = { auth: { scopes: ['apps:manage' as const] } };

  app.post(
    '/api/v1/apps',
    {
      config,
      schema: {
        operationId: 'createApp',
        summary: 'Register an application',
        tags: ['apps'],
        body: Type.Object({ name: DisplayName(), type: AppType, redirectUris: RedirectUris, scopes: Scopes }, { additionalProperties: false }),
        response: { 201: ref('AppWithSecret') },
      },
    },
    async (request, reply) => reply.code(201).send(await apps.create(credentialOf(request), request.body)),
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
      config,
      schema: {
        operationId: 'updateApp',
        summary: 'Change an application',
        tags: ['apps'],
        params: IdParams,
        body: Type.Object(
          {
            name: Type.Optional(DisplayName()),
            redirectUris: Type.Optional(RedirectUris),
            scopes: Type.Optional(Scopes),
            type: Type.Optional(Type.Unknown({ description: 'Not changeable: sending it is an error' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: ref('App') },
      },
    },
    async (request) => apps.update(credentialOf(request), request.params.id, request.body as Parameters<AppsService['update']>[2]),
  );

  app.delete(
    '/api/v1/apps/:id',
    {
      config,
      schema: {
        operationId: 'deleteApp',
        summary: 'Delete an application (ends its connections and tokens)',
        tags: ['apps'],
        params: IdParams,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      await apps.delete(credentialOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v1/apps/:id/rotate-secret',
    {
      config,
      schema: {
        operationId: 'rotateAppSecret',
        summary: 'Replace the client secret',
        tags: ['apps'],
        params: IdParams,
        response: { 200: ref('AppWithSecret') },
      },
    },
    async (request) => apps.rotateSecret(credentialOf(request), request.params.id),
  );
};

export function appsCapability(): Capability {
  return { feature: { name: 'apps', description: 'Registered applications, public and confidential', maxRedirectUris: MAX_REDIRECT_URIS } };
}
