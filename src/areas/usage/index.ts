import { pluginRoutes, type Area } from '../area.js';
import { usageCapability, usageRoutes, usageSchemas } from './routes.js';

export const usageArea: Area = {
  name: 'usage',
  schemas: usageSchemas,
  capability: usageCapability,
  registerRoutes: pluginRoutes(usageRoutes, ({ services }) => ({ usage: services.usage })),
};
