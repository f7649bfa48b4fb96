import type { Area } from '../area.js';
import { installationRoutes, installationSchemas, installationsCapability } from './routes.js';

export const installationsArea: Area = {
  name: 'installations',
  schemas: installationSchemas,
  capability: installationsCapability,
  async registerRoutes(app, { services }) {
    await app.register(installationRoutes, { installations: services.installations });
  },
};
