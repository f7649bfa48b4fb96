import type { Area } from '../area.js';
import { homeAssistantCapability, integrationRoutes, integrationSchemas } from './routes.js';

export const integrationsArea: Area = {
  name: 'integrations',
  schemas: integrationSchemas,
  capability: homeAssistantCapability,
  async registerRoutes(app, { services, clock }) {
    await app.register(integrationRoutes, { resources: services.resourceReads, clock, installationId: () => null });
  },
};
