import { pluginRoutes, type Area } from '../area.js';
import { installationRoutes, installationSchemas, installationsCapability } from './routes.js';

export const installationsArea: Area = {
  name: 'installations',
  schemas: installationSchemas,
  capability: installationsCapability,
  registerRoutes: pluginRoutes(installationRoutes, ({ services }) => ({ installations: services.installations })),
};
