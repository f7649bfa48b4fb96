import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { ref, Timestamp } from '../../platform/schemas.js';
import { parseTypeFilter, typeFilterSchema } from '../../platform/type-filter.js';
import type { AuditService } from './service.js';
import type { Capability } from '../system/capability.js';
import { AUDIT_ORDERS, AUDIT_TYPES } from './service.js';

const AuditRecord = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    actor: Type.Record(Type.String(), Type.Unknown(), { description: 'Who acted: {kind, id?, clientId?}' }),
    target: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    data: Type.Record(Type.String(), Type.Unknown()),
    createdAt: Timestamp,
  },
  { $id: 'AuditRecord' },
);
const AuditPage = Type.Object(
  {
    data: Type.Array(ref('AuditRecord')),
    cursor: Type.Integer({ description: 'Pass as `after` to read on, in the same order' }),
    hasMore: Type.Boolean(),
  },
  { $id: 'AuditPage' },
);
const AuditQuery = Type.Object({
  after: Type.Integer({ minimum: 0, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  order: Type.Union(
    AUDIT_ORDERS.map((order) => Type.Literal(order)),
    {
      default: 'asc',
      description: 'asc: oldest first; desc: newest first. Either way `after=<cursor>` reads the next page, and 0 begins',
    },
  ),
  type: Type.Optional(typeFilterSchema('key.*')),
});

export const auditSchemas = [AuditRecord, AuditPage];

export const auditRoutes: FastifyPluginAsyncTypebox<{ audit: AuditService }> = async (app, { audit }) => {
  app.get(
    '/api/v1/audit',
    {
      config: { auth: { scopes: ['usage:read'] } },
      schema: {
        operationId: 'listAuditRecords',
        summary: 'Read the audit history, oldest or newest first',
        tags: ['usage'],
        querystring: AuditQuery,
        response: { 200: ref('AuditPage') },
      },
    },
    async (request) => {
      const { after, limit, order, type } = request.query;
      return audit.list(credentialOf(request).accountId, { after, limit, order, type: parseTypeFilter(type) });
    },
  );
};

export function auditCapability(): Capability {
  return {
    feature: { name: 'audit', description: 'Audit history of account changes, oldest or newest first', types: [...AUDIT_TYPES], orders: [...AUDIT_ORDERS] },
  };
}
