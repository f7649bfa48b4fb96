import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { ref } from '../../platform/schemas.js';
import type { UsageService } from './service.js';
import type { Capability } from '../system/capability.js';

const Counts = {
  requests: Type.Integer(),
  errors: Type.Integer(),
  eventsCreated: Type.Integer(),
  webhookDeliveries: Type.Integer(),
};
const Usage = Type.Object(
  {
    data: Type.Array(Type.Object({ date: Type.String({ format: 'date' }), ...Counts })),
    totals: Type.Object(Counts),
  },
  { $id: 'Usage' },
);

export const usageSchemas = [Usage];

/** The most days of usage one request may ask for. */
const MAX_USAGE_DAYS = 90;

export const usageRoutes: FastifyPluginAsyncTypebox<{ usage: UsageService }> = async (app, { usage }) => {
  app.get(
    '/api/v1/usage',
    {
      config: { auth: { scopes: ['usage:read'] } },
      schema: {
        operationId: 'getUsage',
        summary: 'Daily usage of the account (UTC days, oldest first)',
        tags: ['usage'],
        querystring: Type.Object({ days: Type.Integer({ minimum: 1, maximum: MAX_USAGE_DAYS, default: 30 }) }),
        response: { 200: ref('Usage') },
      },
    },
    async (request) => usage.report(credentialOf(request).accountId, request.query.days),
  );
};

export function usageCapability(): Capability {
  return { feature: { name: 'usage', description: 'Daily request and error counts per account', maxDays: MAX_USAGE_DAYS } };
}
