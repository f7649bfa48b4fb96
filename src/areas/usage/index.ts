import type { Area } from '../area.js';
import { usageCapability, usageRoutes, usageSchemas } from './routes.js';

export const usageArea: Area = {
  name: 'usage',
  schemas: usageSchemas,
  capability: usageCapability,
  async registerRoutes(app, { services }) {
    await app.register(usageRoutes, { usage: services.usage });
  },
};
