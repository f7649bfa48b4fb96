// PostgreSQL: a history series' points summed up per span by one statement in which each span
// reads its own range of the (series, at) key (generate_series and a lateral subquery), rather
// than one grouping over every point: a day of 1 Hz points as 288 spans took 12 ms against 30
// (bench/HISTORY.md, "History"). SQLite gets the same from a statement per span
// (areas/history/store.ts).
import { sql } from 'kysely';
import type { Executor } from './schema.js';

/** A span's sums as the statement gives them (bigints and doubles as PostgreSQL's driver returns them). */
export interface SpanSums {
  start: string | number;
  count: string | number;
  numeric_count: string | number;
  min: number | string | null;
  max: number | string | null;
  sum: number | string | null;
  first_at: string | number | null;
  last_at: string | number | null;
  /** The state of the span's last point. */
  last_value: number | string | null;
  last_text: string | null;
}

/** The spans of `size` from the one holding `from` to `end` that hold points, each clipped to [from, end). */
export async function spanSumsByRange(db: Executor, series: number, range: { from: number; end: number; size: number }): Promise<SpanSums[]> {
  const { from, end, size } = range;
  const first = from - (((from % size) + size) % size);
  const result = await sql<SpanSums>`
    select span.start, sums.*, last.value as last_value, last.text as last_text
    from generate_series(${first}::bigint, ${end - 1}::bigint, ${size}::bigint) as span(start),
    lateral (
      select count(*) as count, count(value) as numeric_count, min(value) as min, max(value) as max, sum(value) as sum,
        min(at) as first_at, max(at) as last_at
      from history_points
      where series = ${series} and at >= greatest(span.start, ${from}::bigint) and at < least(span.start + ${size}::bigint, ${end}::bigint)
    ) as sums,
    lateral (select value, text from history_points where series = ${series} and at = sums.last_at) as last
    where sums.count > 0
    order by span.start`.execute(db);
  return result.rows;
}
