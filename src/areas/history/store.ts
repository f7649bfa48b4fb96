// The history's rows (migration 0014): series, points, hourly aggregates and stale hours. Points of
// an account's writes are written in its write (a reaction of the pipeline), or joined to its one
// statement on PostgreSQL; reads aggregate in SQL, so a day of points never crosses into JavaScript.
import { sql } from 'kysely';
import { prepare } from '../../storage/prepared.js';
import type { Executor } from '../../storage/schema.js';
import { isPostgres } from '../../storage/postgres-writes.js';
import { HOUR_MS, type SpanSums, type StoredState } from './points.js';
import { spanSumsByRange, type SpanSums as StorageSpanSums } from '../../storage/history-spans.js';

export interface Series {
  key: number;
  rolledUntil: number;
}

/** A point as read: epoch ms and its stored state. */
export interface StoredPoint extends StoredState {
  at: number;
}

/** A span's aggregate as SQL computes it from points, or as history_hours keeps it: its last state as stored. */
export interface SpanRow extends SpanSums {
  lastValue: number | null;
  lastText: string | null;
}

/** A span's columns as a statement returns them (numbers may come as strings from PostgreSQL). */
type SpanColumns = Omit<StorageSpanSums, 'start'> & { start: number | string; true_ms?: number | string | null };

/** Starts the history of new resources: their series, aggregated from the hour they were made. */
export async function addSeries(db: Executor, accountId: string, resourceIds: readonly string[], createdAt: number): Promise<void> {
  if (resourceIds.length === 0) return;
  const rolledUntil = createdAt - (createdAt % HOUR_MS);
  await db
    .insertInto('history_series')
    .values(resourceIds.map((resourceId) => ({ resource_id: resourceId, account_id: accountId, rolled_until: rolledUntil, retired: 0 })))
    .execute();
}

/** Ends the history of deleted resources: housekeeping removes their points. */
export async function retireSeries(db: Executor, resourceIds: readonly string[]): Promise<void> {
  if (resourceIds.length === 0) return;
  // The resource id is freed for nothing else, but keeping it would refuse a restored backup's id.
  await db
    .updateTable('history_series')
    .set({ retired: 1, resource_id: sql<string>`'retired:' || ${sql.ref('key')}` })
    .where('resource_id', 'in', [...resourceIds])
    .execute();
}

const seriesByResource = prepare((db, p: { resourceId: string }) =>
  db.selectFrom('history_series').select(['key', 'rolled_until']).where('resource_id', '=', p.resourceId).where('retired', '=', 0),
);

export async function findSeries(db: Executor, resourceId: string): Promise<Series | undefined> {
  const row = await seriesByResource.first(db, { resourceId });
  return row && { key: Number(row.key), rolledUntil: Number(row.rolled_until) };
}

/** The backfill's points of one series: which times already held a point (they are replaced). */
export async function existingTimes(db: Executor, series: number, times: readonly number[]): Promise<Set<number>> {
  const found = new Set<number>();
  for (let start = 0; start < times.length; start += 500) {
    const rows = await db
      .selectFrom('history_points')
      .select('at')
      .where('series', '=', series)
      .where('at', 'in', times.slice(start, start + 500))
      .execute();
    for (const row of rows) found.add(Number(row.at));
  }
  return found;
}

/** Writes a series' points (a backfill), replacing those at the same times; a statement per 500. */
export async function upsertSeriesPoints(db: Executor, series: number, points: readonly StoredPoint[]): Promise<void> {
  for (let start = 0; start < points.length; start += 500) {
    await db
      .insertInto('history_points')
      .values(points.slice(start, start + 500).map((point) => ({ series, at: point.at, value: point.value, text: point.text })))
      .onConflict((conflict) => conflict.columns(['series', 'at']).doUpdateSet((eb) => ({ value: eb.ref('excluded.value'), text: eb.ref('excluded.text') })))
      .execute();
  }
}

