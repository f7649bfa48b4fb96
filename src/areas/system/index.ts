import type { Area } from '../area.js';
import { systemRoutes, systemSchemas } from './routes.js';

export const systemArea: Area = {
  name: 'system',
  schemas: systemSchemas,
  async registerRoutes(app, { config, services, capabilities }) {
    await app.register(systemRoutes, { config, system: services.system, capabilities });
  },
};
