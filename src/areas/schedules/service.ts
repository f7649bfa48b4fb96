import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { inTransaction, type OutcomeRecord } from '../../storage/transaction.js';
import type { Clock } from '../../platform/clock.js';
import { authorizerOf, type Authorizer, type Credential, type CutOffReason } from '../../platform/credential.js';
import { DomainError, conflict, insufficientScope, invalidField, notFound } from '../../domain-errors.js';
import { cutOffEach, type StandingAuthority, type StandingObjects } from '../../standing-authority.js';
import { CUSTOM_EVENT_TYPE, CUSTOM_EVENT_TYPE_RULE, customDataProblem, type Event } from '../events/event.js';
import { newId } from '../../platform/ids.js';
import { cronNext, normalisedAt, validTimezone } from './timing.js';
import type { AuditService } from '../audit/service.js';
import type { AccountWrites } from '../../account-writes/pipeline.js';
import { stateProblem, type ResourcesService } from '../resources/service.js';
import {
  activeScheduleAuthorizers,
  claimRun,
  countSchedules,
  cutOffSchedule,
  deleteSchedule,
  dueSchedules,
  findSchedule,
  insertSchedule,
  listSchedules,
  recordRun,
  schedulesAuthorizedBy,
  updateSchedule,
  type ScheduleRow,
} from './store.js';
import type { CreateSchedule, Execution, Schedule, ScheduleAction, ScheduleChanges } from './schemas.js';

/** How often each process looks for due runs. */
export const SCHEDULER_INTERVAL_MS = 1000;
/** A run missed while no server was up is made at start-up only if it is less late than this. */
export const MISSED_RUN_GRACE_MS = 60 * 60_000;
/** At most this many schedules per account (api-decisions §10). */
export const MAX_SCHEDULES_PER_ACCOUNT = 200;

function toSchedule(row: ScheduleRow): Schedule {
  const { accountId: _account, authorizedBy: _authorizer, ...schedule } = row;
  return schedule;
}

/** The scope a schedule's action needs, held by whoever creates, changes or runs it. */
function actionScope(action: ScheduleAction): 'resources:write' | 'events:write' {
  return action.type === 'set_state' ? 'resources:write' : 'events:write';
}

/** A change of what a schedule does or when (a rename is not): its author becomes the credential it depends on. */
function changesWhatItDoes(input: ScheduleChanges): boolean {
  return input.cron != null || input.at != null || input.timezone !== undefined || input.action !== undefined || input.enabled !== undefined;
}

/** Thrown inside a run's transaction when another process claimed the run first: rolls it back. */
class ClaimedElsewhere extends Error {}