/** Hours whose aggregate is out of date (a backfill wrote in them): removed, and listed until built again. */
export async function markStale(db: Executor, series: number, hours: readonly number[]): Promise<void> {
  for (let start = 0; start < hours.length; start += 500) {
    const part = hours.slice(start, start + 500);
    await db.deleteFrom('history_hours').where('series', '=', series).where('hour', 'in', part).execute();
    await db
      .insertInto('history_stale')
      .values(part.map((hour) => ({ series, hour })))
      .onConflict((conflict) => conflict.columns(['series', 'hour']).doNothing())
      .execute();
  }
}

export interface PageQuery {
  from: number;
  to: number;
  order: 'asc' | 'desc';
  limit: number;
}

/** Up to `limit` points with from ≤ at < to, in order. */
export async function readPoints(db: Executor, series: number, query: PageQuery): Promise<StoredPoint[]> {
  const rows = await db
    .selectFrom('history_points')
    .select(['at', 'value', 'text'])
    .where('series', '=', series)
    .where('at', '>=', query.from)
    .where('at', '<', query.to)
    .orderBy('at', query.order)
    .limit(query.limit)
    .execute();
  return rows.map((row) => ({ at: Number(row.at), value: row.value === null ? null : Number(row.value), text: row.text }));
}

/**
 * The points with from ≤ at < end summed up per span of `size` (aligned to the epoch), in time
 * order. `booleans`: with the time true of each, from its first point to the span's end or `now`.
 */
export async function spansFromPoints(
  db: Executor,
  series: number,
  range: { from: number; end: number; size: number; now: number },
  booleans: boolean,
): Promise<SpanRow[]> {
  const { from, end, size, now } = range;
  if (!booleans && isPostgres(db)) return (await spanSumsByRange(db, series, range)).map(spanRowOf);
  if (!booleans && Math.ceil((end - from) / size) <= SPANS_QUERIED_ONE_BY_ONE) return spansOneByOne(db, series, range);
  const trueMs = booleans ? sql<number>`sum(case when p.value = 1 and p.until > p.at then p.until - p.at else 0 end)` : sql<number>`0`;
  const until = booleans
    ? sql`case when coalesce(lead(at) over (order by at), ${now}) < at - (at % ${size}) + ${size} then coalesce(lead(at) over (order by at), ${now}) else at - (at % ${size}) + ${size} end`
    : sql`0`;
  const result = await sql<Record<string, number | string | null>>`
    select p.start, count(*) as count, count(p.value) as numeric_count, min(p.value) as min, max(p.value) as max, sum(p.value) as sum,
      min(p.at) as first_at, max(p.at) as last_at, ${trueMs} as true_ms
    from (
      select at, value, at - (at % ${size}) as start, ${until} as until
      from history_points where series = ${series} and at >= ${from} and at < ${end}
    ) as p
    group by p.start order by p.start`.execute(db);
  const rows = result.rows.map((row) => spanRowOf(row as unknown as SpanColumns));
  return withLastStates(db, series, rows);
}

/**
 * SQLite: up to this many spans are summed up by a statement each, over its range of the key,
 * rather than by one statement grouping them, which sorts every point first: a day of 1 Hz points
 * as 288 spans took 14 ms against 32 (bench/HISTORY.md, "History"). PostgreSQL does the same in one
 * statement (storage/history-spans.ts).
 */
const SPANS_QUERIED_ONE_BY_ONE = 1000;

const spanAggregate = prepare((db, p: { series: number; from: number; to: number }) =>
  db
    .selectFrom('history_points')
    .select((eb) => [
      eb.fn.countAll<number>().as('count'),
      eb.fn.count<number>('value').as('numeric_count'),
      eb.fn.min('value').as('min'),
      eb.fn.max('value').as('max'),
      eb.fn.sum<number>('value').as('sum'),
      eb.fn.min('at').as('first_at'),
      eb.fn.max('at').as('last_at'),
    ])
    .where('series', '=', p.series)
    .where('at', '>=', p.from)
    .where('at', '<', p.to),
);

