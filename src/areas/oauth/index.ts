import { pluginRoutes, type Area } from '../area.js';
import { oauthCapability, oauthRoutes, oauthSchemas } from './routes.js';

export const oauthArea: Area = {
  name: 'oauth',
  schemas: oauthSchemas,
  capability: oauthCapability,
  registerRoutes: pluginRoutes(oauthRoutes, ({ services }) => ({ oauth: services.oauth })),
  registerReactions({ domain, services }) {
    // A connection ends with the key that approved it, and an app's grants with the app.
    domain.inside('key.revoked', (exec, key) => services.oauth.connections.endApprovedBy(exec, key.id));
    domain.inside('app.deleting', (exec, { app }) => services.oauth.connections.endAppGrants(exec, app));
  },
};
