import { Cron } from 'croner';
import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import type { Credential } from '../../platform/credential.js';
import { ApiError, insufficientScope, invalidField, notFound } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { AuditService } from '../audit/service.js';
import type { Event, EventsService } from '../events/service.js';
import { actorOf } from '../keys/service.js';
import { stateProblem, type ResourcesService } from '../resources/service.js';
import { claimRun, deleteSchedule, dueSchedules, findSchedule, insertSchedule, listSchedules, updateSchedule, type ScheduleAction, type ScheduleRow } from './store.js';

export type { ScheduleAction };

/** A run missed while no server was up is made at start-up only if it is less late than this. */
export const MISSED_RUN_GRACE_MS = 60 * 60_000;
const CUSTOM_TYPE = /^custom\.[A-Za-z0-9_.:-]{1,100}$/;

export interface Schedule {
  id: string;
  name: string;
  cron: string | null;
  at: string | null;
  timezone: string;
  action: ScheduleAction;
  enabled: boolean;
  nextRunAt: string | null;
  lastRunAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ScheduleInput {
  name?: string;
  cron?: string | null;
  at?: string | null;
  timezone?: string;
  action?: ScheduleAction;
  enabled?: boolean;
}

export interface Execution {
  scheduleId: string;
  scheduledFor: string;
  executedAt: string;
  outcome: 'succeeded' | 'failed';
  error?: string;
  eventId: number;
}

function toSchedule(row: ScheduleRow): Schedule {
  const { accountId: _account, ...schedule } = row;
  return schedule;
}

function validTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

export class SchedulesService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly events: EventsService,
    private readonly resources: ResourcesService,
  ) {}

  /** The first run strictly after `after`, or null when there is none (a past `at`, a disabled schedule). */
  nextRun(row: Pick<ScheduleRow, 'cron' | 'at' | 'timezone' | 'enabled'>, after: Date): string | null {
    if (!row.enabled) return null;
    if (row.at !== null) return Date.parse(row.at) > after.getTime() ? new Date(row.at).toISOString() : null;
    const next = new Cron(row.cron as string, { timezone: row.timezone, paused: true }).nextRun(after);
    return next ? next.toISOString() : null;
  }

  private async validate(caller: Credential, row: ScheduleRow): Promise<void> {
    if ((row.cron === null) === (row.at === null)) throw invalidField('/cron', 'send exactly one of cron (5 fields) and at (an ISO time)');
    if (!validTimezone(row.timezone)) throw invalidField('/timezone', 'must be an IANA time zone such as Europe/Berlin');
    if (row.cron !== null) {
      if (row.cron.trim().split(/\s+/).length !== 5) throw invalidField('/cron', 'must have 5 fields: minute hour day-of-month month day-of-week');
      try {
        new Cron(row.cron, { timezone: row.timezone, paused: true });
      } catch (error) {
        throw invalidField('/cron', `is not a valid cron expression (${(error as Error).message})`);
      }
    }
    if (row.at !== null && (Number.isNaN(Date.parse(row.at)) || !/^\d{4}-\d{2}-\d{2}T/.test(row.at))) throw invalidField('/at', 'must be an ISO 8601 time');
    const action = row.action;
    if (action.type === 'set_state') {
      if (!caller.scopes.includes('resources:write')) throw insufficientScope(['schedules:manage', 'resources:write']);
      const resource = await this.resources.get(caller.accountId, action.resourceId).catch(() => undefined);
      if (!resource) throw invalidField('/action/resourceId', 'no such resource in this account');
      const problem = stateProblem(resource.type, action.state);
      if (problem) throw invalidField('/action/state', problem);
    } else {
      if (!caller.scopes.includes('events:write')) throw insufficientScope(['schedules:manage', 'events:write']);
      if (!CUSTOM_TYPE.test(action.eventType)) throw invalidField('/action/eventType', 'must be custom. followed by 1-100 of [A-Za-z0-9_.:-]');
    }
  }

  async create(caller: Credential, input: ScheduleInput & { name: string; action: ScheduleAction }): Promise<Schedule> {
    const now = this.clock.now();
    const row: ScheduleRow = {
      id: newId('sch'),
      accountId: caller.accountId,
      name: input.name.trim(),
      cron: input.cron ?? null,
      at: input.at ?? null,
      timezone: input.timezone ?? 'UTC',
      action: input.action,
      enabled: input.enabled ?? true,
      nextRunAt: null,
      lastRunAt: null,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
    };
    await this.validate(caller, row);
    if (row.at !== null && Date.parse(row.at) <= now.getTime()) throw invalidField('/at', 'must be in the future');
    row.nextRunAt = this.nextRun(row, now);
    await this.db.transaction().execute(async (trx) => {
      await insertSchedule(trx, row);
      await this.audit.record(trx, {
        accountId: caller.accountId,
        type: 'schedule.created',
        actor: actorOf(caller),
        target: { type: 'schedule', id: row.id },
        data: { name: row.name, cron: row.cron, at: row.at, timezone: row.timezone, action: row.action.type },
      });
    });
    return toSchedule(row);
  }

  async list(accountId: string): Promise<Schedule[]> {
    return (await listSchedules(this.db, accountId)).map(toSchedule);
  }

  async get(accountId: string, id: string): Promise<Schedule> {
    return toSchedule(await this.require(this.db, accountId, id));
  }

  private async require(exec: Executor, accountId: string, id: string): Promise<ScheduleRow> {
    const row = await findSchedule(exec, accountId, id);
    if (!row) throw notFound('Schedule');
    return row;
  }

  async update(caller: Credential, id: string, input: ScheduleInput): Promise<Schedule> {
    if (Object.values(input).every((value) => value === undefined)) {
      throw new ApiError(400, 'invalid_request', 'Send at least one of name, cron, at, timezone, action, enabled');
    }
    const current = await this.require(this.db, caller.accountId, id);
    const now = this.clock.now();
    // Setting one of cron and at replaces the other.
    const timing = input.cron != null ? { cron: input.cron, at: null } : input.at != null ? { cron: null, at: input.at } : { cron: current.cron, at: current.at };
    const next: ScheduleRow = {
      ...current,
      ...timing,
      name: input.name?.trim() ?? current.name,
      timezone: input.timezone ?? current.timezone,
      action: input.action ?? current.action,
      enabled: input.enabled ?? current.enabled,
      updatedAt: now.toISOString(),
    };
    await this.validate(caller, next);
    if (input.at != null && Date.parse(input.at) <= now.getTime()) throw invalidField('/at', 'must be in the future');
    next.nextRunAt = this.nextRun(next, now);
    await this.db.transaction().execute(async (trx) => {
      await updateSchedule(trx, next);
      await this.audit.record(trx, {
        accountId: caller.accountId,
        type: 'schedule.updated',
        actor: actorOf(caller),
        target: { type: 'schedule', id },
        data: { changed: Object.keys(input).filter((key) => input[key as keyof ScheduleInput] !== undefined), enabled: next.enabled },
      });
    });
    return toSchedule(next);
  }

  async delete(caller: Credential, id: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await this.require(trx, caller.accountId, id);
      await deleteSchedule(trx, id);
      await this.audit.record(trx, { accountId: caller.accountId, type: 'schedule.deleted', actor: actorOf(caller), target: { type: 'schedule', id } });
    });
  }

  /** Run now, outside the schedule's timing (which does not change). */
  async runNow(accountId: string, id: string): Promise<Execution> {
    const row = await this.require(this.db, accountId, id);
    return this.execute(row, this.clock.now().toISOString());
  }

  /**
   * Runs what is due. Each scheduled time is claimed by one conditional update, so with several
   * processes each run happens once; a run more than an hour late (the service was down) is
   * skipped, and the schedule moves on to its next time.
   */
  async runDue(limit = 100): Promise<Execution[]> {
    const now = this.clock.now();
    const executions: Execution[] = [];
    for (const row of await dueSchedules(this.db, now.toISOString(), limit)) {
      const scheduledFor = row.nextRunAt as string;
      const oneShot = row.at !== null;
      const nextRunAt = oneShot ? null : this.nextRun(row, now);
      const claimed = await claimRun(this.db, row.id, scheduledFor, {
        nextRunAt,
        enabled: !oneShot && row.enabled,
        lastRunAt: now.toISOString(),
        updatedAt: now.toISOString(),
      });
      if (!claimed) continue;
      if (now.getTime() - Date.parse(scheduledFor) > MISSED_RUN_GRACE_MS) continue;
      executions.push(await this.execute(row, scheduledFor));
    }
    return executions;
  }

  /** The action's own event and a schedule.executed event, committed together; a failing action is reported, not thrown. */
  private async execute(row: ScheduleRow, scheduledFor: string): Promise<Execution> {
    return this.events.transact(row.accountId, async (writer) => {
      let error: string | undefined;
      try {
        if (row.action.type === 'set_state') {
          await this.resources.updateWithin(writer, row.action.resourceId, { state: row.action.state });
        } else {
          await writer.append(row.action.eventType, row.action.data);
        }
      } catch (failure) {
        if (!(failure instanceof ApiError)) throw failure;
        error = failure.statusCode === 404 ? `resource ${row.action.type === 'set_state' ? row.action.resourceId : ''} no longer exists` : failure.message;
      }
      const executedAt = this.clock.now().toISOString();
      const outcome = error === undefined ? 'succeeded' : 'failed';
      const event: Event = await writer.append('schedule.executed', {
        schedule: { id: row.id, name: row.name },
        scheduledFor,
        executedAt,
        action: row.action,
        outcome,
        ...(error !== undefined ? { error } : {}),
      });
      return { scheduleId: row.id, scheduledFor, executedAt, outcome, ...(error !== undefined ? { error } : {}), eventId: event.id };
    });
  }
}
