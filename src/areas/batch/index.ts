import { pluginRoutes, type Area } from '../area.js';
import { batchCapability, batchRoutes, batchSchemas } from './routes.js';

export const batchArea: Area = {
  name: 'batch',
  schemas: batchSchemas,
  capability: batchCapability,
  registerRoutes: pluginRoutes(batchRoutes, ({ services }) => ({ batches: services.batches })),
};
