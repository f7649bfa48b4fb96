import type { Area } from '../area.js';
import { appRoutes, appsCapability } from './routes.js';
import { appSchemas } from './schemas.js';

export const appsArea: Area = {
  name: 'apps',
  schemas: appSchemas,
  capability: appsCapability,
  async registerRoutes(app, { services }) {
    await app.register(appRoutes, { apps: services.apps });
  },
};
