import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { outcomeRecordOf, type RouteOutcome } from '../../platform/idempotency.js';
import { sendJsonParts } from '../../platform/body-buffers.js';
import { IdParams, JSON_CONTENT_TYPE, NoContent, ref, withHeaders } from '../../platform/schemas.js';
import { TAGS_MAX, type ResourcesService, type VersionPrecondition } from './service.js';
import type { ResourceReads } from './read-side.js';
import { CreateResourceBody, RESOURCE_TYPES, ResourceTypeSchema, UpdateResourceBody, type Resource } from './schemas.js';
import type { Capability } from '../system/capability.js';
import { listedEtags } from '../../platform/etag.js';
import { sendNotModified } from '../../platform/http-contract.js';

// A version as ETag gives it (`"3"`), and the spellings the decisions accept (`W/"3"`, `3`).
const VERSION_TAG = '(?:W/"\\d{1,15}"|"\\d{1,15}"|\\d{1,15})';
/** If-Match holds versions the API issued, or `*`: any other tag could never match, so it is refused (400), not failed (412). */
const ConditionalHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      pattern: `^\\s*(?:\\*|${VERSION_TAG}(?:\\s*,\\s*${VERSION_TAG})*)\\s*$`,
      description: 'The version last read, as ETag gave it: "3" (W/"3" and 3 are read alike), several separated by commas, or *',
    }),
  ),
});

export { resourceSchemas } from './schemas.js';

/**
 * If-Match (or If-None-Match) as versions: `"3"`, `W/"3"`, `3`, a list of those, or `*`. If-Match
 * is refused by its schema unless it is that; in If-None-Match another tag matches no version.
 */
export function parseIfMatch(header: string | undefined): VersionPrecondition {
  const listed = listedEtags(header);
  if (listed === undefined || listed === '*') return listed;
  return listed.flatMap((tag) => (/^\d{1,15}$/.test(tag) ? [Number(tag)] : []));
}

const etagOf = (version: number) => `"${version}"`;

/** A write's answer: the resource, its version as ETag. */
const resourceOutcome = (status: number): RouteOutcome<Resource> => ({ status, headers: (resource) => ({ etag: etagOf(resource.version) }) });

/** The largest page of resources. */
const MAX_LIST_LIMIT = 500;

export const resourceRoutes: FastifyPluginAsyncTypebox<{ resources: ResourcesService; reads: ResourceReads }> = async (app, { resources, reads }) => {
  const read = { auth: { scopes: ['resources:read' as const] } };
  const write = { auth: { scopes: ['resources:write' as const] } };

  app.post(
    '/api/v1/resources',
    {
      config: { ...write, outcome: resourceOutcome(201) },
      schema: {
        operationId: 'createResource',
        summary: 'Create a resource',
        tags: ['resources'],
        body: CreateResourceBody,
        response: { 201: withHeaders(ref('Resource'), 'ETag') },
      },
    },
    async (request) => resources.create(credentialOf(request).accountId, request.body, outcomeRecordOf(request)),
  );

  app.get(
    '/api/v1/resources',
    {
      config: read,
      schema: {
        operationId: 'listResources',
        summary: 'List resources in creation order',
        tags: ['resources'],
        querystring: Type.Object({
          type: Type.Optional(ResourceTypeSchema),
          tag: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: TAGS_MAX, description: 'Repeatable; every tag must match' })),
          limit: Type.Integer({ minimum: 1, maximum: MAX_LIST_LIMIT, default: 50 }),
          offset: Type.Integer({ minimum: 0, default: 0 }),
        }),
        response: { 200: ref('ResourceList') },
      },
    },
    async (request, reply) => {
      const { type, tag, limit, offset } = request.query;
      const list = await reads.listJson(credentialOf(request).accountId, { type, tags: tag ?? [], limit, offset });
      return sendJsonParts(reply, list);
    },
  );

  app.get(
    '/api/v1/resources/:id',
    {
      config: read,
      schema: {
        operationId: 'getResource',
        summary: 'Get a resource',
        tags: ['resources'],
        params: IdParams,
        headers: Type.Object({ 'if-none-match': Type.Optional(Type.String()) }),
        response: { 200: withHeaders(ref('Resource'), 'ETag'), 304: withHeaders(NoContent, 'ETag') },
      },
    },
    async (request, reply) => {
      const { version, json } = await reads.getJson(credentialOf(request).accountId, request.params.id);
      reply.header('etag', etagOf(version));
      const ifNoneMatch = parseIfMatch(request.headers['if-none-match']);
      if (ifNoneMatch === '*' || (Array.isArray(ifNoneMatch) && ifNoneMatch.includes(version))) return sendNotModified(reply);
      return reply.type(JSON_CONTENT_TYPE).send(json);
    },
  );

  app.patch(
    '/api/v1/resources/:id',
    {
      config: { ...write, outcome: resourceOutcome(200) },
      schema: {
        operationId: 'updateResource',
        summary: 'Change some of a resource’s fields',
        tags: ['resources'],
        params: IdParams,
        headers: ConditionalHeaders,
        body: UpdateResourceBody,
        response: { 200: withHeaders(ref('Resource'), 'ETag') },
      },
    },
    async (request) =>
      resources.update(credentialOf(request).accountId, request.params.id, request.body, parseIfMatch(request.headers['if-match']), outcomeRecordOf(request)),
  );

  app.delete(
    '/api/v1/resources/:id',
    {
      config: { ...write, outcome: { status: 204, payload: () => undefined } },
      schema: {
        operationId: 'deleteResource',
        summary: 'Delete a resource',
        tags: ['resources'],
        params: IdParams,
        headers: ConditionalHeaders,
        response: { 204: NoContent },
      },
    },
    async (request) =>
      resources.delete(credentialOf(request).accountId, request.params.id, parseIfMatch(request.headers['if-match']), outcomeRecordOf(request)),
  );
};

export function resourcesCapability(): Capability {
  return {
    feature: { name: 'resources', description: 'Named data values with optimistic concurrency', types: [...RESOURCE_TYPES], maxListLimit: MAX_LIST_LIMIT },
  };
}
