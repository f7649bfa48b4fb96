import { pluginRoutes, type Area } from '../area.js';
import { developerCapability, developerRoutes, developerSchemas, developerSecuritySchemes } from './routes.js';

export const developerArea: Area = {
  name: 'developer',
  schemas: developerSchemas,
  securitySchemes: developerSecuritySchemes,
  capability: developerCapability,
  registerRoutes: pluginRoutes(developerRoutes, ({ config, services }) => ({
    developer: services.developer,
    sessionTtlSeconds: config.developerSessionTtlSeconds,
  })),
};
