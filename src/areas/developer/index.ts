import type { Area } from '../area.js';
import { developerCapability, developerRoutes, developerSchemas, developerSecuritySchemes } from './routes.js';

export const developerArea: Area = {
  name: 'developer',
  schemas: developerSchemas,
  securitySchemes: developerSecuritySchemes,
  capability: developerCapability,
  async registerRoutes(app, { config, services }) {
    await app.register(developerRoutes, { developer: services.developer, sessionTtlSeconds: config.developerSessionTtlSeconds });
  },
};
