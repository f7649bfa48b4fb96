import { pluginRoutes, type Area } from '../area.js';
import { systemRoutes, systemSchemas } from './routes.js';

export const systemArea: Area = {
  name: 'system',
  schemas: systemSchemas,
  registerRoutes: pluginRoutes(systemRoutes, ({ config, services, capabilities }) => ({ config, system: services.system, capabilities })),
};
