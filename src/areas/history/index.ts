import { pluginRoutes, type Area } from '../area.js';
import { historyCapability, historyRoutes } from './routes.js';
import { historySchemas } from './schemas.js';

export const historyArea: Area = {
  name: 'history',
  schemas: historySchemas,
  capability: (config) =>
    historyCapability({ enabled: config.historyEnabled, retentionDays: config.historyRetentionDays, rollupDays: config.historyRollupDays }),
  registerRoutes: pluginRoutes(historyRoutes, ({ services }) => ({ history: services.history })),
  registerReactions({ writes, services }) {
    // Each state a write records is a point in the same transaction (or the same statement).
    writes.inside(services.history.reaction);
  },
};
