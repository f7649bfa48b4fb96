import type { Area } from '../area.js';
import { auditCapability, auditRoutes, auditSchemas } from './routes.js';

export const auditArea: Area = {
  name: 'audit',
  schemas: auditSchemas,
  capability: auditCapability,
  async registerRoutes(app, { services }) {
    await app.register(auditRoutes, { audit: services.audit });
  },
};