async function spansOneByOne(db: Executor, series: number, range: { from: number; end: number; size: number }): Promise<SpanRow[]> {
  const { from, end, size } = range;
  const rows: SpanRow[] = [];
  for (let start = from - (((from % size) + size) % size); start < end; start += size) {
    const row = await spanAggregate.first(db, { series, from: Math.max(start, from), to: Math.min(start + size, end) });
    if (row && Number(row.count) > 0) rows.push(spanRowOf({ ...row, start, last_value: null, last_text: null }));
  }
  return withLastStates(db, series, rows);
}

function spanRowOf(row: SpanColumns): SpanRow {
  const number = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  return {
    start: Number(row.start),
    count: Number(row.count),
    numericCount: Number(row.numeric_count),
    min: number(row.min),
    max: number(row.max),
    sum: number(row.sum),
    firstAt: Number(row.first_at),
    lastAt: Number(row.last_at),
    lastValue: number(row.last_value),
    lastText: row.last_text,
    trueMs: Math.max(0, Number(row.true_ms ?? 0)),
  };
}

/** Each span's last state, read by its time. */
async function withLastStates(db: Executor, series: number, rows: SpanRow[]): Promise<SpanRow[]> {
  const last = await pointsAt(
    db,
    series,
    rows.map((row) => row.lastAt),
  );
  for (const row of rows) {
    const point = last.get(row.lastAt)!;
    row.lastValue = point.value;
    row.lastText = point.text;
  }
  return rows;
}

async function pointsAt(db: Executor, series: number, times: readonly number[]): Promise<Map<number, StoredState>> {
  const found = new Map<number, StoredState>();
  for (let start = 0; start < times.length; start += 500) {
    const rows = await db
      .selectFrom('history_points')
      .select(['at', 'value', 'text'])
      .where('series', '=', series)
      .where('at', 'in', times.slice(start, start + 500))
      .execute();
    for (const row of rows) found.set(Number(row.at), { value: row.value === null ? null : Number(row.value), text: row.text });
  }
  return found;
}

/** The series' hourly aggregates with from ≤ hour < end, in time order. */
export async function readHours(db: Executor, series: number, from: number, end: number): Promise<SpanRow[]> {
  const rows = await db
    .selectFrom('history_hours')
    .selectAll()
    .where('series', '=', series)
    .where('hour', '>=', from)
    .where('hour', '<', end)
    .orderBy('hour')
    .execute();
  return rows.map((row) => spanRowOf({ ...row, start: row.hour }));
}

/** The series' stale hours with from ≤ hour < end. */
export async function staleHours(db: Executor, series: number, from: number, end: number): Promise<Set<number>> {
  const rows = await db.selectFrom('history_stale').select('hour').where('series', '=', series).where('hour', '>=', from).where('hour', '<', end).execute();
  return new Set(rows.map((row) => Number(row.hour)));
}

/** The series' last state before `at` and when it began, from its points or, past them, its aggregates. */
export async function stateBefore(db: Executor, series: number, at: number): Promise<StoredPoint | undefined> {
  const point = await db
    .selectFrom('history_points')
    .select(['at', 'value', 'text'])
    .where('series', '=', series)
    .where('at', '<', at)
    .orderBy('at', 'desc')
    .limit(1)
    .executeTakeFirst();
  const hour = await db
    .selectFrom('history_hours')
    .select(['last_at', 'last_value', 'last_text'])
    .where('series', '=', series)
    .where('hour', '<', at - (at % HOUR_MS))
    .orderBy('hour', 'desc')
    .limit(1)
    .executeTakeFirst();
  const fromPoint = point && { at: Number(point.at), value: point.value === null ? null : Number(point.value), text: point.text };
  const fromHour = hour && { at: Number(hour.last_at), value: hour.last_value === null ? null : Number(hour.last_value), text: hour.last_text };
  if (!fromHour || (fromPoint && fromPoint.at >= fromHour.at)) return fromPoint;
  return fromHour.at < at ? fromHour : fromPoint;
}
