// Schedules: run an action on a 5-field cron (in an IANA time zone) or once at a given time.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { DisabledReason, DisplayName, IdParams, NoContent, ref, Timestamp } from '../../platform/schemas.js';
import { MISSED_RUN_GRACE_MS, SCHEDULER_INTERVAL_MS, type ScheduleAction, type SchedulesService } from './service.js';
import type { Capability } from '../system/capability.js';

const Name = DisplayName();
const actionVariants = [
  Type.Object(
    {
      type: Type.Literal('set_state'),
      resourceId: Type.String({ minLength: 1, maxLength: 100 }),
      state: Type.Union([Type.Number(), Type.String(), Type.Boolean()]),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    { type: Type.Literal('publish_event'), eventType: Type.String({ minLength: 1, maxLength: 120 }), data: Type.Record(Type.String(), Type.Unknown()) },
    { additionalProperties: false },
  ),
];
const Action = Type.Union(actionVariants);
const ActionSchema = Type.Union(actionVariants, { $id: 'ScheduleAction', description: 'What a schedule does when it runs' });
const Cron = Type.String({ minLength: 9, maxLength: 200, description: '5 fields: minute hour day-of-month month day-of-week' });
const At = Type.String({ format: 'date-time', description: 'ISO 8601 time of a one-shot run' });
const Timezone = Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, default UTC' });

const ScheduleSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    cron: Type.Union([Type.String(), Type.Null()]),
    at: Type.Union([Timestamp, Type.Null()]),
    timezone: Type.String(),
    action: ref('ScheduleAction'),
    enabled: Type.Boolean(),
    disabledReason: DisabledReason,
    nextRunAt: Type.Union([Timestamp, Type.Null()]),
    lastRunAt: Type.Union([Timestamp, Type.Null()]),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Schedule' },
);
const ExecutionSchema = Type.Object(
  {
    scheduleId: Type.String(),
    scheduledFor: Timestamp,
    executedAt: Timestamp,
    outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
    error: Type.Optional(Type.String()),
    eventId: Type.Integer({ description: 'The schedule.executed event' }),
  },
  { $id: 'ScheduleExecution' },
);

export const scheduleSchemas = [ActionSchema, ScheduleSchema, ExecutionSchema];

export const scheduleRoutes: FastifyPluginAsyncTypebox<{ schedules: SchedulesService }> = async (app, { schedules }) => {
  const config = { auth: { scopes: ['schedules:manage' as const] } };

  app.post(
    '/api/v1/schedules',
    {
      config,
      schema: {
        operationId: 'createSchedule',
        summary: 'Create a schedule (set_state also needs resources:write; publish_event events:write)',
        tags: ['schedules'],
        body: Type.Object(
          {
            name: Name,
            cron: Type.Optional(Cron),
            at: Type.Optional(At),
            timezone: Type.Optional(Timezone),
            action: Action,
            enabled: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: { 201: ref('Schedule') },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await schedules.create(credentialOf(request), { ...request.body, action: request.body.action as ScheduleAction })),
  );

  app.get(
    '/api/v1/schedules',
    {
      config,
      schema: {
        operationId: 'listSchedules',
        summary: 'List schedules',
        tags: ['schedules'],
        response: { 200: Type.Object({ data: Type.Array(ref('Schedule')) }) },
      },
    },
    async (request) => ({ data: await schedules.list(credentialOf(request).accountId) }),
  );

  app.get(
    '/api/v1/schedules/:id',
    { config, schema: { operationId: 'getSchedule', summary: 'Get a schedule', tags: ['schedules'], params: IdParams, response: { 200: ref('Schedule') } } },
    async (request) => schedules.get(credentialOf(request).accountId, request.params.id),
  );

  app.patch(
    '/api/v1/schedules/:id',
    {
      config,
      schema: {
        operationId: 'updateSchedule',
        summary: 'Change a schedule (cron or at replaces the other)',
        tags: ['schedules'],
        params: IdParams,
        body: Type.Object(
          {
            name: Type.Optional(Name),
            cron: Type.Optional(Cron),
            at: Type.Optional(At),
            timezone: Type.Optional(Timezone),
            action: Type.Optional(Action),
            enabled: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: { 200: ref('Schedule') },
      },
    },
    async (request) =>
      schedules.update(credentialOf(request), request.params.id, { ...request.body, action: request.body.action as ScheduleAction | undefined }),
  );

  app.delete(
    '/api/v1/schedules/:id',
    { config, schema: { operationId: 'deleteSchedule', summary: 'Delete a schedule', tags: ['schedules'], params: IdParams, response: { 204: NoContent } } },
    async (request, reply) => {
      await schedules.delete(credentialOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v1/schedules/:id/run',
    {
      config,
      schema: {
        operationId: 'runSchedule',
        summary: 'Run the schedule’s action now (also needs the action’s scope: resources:write or events:write)',
        tags: ['schedules'],
        params: IdParams,
        response: { 200: ref('ScheduleExecution') },
      },
    },
    async (request) => schedules.runNow(credentialOf(request), request.params.id),
  );
};

export function schedulesCapability(): Capability {
  return {
    feature: {
      name: 'schedules',
      description: 'Cron (5 fields, IANA time zones) or one-shot schedules that set a state or publish an event',
      actions: ['set_state', 'publish_event'],
      cronFields: 5,
      checkIntervalSeconds: SCHEDULER_INTERVAL_MS / 1000,
      missedRunGraceMinutes: MISSED_RUN_GRACE_MS / 60_000,
    },
  };
}
