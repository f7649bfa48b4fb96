import { pluginRoutes, type Area } from '../area.js';
import { keyRoutes, keysCapability } from './routes.js';
import { keySchemas } from './schemas.js';

export const keysArea: Area = {
  name: 'keys',
  schemas: keySchemas,
  capability: keysCapability,
  registerRoutes: pluginRoutes(keyRoutes, ({ services }) => ({ keys: services.keys })),
};
