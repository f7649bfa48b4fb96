// Polling, publishing and streaming the account's event log.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { outcomeRecordOf } from '../../platform/idempotency.js';
import { sendJsonParts } from '../../platform/body-buffers.js';
import { invalidField } from '../../domain-errors.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { ref, Timestamp } from '../../platform/schemas.js';
import { parseTypeFilter, typeFilterSchema } from '../../platform/type-filter.js';
import { CUSTOM_EVENT_TYPE_PATTERN, CUSTOM_EVENT_TYPE_RULE, EVENT_BODY_LIMIT, eventJson, type Event } from './event.js';
import type { EventsService } from './service.js';
import type { EventReads } from './read-side.js';
import { STREAM_HEARTBEAT_MS, type StreamHub } from './stream.js';
import type { Capability } from '../system/capability.js';
import type { Config } from '../../config.js';

const CustomType = Type.String({ pattern: CUSTOM_EVENT_TYPE_PATTERN, description: CUSTOM_EVENT_TYPE_RULE });

/** One event type's shape: its `type` and its own `data`, so generated clients can tell them apart. */
const eventOfType = (id: string, type: TSchema, data: TSchema, description: string) =>
  Object.assign(
    Type.Object({ id: Type.Integer({ description: "Position in the account's event sequence" }), type, data, createdAt: Timestamp }, { description }),
    { $id: id },
  );
const resourceData = (description: string) => Type.Object({ resource: ref('Resource') }, { description });

const EventSchemas = [
  eventOfType('ResourceCreatedEvent', Type.Literal('resource.created'), resourceData('The resource as created'), 'A resource was created'),
  eventOfType(
    'ResourceUpdatedEvent',
    Type.Literal('resource.updated'),
    Type.Object(
      {
        resource: ref('Resource'),
        changed: Type.Array(Type.String(), { description: 'The sent fields whose value differs (empty when none did)' }),
      },
      { description: 'The resource after the change' },
    ),
    'A resource was changed',
  ),
  eventOfType('ResourceDeletedEvent', Type.Literal('resource.deleted'), resourceData('The resource as it was'), 'A resource was deleted'),
  eventOfType(
    'ScheduleExecutedEvent',
    Type.Literal('schedule.executed'),
    Type.Object({
      schedule: Type.Object({ id: Type.String(), name: Type.String() }),
      scheduledFor: Timestamp,
      executedAt: Timestamp,
      action: ref('ScheduleAction'),
      outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
      error: Type.Optional(Type.String({ description: 'Why the action failed' })),
    }),
    'A schedule ran',
  ),
  eventOfType(
    'CustomEvent',
    CustomType,
    Type.Record(Type.String(), Type.Unknown(), { description: 'What the publisher sent' }),
    'Published by a caller (custom.*)',
  ),
];
const EventSchema = Type.Union(
  EventSchemas.map((schema) => ref(schema.$id)),
  { $id: 'Event', description: 'Any event; `type` tells which' },
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
const TypeFilterParam = typeFilterSchema('custom.*');
/** What a publisher sends (POST /api/v1/events, and a batch's publish). */
export const PublishFields = { type: CustomType, data: Type.Record(Type.String(), Type.Unknown()) };
const PublishBody = Type.Object(PublishFields, { additionalProperties: false });

export const eventSchemas = [...EventSchemas, EventSchema, EventPage];

/** Last-Event-ID wins over `after`: a reconnecting client keeps its original URL. */
function streamCursor(lastEventId: string | undefined, after: number | undefined): number | undefined {
  if (lastEventId === undefined || lastEventId.trim() === '') return after;
  if (!/^\d{1,15}$/.test(lastEventId.trim())) throw invalidField('/Last-Event-ID', 'must be an event id (a non-negative integer)');
  return Number(lastEventId.trim());
}

/** The largest page of events. */
const MAX_PAGE_LIMIT = 1000;

export const eventRoutes: FastifyPluginAsyncTypebox<{ events: EventsService; reads: EventReads; streams: StreamHub }> = async (
  app,
  { events, reads, streams },
) => {
  app.get(
    '/api/v1/events',
    {
      config: { auth: { scopes: ['events:read'] } },
      schema: {
        operationId: 'listEvents',
        summary: 'Read events after a cursor, oldest first',
        tags: ['events'],
        querystring: Type.Object({
          after: Type.Integer({ minimum: 0, default: 0 }),
          limit: Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: 100 }),
          type: Type.Optional(TypeFilterParam),
        }),
        response: { 200: ref('EventPage'), 410: errorResponse('cursor_expired') },
      },
    },
    async (request, reply) => {
      const { after, limit, type } = request.query;
      const page = await reads.pageJson(credentialOf(request).accountId, { after, limit, type: parseTypeFilter(type) });
      return sendJsonParts(reply, page);
    },
  );

  app.post(
    '/api/v1/events',
    {
      // The bytes the event's row, streams and deliveries carry; the schema still documents them.
      config: { auth: { scopes: ['events:write'] }, outcome: { status: 201, payload: (event: Event) => eventJson(event) } },
      bodyLimit: EVENT_BODY_LIMIT,
      schema: { operationId: 'publishEvent', summary: 'Publish a custom event', tags: ['events'], body: PublishBody, response: { 201: ref('CustomEvent') } },
    },
    async (request) => events.publishCustom(credentialOf(request).accountId, request.body.type, request.body.data, outcomeRecordOf(request)),
  );

  app.get(
    '/api/v1/events/stream',
    {
      // A HEAD would open a stream that sends no body and holds a place of the account's streams.
      exposeHeadRoute: false,
      config: { auth: { scopes: ['events:read'] } },
      schema: {
        operationId: 'streamEvents',
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
          410: errorResponse('cursor_expired'),
          429: errorResponse('rate_limited', 'the rate limit, or the open streams allowed per account, is reached; Retry-After says when to try again'),
        },
      },
    },
    async (request, reply) => {
      const credential = credentialOf(request);
      const { accountId } = credential;
      const requested = streamCursor(request.headers['last-event-id'], request.query.after);
      // With a cursor, an expired one is refused before the stream starts; without one, it starts now.
      let after = requested;
      if (after === undefined) after = await reads.newestId(accountId);
      else await reads.checkCursor(accountId, after);
      await streams.open(reply, { credential, after, type: parseTypeFilter(request.query.type) });
      return reply;
    },
  );
};

export function eventsCapability(config: Config): Capability {
  return {
    feature: {
      name: 'events',
      description: 'Per-account event log: cursor polling, custom events, Server-Sent Events stream',
      retention: config.eventRetention,
      maxPageLimit: MAX_PAGE_LIMIT,
      streamLimitPerAccount: config.streamLimitPerAccount,
      streamHeartbeatSeconds: STREAM_HEARTBEAT_MS / 1000,
    },
    limits: { eventRetention: config.eventRetention },
  };
}
