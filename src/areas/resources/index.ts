import { pluginRoutes, type Area } from '../area.js';
import { resourceRoutes, resourcesCapability } from './routes.js';
import { resourceSchemas } from './schemas.js';

export const resourcesArea: Area = {
  name: 'resources',
  schemas: resourceSchemas,
  capability: resourcesCapability,
  registerRoutes: pluginRoutes(resourceRoutes, ({ services }) => ({ resources: services.resources, reads: services.resourceReads })),
  registerReactions({ writes, services }) {
    // The accounts' resources in memory follow every commit, before the writer hears of it.
    writes.afterCommit(({ accountId, events }) => services.resourceReads.views.committed(accountId, events));
  },
};
