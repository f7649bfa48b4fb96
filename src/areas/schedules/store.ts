import type { Executor } from '../../storage/schema.js';
import { nextCreatedSeq } from '../../storage/creation-order.js';

export type ScheduleAction =
  | { type: 'set_state'; resourceId: string; state: number | string | boolean }
  | { type: 'publish_event'; eventType: string; data: Record<string, unknown> };

export interface ScheduleRow {
  id: string;
  accountId: string;
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

type Columns = {
  id: string;
  account_id: string;
  name: string;
  cron: string | null;
  at: string | null;
  timezone: string;
  action: string;
  enabled: number;
  next_run_at: string | null;
  last_run_at: string | null;
  created_at: string;
  updated_at: string;
};

function toRow(row: Columns): ScheduleRow {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    cron: row.cron,
    at: row.at,
    timezone: row.timezone,
    action: JSON.parse(row.action) as ScheduleAction,
    enabled: Number(row.enabled) === 1,
    nextRunAt: row.next_run_at,
    lastRunAt: row.last_run_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toColumns(row: ScheduleRow): Columns {
  return {
    id: row.id,
    account_id: row.accountId,
    name: row.name,
    cron: row.cron,
    at: row.at,
    timezone: row.timezone,
    action: JSON.stringify(row.action),
    enabled: row.enabled ? 1 : 0,
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

export async function dueSchedules(db: Executor, nowIso: string, limit: number): Promise<ScheduleRow[]> {
  const rows = await db
    .selectFrom('schedules')
    .selectAll()
    .where('enabled', '=', 1)
    .where('next_run_at', 'is not', null)
    .where('next_run_at', '<=', nowIso)
    .orderBy('next_run_at')
    .limit(limit)
    .execute();
  return rows.map(toRow);
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
