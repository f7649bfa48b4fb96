import { pluginRoutes, type Area } from '../area.js';
import { homeAssistantCapability, integrationRoutes, integrationSchemas } from './routes.js';

export const integrationsArea: Area = {
  name: 'integrations',
  schemas: integrationSchemas,
  capability: homeAssistantCapability,
  registerRoutes: pluginRoutes(integrationRoutes, ({ services, clock }) => ({ resources: services.resourceReads, clock, installationId: () => null })),
};
