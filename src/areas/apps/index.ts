import { pluginRoutes, type Area } from '../area.js';
import { appRoutes, appsCapability } from './routes.js';
import { appSchemas } from './schemas.js';

export const appsArea: Area = {
  name: 'apps',
  schemas: appSchemas,
  capability: appsCapability,
  registerRoutes: pluginRoutes(appRoutes, ({ services }) => ({ apps: services.apps })),
};
