// The Home Assistant integration: what it needs to know, and a snapshot of every resource with
// the event cursor that continues it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { API_VERSION } from '../../platform/api-version.js';
import { ref, Timestamp } from '../../platform/schemas.js';
import type { Clock } from '../../platform/clock.js';
import type { ResourceReads } from '../resources/read-side.js';
import { RESOURCE_TYPES } from '../resources/schemas.js';
import type { Capability } from '../system/capability.js';

export const HOME_ASSISTANT_DOMAIN = 'devdata';

const Info = Type.Object(
  {
    domain: Type.String(),
    name: Type.String(),
    version: Type.String(),
    supportedResourceTypes: Type.Array(Type.String()),
    endpoints: Type.Record(Type.String(), Type.String()),
    installationId: Type.Union([Type.String(), Type.Null()], { description: 'The installation that packages the integration, once one is built' }),
  },
  { $id: 'HomeAssistantInfo' },
);
const Snapshot = Type.Object(
  {
    resources: Type.Array(ref('Resource')),
    cursor: Type.Integer({ description: 'Follow events from here (`after`) to miss nothing and repeat nothing' }),
    oldestCursor: Type.Integer(),
    generatedAt: Timestamp,
  },
  { $id: 'HomeAssistantSnapshot' },
);

export const integrationSchemas = [Info, Snapshot];

export const integrationRoutes: FastifyPluginAsyncTypebox<{ resources: ResourceReads; clock: Clock; installationId: () => string | null }> = async (
  app,
  { resources, clock, installationId },
) => {
  app.get(
    '/api/v1/integrations/home-assistant',
    {
      config: { auth: { scopes: ['integrations:read'] } },
      schema: {
        operationId: 'getHomeAssistantInfo',
        summary: 'Home Assistant integration information',
        tags: ['integrations'],
        response: { 200: ref('HomeAssistantInfo') },
      },
    },
    async () => ({
      domain: HOME_ASSISTANT_DOMAIN,
      name: 'Developer Data Service',
      version: API_VERSION,
      supportedResourceTypes: [...RESOURCE_TYPES],
      endpoints: {
        snapshot: '/api/v1/integrations/home-assistant/snapshot',
        resources: '/api/v1/resources',
        events: '/api/v1/events',
        stream: '/api/v1/events/stream',
      },
      installationId: installationId(),
    }),
  );

  app.get(
    '/api/v1/integrations/home-assistant/snapshot',
    {
      config: { auth: { scopes: ['integrations:read', 'resources:read'] } },
      schema: {
        operationId: 'getHomeAssistantSnapshot',
        summary: 'Every resource and the event cursor they correspond to, read in one transaction',
        tags: ['integrations'],
        response: { 200: ref('HomeAssistantSnapshot') },
      },
    },
    async (request) => {
      const snapshot = await resources.snapshot(credentialOf(request).accountId);
      return { ...snapshot, generatedAt: clock.now().toISOString() };
    },
  );
};

export function homeAssistantCapability(): Capability {
  return { feature: { name: 'homeAssistant', description: 'Resource snapshots with an event cursor for Home Assistant' } };
}
