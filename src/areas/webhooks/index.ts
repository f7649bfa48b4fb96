import { pluginRoutes, type Area } from '../area.js';
import { webhookRoutes, webhooksCapability } from './routes.js';
import { webhookSchemas } from './schemas.js';

export const webhooksArea: Area = {
  name: 'webhooks',
  schemas: webhookSchemas,
  capability: webhooksCapability,
  registerRoutes: pluginRoutes(webhookRoutes, ({ services }) => ({ webhooks: services.webhooks })),
  registerReactions({ writes, services }) {
    // The outbox: deliveries are written in the same transaction as their events. An account
    // without webhooks (most) has none to write, so its writes may take one statement.
    writes.inside({
      name: 'webhook outbox',
      skippableWhen: { webhook_count: 0 },
      react: (exec, { accountId, events }) => services.webhooks.enqueue(exec, accountId, events),
    });
  },
};
