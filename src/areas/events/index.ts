import { pluginRoutes, type Area } from '../area.js';
import { eventRoutes, eventSchemas, eventsCapability } from './routes.js';

export const eventsArea: Area = {
  name: 'events',
  schemas: eventSchemas,
  capability: eventsCapability,
  registerRoutes: pluginRoutes(eventRoutes, ({ services, streams }) => ({ events: services.events, reads: services.eventReads, streams })),
  registerReactions({ domain, writes, services, streams }) {
    writes.afterCommit(services.events.committed);
    // A stream lives as long as its credential: it closes once the end committed (a rolled-back one leaves it open).
    domain.afterCommit('key.revoked', (key) => streams.closeFor(key.id));
    domain.afterCommit('credentials.ended', ({ ids }) => {
      for (const id of ids) streams.closeFor(id);
    });
  },
};
