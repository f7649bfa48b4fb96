// The API's shapes of schedules: the schemas the routes validate and document with, and the types
// the service and the store work with, derived from them.
import { Type, type Static } from 'typebox';
import { DisabledReason, DisplayName, ref, Timestamp } from '../../platform/schemas.js';

const SetState = Type.Object(
  {
    type: Type.Literal('set_state'),
    resourceId: Type.String({ minLength: 1, maxLength: 100 }),
    state: Type.Union([Type.Number(), Type.String(), Type.Boolean()]),
  },
  { additionalProperties: false },
);
const PublishEvent = Type.Object(
  { type: Type.Literal('publish_event'), eventType: Type.String({ minLength: 1, maxLength: 120 }), data: Type.Record(Type.String(), Type.Unknown()) },
  { additionalProperties: false },
);
/** In request bodies, inline; in responses, the ScheduleAction component. */
const Action = Type.Union([SetState, PublishEvent]);
const ActionSchema = Type.Union([SetState, PublishEvent], { $id: 'ScheduleAction', description: 'What a schedule does when it runs' });

const Name = DisplayName();
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
    action: ref(ActionSchema),
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

export const CreateScheduleBody = Type.Object(
  {
    name: Name,
    cron: Type.Optional(Cron),
    at: Type.Optional(At),
    timezone: Type.Optional(Timezone),
    action: Action,
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export const UpdateScheduleBody = Type.Object(
  {
    name: Type.Optional(Name),
    cron: Type.Optional(Cron),
    at: Type.Optional(At),
    timezone: Type.Optional(Timezone),
    action: Type.Optional(Action),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const scheduleSchemas = [ActionSchema, ScheduleSchema, ExecutionSchema];

export type ScheduleAction = Static<typeof ActionSchema>;
export type Schedule = Static<typeof ScheduleSchema>;
export type Execution = Static<typeof ExecutionSchema>;
export type CreateSchedule = Static<typeof CreateScheduleBody>;
export type ScheduleChanges = Static<typeof UpdateScheduleBody>;
