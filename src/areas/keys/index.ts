import type { Area } from '../area.js';
import { keyRoutes, keysCapability } from './routes.js';
import { keySchemas } from './schemas.js';

export const keysArea: Area = {
  name: 'keys',
  schemas: keySchemas,
  capability: keysCapability,
  async registerRoutes(app, { services }) {
    await app.register(keyRoutes, { keys: services.keys });
  },
};
