// Polling, publishing and streaming the account's event log.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { invalidField } from '../../platform/errors.js';
import { JSON_CONTENT_TYPE, ref, Timestamp } from '../../platform/schemas.js';
import { parseTypeFilter } from '../../platform/type-filter.js';
import type { EventsService } from './service.js';
import type { StreamHub } from './stream.js';

export const EVENT_BODY_LIMIT = 64 * 1024;

const EventSchema = Type.Object(
  {
    id: Type.Integer({ description: "Position in the account's event sequence" }),
    type: Type.String(),
    data: Type.Record(Type.String(), Type.Unknown()),
    createdAt: Timestamp,
  },
  { $id: 'Event' },
);
const EventPage = Type.Object(
  {
    data: Type.Array(ref('Event')),
    cursor: Type.Integer({ description: 'Pass as `after` in the next request' }),
    hasMore: Type.Boolean(),
    oldestCursor: Type.Integer({ description: 'Oldest cursor still retained' }),
  },
  { $id: 'EventPage' },
);
const TypeFilterParam = Type.String({
  minLength: 1,
  maxLength: 120,
  description: 'An exact event type, or a prefix ending in `.*` such as `custom.*`',
});
const PublishBody = Type.Object(
  {
    type: Type.String({ pattern: '^custom\\.[A-Za-z0-9_.:-]{1,100}$', description: '`custom.` followed by 1-100 of [A-Za-z0-9_.:-]' }),
    data: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: false },
);

export const eventSchemas = [EventSchema, EventPage];

/** Last-Event-ID wins over `after`: a reconnecting client keeps its original URL. */
function streamCursor(lastEventId: string | undefined, after: number | undefined): number | undefined {
  if (lastEventId === undefined || lastEventId.trim() === '') return after;
  if (!/^\d{1,15}$/.test(lastEventId.trim())) throw invalidField('/Last-Event-ID', 'must be an event id (a non-negative integer)');
  return Number(lastEventId.trim());
}

export const eventRoutes: FastifyPluginAsyncTypebox<{ events: EventsService; streams: StreamHub }> = async (app, { events, streams }) => {
  app.get(
    '/api/v1/events',
    {
      config: { auth: { scopes: ['events:read'] } },
      schema: {
        summary: 'Read events after a cursor, oldest first',
        tags: ['events'],
        querystring: Type.Object({
          after: Type.Integer({ minimum: 0, default: 0 }),
          limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
          type: Type.Optional(TypeFilterParam),
        }),
        response: { 200: ref('EventPage') },
      },
    },
    async (request, reply) => {
      const { after, limit, type } = request.query;
      const page = await events.pageJson(credentialOf(request).accountId, { after, limit, type: parseTypeFilter(type) });
      return reply.type(JSON_CONTENT_TYPE).send(page);
    },
  );

  app.post(
    '/api/v1/events',
    {
      config: { auth: { scopes: ['events:write'] } },
      bodyLimit: EVENT_BODY_LIMIT,
      schema: { summary: 'Publish a custom event', tags: ['events'], body: PublishBody, response: { 201: ref('Event') } },
    },
    async (request, reply) => {
      const event = await events.publishCustom(credentialOf(request).accountId, request.body.type, request.body.data);
      return reply.code(201).send(event);
    },
  );

  app.get(
    '/api/v1/events/stream',
    {
      config: { auth: { scopes: ['events:read'] } },
      schema: {
        summary: 'Follow events live (Server-Sent Events)',
        description:
          'Replays events after `Last-Event-ID` (or `after`), then sends new ones as they happen. Each message has `id`, `event` (the type) and `data` (the Event as JSON). Without a cursor the stream starts at the newest event. A comment line is sent every 15 seconds.',
        tags: ['events'],
        querystring: Type.Object({ after: Type.Optional(Type.Integer({ minimum: 0 })), type: Type.Optional(TypeFilterParam) }),
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ maxLength: 20 })) }),
        response: {
          200: {
            description: 'An event stream',
            content: { 'text/event-stream': { schema: Type.String({ description: 'SSE messages: id, event, data' }) } },
          },
        },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      const { accountId } = credential;
      const requested = streamCursor(request.headers['last-event-id'], request.query.after);
      // With a cursor, an expired one is refused before the stream starts; without one, it starts now.
      const after = requested === undefined ? await events.newestId(accountId) : (await events.checkCursor(accountId, requested), requested);
      await streams.open(reply, { credential, after, type: parseTypeFilter(request.query.type) });
      return reply;
    },
  );
};
