// The statements of history's housekeeping (housekeeping.ts), each bounded: hourly aggregates
// built from points, stale hours built again, expired points and aggregates deleted, retired
// series removed. A series' row is locked (PostgreSQL) while its aggregates change, so a backfill
// and a build of the same series take turns.
import type { Transaction } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { isPostgres } from '../../storage/postgres-writes.js';
import { HOUR_MS } from './points.js';
import { spansFromPoints, type SpanRow } from './store.js';

/** Rows deleted by one statement. */
export const DELETE_CHUNK = 1000;

/** Series whose aggregates lag `before` (an hour's start), the most behind first. */
export async function seriesToRoll(db: Executor, before: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('history_series')
    .select('key')
    .where('retired', '=', 0)
    .where('rolled_until', '<', before)
    .orderBy('rolled_until')
    .limit(limit)
    .execute();
  return rows.map((row) => Number(row.key));
}

/** The series' row, locked until the transaction ends on PostgreSQL (SQLite's writer is alone). */
export async function lockSeries(trx: Transaction<Database>, key: number): Promise<{ rolledUntil: number } | undefined> {
  const row = await trx
    .selectFrom('history_series')
    .select('rolled_until')
    .where('key', '=', key)
    .where('retired', '=', 0)
    .$if(isPostgres(trx), (query) => query.forUpdate())
    .executeTakeFirst();
  return row && { rolledUntil: Number(row.rolled_until) };
}

/** The time of the series' first point with from ≤ at < to, if any. */
export async function firstPointAt(db: Executor, key: number, from: number, to: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('history_points')
    .select('at')
    .where('series', '=', key)
    .where('at', '>=', from)
    .where('at', '<', to)
    .orderBy('at')
    .limit(1)
    .executeTakeFirst();
  return row && Number(row.at);
}

/** Notes that a series' hours before `to` hold no point to aggregate. */
export async function skipEmptyHours(trx: Transaction<Database>, key: number, to: number): Promise<void> {
  await trx.updateTable('history_series').set({ rolled_until: to }).where('key', '=', key).execute();
}

/** Builds the hours [from, to) of a series from its points (replacing what was there), and notes how far it is built. */
export async function rollHours(trx: Transaction<Database>, key: number, from: number, to: number, now: number): Promise<number> {
  const spans = await spansFromPoints(trx, key, { from, end: to, size: HOUR_MS, now }, true);
  await writeHours(trx, key, spans);
  await trx.updateTable('history_series').set({ rolled_until: to }).where('key', '=', key).execute();
  return spans.length;
}

/** Stale hours, a batch of them, by series. */
export async function staleBatch(db: Executor, limit: number): Promise<Map<number, number[]>> {
  const rows = await db.selectFrom('history_stale').select(['series', 'hour']).orderBy('series').orderBy('hour').limit(limit).execute();
  const bySeries = new Map<number, number[]>();
  for (const row of rows) {
    const series = Number(row.series);
    bySeries.set(series, [...(bySeries.get(series) ?? []), Number(row.hour)]);
  }
  return bySeries;
}

/** Builds the stale hours of a series again from its points. */
export async function rebuildHours(trx: Transaction<Database>, key: number, hours: readonly number[], now: number): Promise<void> {
  for (const hour of hours) {
    const spans = await spansFromPoints(trx, key, { from: hour, end: hour + HOUR_MS, size: HOUR_MS, now }, true);
    await trx.deleteFrom('history_hours').where('series', '=', key).where('hour', '=', hour).execute();
    await writeHours(trx, key, spans);
  }
  await trx
    .deleteFrom('history_stale')
    .where('series', '=', key)
    .where('hour', 'in', [...hours])
    .execute();
}

async function writeHours(db: Executor, key: number, spans: readonly SpanRow[]): Promise<void> {
  for (let start = 0; start < spans.length; start += 200) {
    await db
      .insertInto('history_hours')
      .values(
        spans.slice(start, start + 200).map((span) => ({
          series: key,
          hour: span.start,
          count: span.count,
          numeric_count: span.numericCount,
          min: span.min,
          max: span.max,
          sum: span.sum,
          first_at: span.firstAt,
          last_at: span.lastAt,
          last_value: span.lastValue,
          last_text: span.lastText,
          true_ms: span.trueMs,
        })),
      )
      .onConflict((conflict) =>
        conflict.columns(['series', 'hour']).doUpdateSet((eb) => ({
          count: eb.ref('excluded.count'),
          numeric_count: eb.ref('excluded.numeric_count'),
          min: eb.ref('excluded.min'),
          max: eb.ref('excluded.max'),
          sum: eb.ref('excluded.sum'),
          first_at: eb.ref('excluded.first_at'),
          last_at: eb.ref('excluded.last_at'),
          last_value: eb.ref('excluded.last_value'),
          last_text: eb.ref('excluded.last_text'),
          true_ms: eb.ref('excluded.true_ms'),
        })),
      )
      .execute();
  }
}

/** Series in key order after `afterKey`, for a pass over all of them. */
export async function seriesAfter(db: Executor, afterKey: number, limit: number): Promise<Array<{ key: number; rolledUntil: number }>> {
  const rows = await db
    .selectFrom('history_series')
    .select(['key', 'rolled_until'])
    .where('retired', '=', 0)
    .where('key', '>', afterKey)
    .orderBy('key')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ key: Number(row.key), rolledUntil: Number(row.rolled_until) }));
}

/** Deletes up to DELETE_CHUNK of a series' points before `before`; returns how many. */
export async function deletePointsBefore(db: Executor, key: number, before: number): Promise<number> {
  const result = await db
    .deleteFrom('history_points')
    .where('series', '=', key)
    .where('at', 'in', (eb) =>
      eb.selectFrom('history_points').select('at').where('series', '=', key).where('at', '<', before).orderBy('at').limit(DELETE_CHUNK),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Deletes up to DELETE_CHUNK of a series' hourly aggregates before `before`; returns how many. */
export async function deleteHoursBefore(db: Executor, key: number, before: number): Promise<number> {
  const result = await db
    .deleteFrom('history_hours')
    .where('series', '=', key)
    .where('hour', 'in', (eb) =>
      eb.selectFrom('history_hours').select('hour').where('series', '=', key).where('hour', '<', before).orderBy('hour').limit(DELETE_CHUNK),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** A retired series, if any is left to remove. */
export async function retiredSeries(db: Executor): Promise<number | undefined> {
  const row = await db.selectFrom('history_series').select('key').where('retired', '=', 1).orderBy('key').limit(1).executeTakeFirst();
  return row && Number(row.key);
}

/** Removes a chunk of a retired series' rows; its row goes once nothing of it is left. Returns rows deleted. */
export async function removeRetired(db: Executor, key: number): Promise<number> {
  const points = await deletePointsBefore(db, key, Number.MAX_SAFE_INTEGER);
  const hours = await deleteHoursBefore(db, key, Number.MAX_SAFE_INTEGER);
  if (points + hours > 0) return points + hours;
  await db.deleteFrom('history_stale').where('series', '=', key).execute();
  await db.deleteFrom('history_series').where('key', '=', key).execute();
  return 0;
}

/** The earliest hour any live series has yet to aggregate: points before it are all in the aggregates. */
export async function oldestUnrolled(db: Executor): Promise<number | undefined> {
  const row = await db
    .selectFrom('history_series')
    .select((eb) => eb.fn.min<number>('rolled_until').as('oldest'))
    .where('retired', '=', 0)
    .executeTakeFirst();
  return row?.oldest === null || row?.oldest === undefined ? undefined : Number(row.oldest);
}
