// The history's routes (api-decisions §13): a resource's points or buckets, several resources'
// at once, and backfill. Bodies are built as JSON text: a page of 10,000 points is one
// JSON.stringify, not a serializer choosing between the union's shapes point by point.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { outcomeRecordOf } from '../../platform/idempotency.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { IdParams, JSON_CONTENT_TYPE, ref, Timestamp } from '../../platform/schemas.js';
import { invalidField } from '../../domain-errors.js';
import type { Capability } from '../system/capability.js';
import { BUCKET_NAMES, BUCKETS, HISTORY_LIMITS } from './points.js';
import { BackfillBody, BucketNameSchema } from './schemas.js';
import type { HistoryService, PointsQuery } from './service.js';

export { historySchemas } from './schemas.js';

/** Backfilled points counted against the rate limit as one request. */
const POINTS_PER_COUNTED_REQUEST = 1000;

const RangeFields = {
  from: Type.Optional({ ...Timestamp, description: 'Start of the range, inclusive (default: now minus 24 hours)' }),
  to: Type.Optional({ ...Timestamp, description: 'End of the range, exclusive (default: now, this millisecond included)' }),
};
const PageFields = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: HISTORY_LIMITS.points, description: `Points per page (default ${HISTORY_LIMITS.defaultPoints})` })),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { description: 'Oldest first (asc, default) or newest first' })),
};
const BucketField = {
  bucket: Type.Optional(BucketNameSchema),
};

/** Paging fields make no sense with buckets: refused rather than ignored. */
function refusePagingWithBuckets(query: { bucket?: string; limit?: number; order?: string; cursor?: string }): void {
  if (query.bucket === undefined) return;
  for (const field of ['limit', 'order', 'cursor'] as const) {
    if (query[field] !== undefined) throw invalidField(`/${field}`, 'applies to points; buckets come whole');
  }
}

const json = (value: unknown) => JSON.stringify(value);

export const historyRoutes: FastifyPluginAsyncTypebox<{ history: HistoryService }> = async (app, { history }) => {
  const read = { auth: { scopes: ['resources:read' as const] } };
  const write = { auth: { scopes: ['resources:write' as const] } };

  app.get(
    '/api/v1/resources/:id/history',
    {
      config: read,
      schema: {
        operationId: 'getResourceHistory',
        summary: 'A resource’s past states: points, or buckets for a chart',
        description:
          'Without `bucket`: the points with from ≤ at < to, a page at a time (`cursor` is the previous page’s). With `bucket`: the buckets from the one holding `from` to the last starting before `to` (at most 10,000), each with its count and last state, for sensors min/max/mean of the numeric points, for binary_sensor and switch the seconds spent true. Raw points are kept HISTORY_RETENTION_DAYS, hourly aggregates HISTORY_ROLLUP_DAYS (see capabilities).',
        tags: ['history'],
        params: IdParams,
        querystring: Type.Object({
          ...RangeFields,
          ...BucketField,
          ...PageFields,
          cursor: Type.Optional({ ...Timestamp, description: 'The `cursor` of the previous page' }),
        }),
        response: {
          200: Type.Union([ref('HistoryPage'), ref('HistoryBuckets')]),
          400: errorResponse('invalid_request', 'from is not before to, the range spans more than 10,000 buckets, or paging was asked with buckets'),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { bucket, ...query } = request.query;
      refusePagingWithBuckets(request.query);
      const accountId = credentialOf(request).accountId;
      const result = bucket ? await history.buckets(accountId, id, bucket, query) : await history.points(accountId, id, query as PointsQuery);
      return reply.type(JSON_CONTENT_TYPE).send(json(result));
    },
  );

  app.post(
    '/api/v1/resources/:id/history',
    {
      config: {
        ...write,
        outcome: { status: 200, payload: json },
        requestsCounted: (body) => Math.ceil(((body as { points?: unknown[] })?.points?.length ?? 1) / POINTS_PER_COUNTED_REQUEST),
      },
      schema: {
        operationId: 'backfillResourceHistory',
        summary: 'Import readings taken earlier',
        description:
          'Stores points a device took while offline, or history from elsewhere, without events or a version change. Each `at` lies within the raw history kept and not after the resource’s `updatedAt`; each state fits the type; a point at an existing time replaces it. All or nothing: one refused point is a 400 naming it (`details[].path` `/points/<i>/…`) and nothing is stored. Counts as one request per 1,000 points against the rate limit.',
        tags: ['history'],
        params: IdParams,
        body: BackfillBody,
        response: { 200: ref('HistoryBackfillResult') },
      },
    },
    async (request) => history.backfill(credentialOf(request).accountId, request.params.id, request.body.points, outcomeRecordOf(request)),
  );

  app.get(
    '/api/v1/history',
    {
      config: read,
      schema: {
        operationId: 'getHistory',
        summary: 'Several resources’ history in one request (a dashboard)',
        description:
          'The same as each resource’s own history, for 1-50 resources in the order named: the first page of points (`limit` each; by default 1,000 or 10,000 divided among them, at most 10,000 in all), or buckets (at most 50,000 in all). A resource that does not exist makes the request a 404 naming it.',
        tags: ['history'],
        querystring: Type.Object({
          resource: Type.Array(Type.String({ minLength: 1, maxLength: 128 }), {
            minItems: 1,
            maxItems: HISTORY_LIMITS.resources,
            description: 'Repeatable: resource=<id>&resource=<id>',
          }),
          ...RangeFields,
          ...BucketField,
          ...PageFields,
        }),
        response: { 200: ref('HistoryOfResources'), 404: errorResponse('not_found', 'a named resource does not exist; `details[0].path` says which') },
      },
    },
    async (request, reply) => {
      refusePagingWithBuckets(request.query);
      const { resource, ...query } = request.query;
      const result = await history.many(credentialOf(request).accountId, resource, query);
      return reply.type(JSON_CONTENT_TYPE).send(json(result));
    },
  );
};

export function historyCapability(options: { enabled: boolean; retentionDays: number; rollupDays: number }): Capability {
  return {
    feature: {
      name: 'history',
      description: 'Every state a resource took, read as points or as buckets for a chart, and backfilled',
      recording: options.enabled,
      retentionDays: options.retentionDays,
      rollupDays: options.rollupDays,
      buckets: BUCKET_NAMES.map((name) => ({ name, seconds: BUCKETS[name] / 1000 })),
      maxBuckets: HISTORY_LIMITS.buckets,
      maxPointsPerPage: HISTORY_LIMITS.points,
      maxBackfillPoints: HISTORY_LIMITS.backfill,
      maxResourcesPerRequest: HISTORY_LIMITS.resources,
      maxBucketsPerRequestOfSeveral: HISTORY_LIMITS.manyBuckets,
    },
    limits: { historyRetentionDays: options.retentionDays, historyRollupDays: options.rollupDays },
  };
}
