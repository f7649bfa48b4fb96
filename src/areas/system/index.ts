import { pluginRoutes, type Area } from '../area.js';
import { systemRoutes, systemSchemas } from './routes.js';
import { idempotencyFeature } from '../../platform/idempotency.js';

export const systemArea: Area = {
  name: 'system',
  schemas: systemSchemas,
  // Idempotency-Key is the HTTP layer's, for every write; its line of the catalogue is said here.
  capability: () => ({ feature: idempotencyFeature() }),
  registerRoutes: pluginRoutes(systemRoutes, ({ config, services, capabilities }) => ({ config, system: services.system, capabilities })),
};