export class SchedulesService implements StandingObjects {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly writes: AccountWrites,
    private readonly resources: ResourcesService,
    /** Re-checks a run's authorizer before it acts (src/standing-authority.ts). */
    private readonly authority: Pick<StandingAuthority, 'ended'>,
  ) {}

  /** The first run strictly after `after`, or null when there is none (a past `at`, a disabled schedule). */
  nextRun(row: Pick<ScheduleRow, 'cron' | 'at' | 'timezone' | 'enabled'>, after: Date): string | null {
    if (!row.enabled) return null;
    if (row.at !== null) return Date.parse(row.at) > after.getTime() ? row.at : null;
    return cronNext(row.cron as string, row.timezone, after)?.toISOString() ?? null;
  }

  private checkScope(caller: Credential, action: ScheduleAction): void {
    const scope = actionScope(action);
    if (!caller.scopes.includes(scope)) throw insufficientScope(['schedules:manage', scope]);
  }

  /**
   * The schedule as it would be stored (whether `at` lies ahead is up to the caller). With
   * `checkAction`, also the action: the caller's scope for it, the resource, the state, the type.
   */
  private async validate(caller: Credential, row: ScheduleRow, now: Date, checkAction: boolean): Promise<void> {
    if ((row.cron === null) === (row.at === null)) throw invalidField('/cron', 'send exactly one of cron (5 fields) and at (an ISO time)');
    if (!validTimezone(row.timezone)) throw invalidField('/timezone', 'must be an IANA time zone such as Europe/Berlin');
    if (row.cron !== null) {
      if (row.cron.trim().split(/\s+/).length !== 5) throw invalidField('/cron', 'must have 5 fields: minute hour day-of-month month day-of-week');
      let next: Date | null;
      try {
        next = cronNext(row.cron, row.timezone, now);
      } catch (error) {
        throw invalidField('/cron', `is not a valid cron expression (${(error as Error).message})`);
      }
      if (next === null) throw invalidField('/cron', 'never matches a time (for example 30 February)');
    }
    if (!checkAction) return;
    this.checkScope(caller, row.action);
    const action = row.action;
    if (action.type === 'set_state') {
      const resource = await this.resources.get(caller.accountId, action.resourceId).catch(() => undefined);
      if (!resource) throw invalidField('/action/resourceId', 'no such resource in this account');
      const problem = stateProblem(resource.type, action.state);
      if (problem) throw invalidField('/action/state', problem);
    } else {
      if (!CUSTOM_EVENT_TYPE.test(action.eventType)) throw invalidField('/action/eventType', `must be ${CUSTOM_EVENT_TYPE_RULE}`);
      const problem = customDataProblem(action.data);
      if (problem) throw invalidField('/action/data', problem);
    }
  }

  async create(caller: Credential, input: CreateSchedule, outcome?: OutcomeRecord): Promise<Schedule> {
    const now = this.clock.now();
    const row: ScheduleRow = {
      id: newId('sch'),
      accountId: caller.accountId,
      name: input.name.trim(),
      cron: input.cron ?? null,
      at: input.at == null ? null : normalisedAt(input.at),
      timezone: input.timezone ?? 'UTC',
      action: input.action,
      enabled: input.enabled ?? true,
      disabledReason: null,
      authorizedBy: authorizerOf(caller),
      nextRunAt: null,
      lastRunAt: null,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
    };
    // A one-shot time must lie ahead even when the schedule starts disabled.
    if (row.at !== null && Date.parse(row.at) <= now.getTime()) throw invalidField('/at', 'must be in the future');
    await this.validate(caller, row, now, true);
    row.nextRunAt = this.nextRun(row, now);
    return inTransaction(
      this.db,
      async (trx) => {
        // The audit record takes the account's row lock first, so two creates cannot both pass the cap.
        await this.audit.recordFor(
          trx,
          caller,
          'schedule.created',
          { type: 'schedule', id: row.id },
          { name: row.name, cron: row.cron, at: row.at, timezone: row.timezone, action: row.action.type },
        );
        if ((await countSchedules(trx, caller.accountId)) >= MAX_SCHEDULES_PER_ACCOUNT) {
          throw conflict(`An account may have at most ${MAX_SCHEDULES_PER_ACCOUNT} schedules`);
        }
        await insertSchedule(trx, row);
        return toSchedule(row);
      },
      outcome,
    );
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

  /** The schedule after a change, its next run not yet worked out. Setting one of cron and at replaces the other. */
  private changed(caller: Credential, current: ScheduleRow, input: ScheduleChanges, now: Date): ScheduleRow {
    const timing =
      input.cron != null
        ? { cron: input.cron, at: null }
        : input.at != null
          ? { cron: null, at: normalisedAt(input.at) }
          : { cron: current.cron, at: current.at };
    return {
      ...current,
      ...timing,
      name: input.name?.trim() ?? current.name,
      timezone: input.timezone ?? current.timezone,
      action: input.action ?? current.action,
      enabled: input.enabled ?? current.enabled,
      // Enabling lifts a cut-off; whoever changes what it does or when becomes its authorizer.
      disabledReason: input.enabled === true ? null : current.disabledReason,
      authorizedBy: changesWhatItDoes(input) ? authorizerOf(caller) : current.authorizedBy,
      updatedAt: now.toISOString(),
    };
  }

  async update(caller: Credential, id: string, input: ScheduleChanges, outcome?: OutcomeRecord): Promise<Schedule> {
    const changes = Object.keys(input).filter((key) => input[key as keyof ScheduleChanges] !== undefined);
    if (changes.length === 0) throw new DomainError('invalid_request', 'Send at least one of name, cron, at, timezone, action, enabled');
    if (input.cron != null && input.at != null) throw invalidField('/cron', 'send at most one of cron and at: setting one replaces the other');
    const now = this.clock.now();
    if (input.at != null && Date.parse(normalisedAt(input.at)) <= now.getTime()) throw invalidField('/at', 'must be in the future');
    const planned = this.changed(caller, await this.require(this.db, caller.accountId, id), input, now);
    if (input.enabled === true && planned.at !== null && Date.parse(planned.at) <= now.getTime()) {
      throw invalidField('/at', 'has passed: send a new at to enable this one-shot schedule again');
    }
    // The action is checked again when it is sent or the schedule is switched on; renaming,
    // retiming or pausing a schedule whose resource has gone stays possible.
    await this.validate(caller, planned, now, input.action !== undefined || input.enabled === true);
    // The next run is worked out again only when the timing changes, so renaming never moves or repeats a run.
    const retimed = input.cron != null || input.at != null || input.timezone !== undefined || input.enabled !== undefined;
    return inTransaction(
      this.db,
      async (trx) => {
        // The audit record comes first: it takes the account's row lock, which a run of this
        // schedule holds too, so the schedule is read again below only after any run in progress.
        await this.audit.recordFor(trx, caller, 'schedule.updated', { type: 'schedule', id }, { changed: changes });
        const next = this.changed(caller, await this.require(trx, caller.accountId, id), input, now);
        if (retimed) next.nextRunAt = this.nextRun(next, now);
        await updateSchedule(trx, next);
        return toSchedule(next);
      },
      outcome,
    );
  }

  async delete(caller: Credential, id: string, outcome?: OutcomeRecord): Promise<void> {
    await inTransaction(
      this.db,
      async (trx) => {
        await this.require(trx, caller.accountId, id);
        // Audit first, taking the account's lock (see update) before the schedule's row.
        await this.audit.recordFor(trx, caller, 'schedule.deleted', { type: 'schedule', id });
        await deleteSchedule(trx, id);
      },
      outcome,
    );
  }

  /** Run now, outside the schedule's timing (which does not change); the caller needs the action's scope too. */
  async runNow(caller: Credential, id: string, outcome?: OutcomeRecord): Promise<Execution> {
    const row = await this.require(this.db, caller.accountId, id);
    this.checkScope(caller, row.action);
    const now = this.clock.now().toISOString();
    return this.execute(row, now, (trx) => recordRun(trx, row.id, now), outcome);
  }

  /**
   * The time a due schedule runs for: the latest of its times up to now that is less than the
   * grace period late, so a run missed during an outage is made once (not once per missed time);
   * undefined when every missed time is older than that.
   */
  private runTime(row: ScheduleRow, now: Date): string | undefined {
    const due = row.nextRunAt as string;
    const oldestAllowed = now.getTime() - MISSED_RUN_GRACE_MS;
    if (row.at !== null) return Date.parse(due) > oldestAllowed ? due : undefined;
    const cron = row.cron as string;
    let latest: string | undefined;
    // A 5-field cron fires at most once a minute: at most 60 steps through the grace period.
    for (
      let time = cronNext(cron, row.timezone, new Date(Math.max(oldestAllowed, Date.parse(due) - 1)));
      time !== null && time <= now;
      time = cronNext(cron, row.timezone, time)
    ) {
      latest = time.toISOString();
    }
    return latest;
  }

  /**
   * Runs what is due. Each scheduled time is claimed by a conditional update inside the run's own
   * transaction, so with several processes each run happens exactly once, and a run that fails to
   * commit (a crash, a lost connection) is tried again at the next look. One failing schedule does
   * not hold up the others; the failures are reported together at the end.
   */
  async runDue(limit = 100): Promise<Execution[]> {
    const now = this.clock.now();
    const executions: Execution[] = [];
    const failures: unknown[] = [];
    const due = await dueSchedules(this.db, now.toISOString(), limit);
    // A run acts only while its authorizing credential lives: those that ended are cut off instead.
    const ended = await this.authority.ended(due.map((row) => row.authorizedBy));
    for (const row of due) {
      if (ended.has(row.authorizedBy.id)) continue;
      const scheduledFor = this.runTime(row, now);
      const oneShot = row.at !== null;
      const claim = async (exec: Executor) => {
        const claimed = await claimRun(exec, row.id, row.nextRunAt as string, {
          nextRunAt: oneShot ? null : this.nextRun(row, now),
          // A one-shot schedule disables itself once its time has come.
          enabled: !oneShot,
          lastRunAt: scheduledFor === undefined ? row.lastRunAt : now.toISOString(),
          updatedAt: now.toISOString(),
        });
        if (!claimed) throw new ClaimedElsewhere();
      };
      try {
        // A run too late to make is skipped: the schedule just moves on to its next time.
        if (scheduledFor === undefined) await claim(this.db);
        else executions.push(await this.execute(row, scheduledFor, claim));
      } catch (error) {
        if (!(error instanceof ClaimedElsewhere)) failures.push(error);
      }
    }
    if (failures.length > 0) throw new AggregateError(failures, `${failures.length} scheduled run(s) failed; they are tried again at the next look`);
    return executions;
  }

  /**
   * The action's own event and a schedule.executed event, committed together with `mark` (the
   * claim of a scheduled time, or the last-run time of a run-now). A failing action is reported in
   * the execution, not thrown.
   */
  private async execute(row: ScheduleRow, scheduledFor: string, mark: (exec: Executor) => Promise<void>, requestOutcome?: OutcomeRecord): Promise<Execution> {
    return this.writes.transaction(
      row.accountId,
      async (write) => {
        await mark(write.trx);
        let error: string | undefined;
        try {
          if (row.action.type === 'set_state') {
            await this.resources.updateIn(write, row.action.resourceId, { state: row.action.state });
          } else {
            await write.append(row.action.eventType, row.action.data);
          }
        } catch (failure) {
          if (!(failure instanceof DomainError)) throw failure;
          error = failure.code === 'not_found' && row.action.type === 'set_state' ? `resource ${row.action.resourceId} no longer exists` : failure.message;
        }
        const executedAt = this.clock.now().toISOString();
        const outcome = error === undefined ? 'succeeded' : 'failed';
        const event: Event = await write.append('schedule.executed', {
          schedule: { id: row.id, name: row.name },
          scheduledFor,
          executedAt,
          action: row.action,
          outcome,
          ...(error !== undefined ? { error } : {}),
        });
        return { scheduleId: row.id, scheduledFor, executedAt, outcome, ...(error !== undefined ? { error } : {}), eventId: event.id };
      },
      requestOutcome,
    );
  }

  /** Disables the schedules these ended credentials authorized, each with a `schedule.disabled` record. */
  async cutOffAuthorizedBy(exec: Executor, credentialIds: readonly string[], reason: CutOffReason): Promise<number> {
    const nowIso = this.clock.now().toISOString();
    const stopped = await cutOffEach(exec, this.audit, await schedulesAuthorizedBy(exec, credentialIds), {
      type: 'schedule.disabled',
      target: 'schedule',
      cutOff: (row) => cutOffSchedule(exec, row.id, reason, nowIso),
      data: (row) => ({ reason, credential: row.authorizedBy }),
    });
    return stopped.length;
  }

  /** The credentials that enabled schedules depend on, for the sweep of expiries. */
  activeAuthorizers(exec: Executor): Promise<Authorizer[]> {
    return activeScheduleAuthorizers(exec);
  }
}
