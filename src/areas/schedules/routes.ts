// Schedules: run an action on a 5-field cron (in an IANA time zone) or once at a given time.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { credentialOf } from '../../platform/access.js';
import { outcomeRecordOf } from '../../platform/idempotency.js';
import { errorResponse } from '../../platform/openapi-responses.js';
import { IdParams, NoContent, ref } from '../../platform/schemas.js';
import { MAX_SCHEDULES_PER_ACCOUNT, MISSED_RUN_GRACE_MS, SCHEDULER_INTERVAL_MS, type SchedulesService } from './service.js';
import { CreateScheduleBody, UpdateScheduleBody } from './schemas.js';
import type { Capability } from '../system/capability.js';

export { scheduleSchemas } from './schemas.js';

export const scheduleRoutes: FastifyPluginAsyncTypebox<{ schedules: SchedulesService }> = async (app, { schedules }) => {
  const config = { auth: { scopes: ['schedules:manage' as const] } };

  app.post(
    '/api/v1/schedules',
    {
      config: { ...config, outcome: { status: 201 } },
      schema: {
        operationId: 'createSchedule',
        summary: 'Create a schedule (set_state also needs resources:write; publish_event events:write)',
        tags: ['schedules'],
        body: CreateScheduleBody,
        response: { 201: ref('Schedule'), 409: errorResponse('conflict', `the account has ${MAX_SCHEDULES_PER_ACCOUNT} schedules`) },
      },
    },
    async (request) => schedules.create(credentialOf(request), request.body, outcomeRecordOf(request)),
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
      config: { ...config, outcome: { status: 200 } },
      schema: {
        operationId: 'updateSchedule',
        summary: 'Change a schedule (cron or at replaces the other)',
        tags: ['schedules'],
        params: IdParams,
        body: UpdateScheduleBody,
        response: { 200: ref('Schedule') },
      },
    },
    async (request) => schedules.update(credentialOf(request), request.params.id, request.body, outcomeRecordOf(request)),
  );

  app.delete(
    '/api/v1/schedules/:id',
    {
      config: { ...config, outcome: { status: 204, payload: () => undefined } },
      schema: { operationId: 'deleteSchedule', summary: 'Delete a schedule', tags: ['schedules'], params: IdParams, response: { 204: NoContent } },
    },
    async (request) => schedules.delete(credentialOf(request), request.params.id, outcomeRecordOf(request)),
  );

  app.post(
    '/api/v1/schedules/:id/run',
    {
      config: { ...config, outcome: { status: 200 } },
      schema: {
        operationId: 'runSchedule',
        summary: 'Run the schedule’s action now (also needs the action’s scope: resources:write or events:write)',
        tags: ['schedules'],
        params: IdParams,
        response: { 200: ref('ScheduleExecution') },
      },
    },
    async (request) => schedules.runNow(credentialOf(request), request.params.id, outcomeRecordOf(request)),
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
