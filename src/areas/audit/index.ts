import { pluginRoutes, type Area } from '../area.js';
import { auditCapability, auditRoutes, auditSchemas } from './routes.js';

export const auditArea: Area = {
  name: 'audit',
  schemas: auditSchemas,
  capability: auditCapability,
  registerRoutes: pluginRoutes(auditRoutes, ({ services }) => ({ audit: services.audit })),
};
