import type { Insertable, Selectable } from 'kysely';
import type { Authorizer, CutOffReason } from '../../platform/credential.js';
import type { Executor, SchedulesTable } from '../../storage/schema.js';
import { nextCreatedSeq } from '../../storage/creation-order.js';
import type { ScheduleAction } from './schemas.js';

export interface ScheduleRow {
  id: string;
  accountId: string;
  name: string;
  cron: string | null;
  at: string | null;
  timezone: string;
  action: ScheduleAction;
  enabled: boolean;
  /** Why the service disabled it (its credential ended), or null. */
  disabledReason: CutOffReason | null;
  /** The credential that created it or last changed what it does; its runs stop when that ends. */
  authorizedBy: Authorizer;
  nextRunAt: string | null;
  lastRunAt: string | null;
  createdAt: string;
  updatedAt: string;
}

function toRow(row: Selectable<SchedulesTable>): ScheduleRow {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    cron: row.cron,
    at: row.at,
    timezone: row.timezone,
    action: JSON.parse(row.action) as ScheduleAction,
    enabled: Number(row.enabled) === 1,
    disabledReason: row.disabled_reason as CutOffReason | null,
    authorizedBy: { kind: row.authorized_by_kind as Authorizer['kind'], id: row.authorized_by_id },
    nextRunAt: row.next_run_at,
    lastRunAt: row.last_run_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toColumns(row: ScheduleRow): Insertable<SchedulesTable> {
  return {
    id: row.id,
    account_id: row.accountId,
    name: row.name,
    cron: row.cron,
    at: row.at,
    timezone: row.timezone,
    action: JSON.stringify(row.action),
    enabled: row.enabled ? 1 : 0,
    disabled_reason: row.disabledReason,
    authorized_by_kind: row.authorizedBy.kind,
    authorized_by_id: row.authorizedBy.id,
    next_run_at: row.nextRunAt,
    last_run_at: row.lastRunAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

export async function insertSchedule(db: Executor, row: ScheduleRow): Promise<void> {
  await db
    .insertInto('schedules')
    .values({ ...toColumns(row), created_seq: nextCreatedSeq('schedules', row.accountId) })
    .execute();
}

export async function updateSchedule(db: Executor, row: ScheduleRow): Promise<void> {
  const { id: _id, account_id: _account, created_at: _created, ...changes } = toColumns(row);
  await db.updateTable('schedules').set(changes).where('id', '=', row.id).execute();
}

export async function findSchedule(db: Executor, accountId: string, id: string): Promise<ScheduleRow | undefined> {
  const row = await db.selectFrom('schedules').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return row && toRow(row);
}

export async function listSchedules(db: Executor, accountId: string): Promise<ScheduleRow[]> {
  const rows = await db.selectFrom('schedules').selectAll().where('account_id', '=', accountId).orderBy('created_seq').orderBy('id').execute();
  return rows.map(toRow);
}

export async function deleteSchedule(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('schedules').where('id', '=', id).execute();
}

/**
 * Due schedules, taken round-robin by account: each account's oldest due run first, then each
 * one's second, and so on, so one account's many due runs never hold up the others'.
 */
export async function dueSchedules(db: Executor, nowIso: string, limit: number): Promise<ScheduleRow[]> {
  const rows = await db
    .selectFrom((qb) =>
      qb
        .selectFrom('schedules')
        .selectAll()
        .select((eb) =>
          eb.fn
            .agg<number>('row_number')
            .over((over) => over.partitionBy('account_id').orderBy('next_run_at').orderBy('id'))
            .as('turn'),
        )
        .where('enabled', '=', 1)
        .where('next_run_at', 'is not', null)
        .where('next_run_at', '<=', nowIso)
        .as('due'),
    )
    .selectAll()
    .orderBy('turn')
    .orderBy('next_run_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map(toRow);
}

export async function countSchedules(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('schedules')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** The schedules still acting on these credentials' authority. */
export async function schedulesAuthorizedBy(db: Executor, credentialIds: readonly string[]): Promise<ScheduleRow[]> {
  if (credentialIds.length === 0) return [];
  const rows = await db.selectFrom('schedules').selectAll().where('authorized_by_id', 'in', credentialIds).where('disabled_reason', 'is', null).execute();
  return rows.map(toRow);
}

/** Disables a schedule for a reason, no next run until it is enabled again; false when another transaction did first. */
export async function cutOffSchedule(db: Executor, id: string, reason: string, nowIso: string): Promise<boolean> {
  const result = await db
    .updateTable('schedules')
    .set({ enabled: 0, disabled_reason: reason, next_run_at: null, updated_at: nowIso })
    .where('id', '=', id)
    .where('disabled_reason', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The credentials that enabled schedules depend on. */
export async function activeScheduleAuthorizers(db: Executor): Promise<Authorizer[]> {
  const rows = await db
    .selectFrom('schedules')
    .select(['authorized_by_kind', 'authorized_by_id'])
    .distinct()
    .where('enabled', '=', 1)
    .where('disabled_reason', 'is', null)
    .execute();
  return rows.map((row) => ({ kind: row.authorized_by_kind as Authorizer['kind'], id: row.authorized_by_id }));
}

/**
 * Claims one scheduled time: moves next_run_at on only if it still holds `scheduledFor`. Of
 * several processes racing for the same run, exactly one sees its update succeed.
 */
export async function claimRun(
  db: Executor,
  id: string,
  scheduledFor: string,
  next: { nextRunAt: string | null; enabled: boolean; lastRunAt: string | null; updatedAt: string },
): Promise<boolean> {
  const result = await db
    .updateTable('schedules')
    .set({ next_run_at: next.nextRunAt, enabled: next.enabled ? 1 : 0, last_run_at: next.lastRunAt, updated_at: next.updatedAt })
    .where('id', '=', id)
    .where('next_run_at', '=', scheduledFor)
    .where('enabled', '=', 1)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The time of a run made on request (run now), which leaves the timing alone. */
export async function recordRun(db: Executor, id: string, lastRunAt: string): Promise<void> {
  await db.updateTable('schedules').set({ last_run_at: lastRunAt }).where('id', '=', id).execute();
}
