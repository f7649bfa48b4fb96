// PostgreSQL's daily partitions of history_points (migration 0014): retention drops a whole day's
// partition instead of deleting its rows. Housekeeping keeps partitions ready for the days ahead;
// a point before the first partition (a backfill) lands in the default one, whose old rows
// retention deletes in small steps like SQLite's.
import { sql } from 'kysely';
import { DAY_MS } from '../platform/clock.js';
import type { Executor } from './schema.js';

/** Partitions made ahead of today, so that a write never waits for one. */
const DAYS_AHEAD = 2;

/** The start (epoch ms, UTC) of the days from `now`'s through DAYS_AHEAD later. */
export function historyPartitionDays(now: number): number[] {
  const today = now - (now % DAY_MS);
  return Array.from({ length: DAYS_AHEAD + 1 }, (_, index) => today + index * DAY_MS);
}

function partitionName(day: number): string {
  return `history_points_p${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The statement that makes the partition of the day starting at `day`, unless it exists. */
export function historyPartitionSql(day: number): string {
  return `create table if not exists ${partitionName(day)} partition of history_points for values from (${day}) to (${day + DAY_MS})`;
}

/**
 * Makes the partitions of today and the days ahead that are missing. One that cannot be made
 * (the default partition already holds rows of its day) is left: those rows stay in the default.
 */
export async function ensureHistoryPartitions(db: Executor, now: number): Promise<void> {
  const existing = new Set(await partitionNames(db));
  for (const day of historyPartitionDays(now)) {
    if (existing.has(partitionName(day))) continue;
    try {
      await sql.raw(historyPartitionSql(day)).execute(db);
    } catch (error) {
      // 23514: the default partition holds rows of that day; 42P07: another process made it meanwhile.
      const code = (error as { code?: string }).code;
      if (code !== '23514' && code !== '42P07') throw error;
    }
  }
}

/**
 * Drops the day partitions that end at or before `cut` (epoch ms): whole days of points past
 * their retention. Dropping a partition detaches it; `if exists` lets two processes drop the same
 * one. Returns how many this call dropped.
 */
export async function dropHistoryPartitionsBefore(db: Executor, cut: number): Promise<number> {
  let dropped = 0;
  for (const name of await partitionNames(db)) {
    const day = Date.parse(`${name.slice(-8, -4)}-${name.slice(-4, -2)}-${name.slice(-2)}T00:00:00.000Z`);
    if (!Number.isFinite(day) || day + DAY_MS > cut) continue;
    await sql.raw(`drop table if exists ${name}`).execute(db);
    dropped++;
  }
  return dropped;
}

async function partitionNames(db: Executor): Promise<string[]> {
  const result = await sql<{ name: string }>`
    select child.relname as name from pg_inherits
    join pg_class parent on parent.oid = pg_inherits.inhparent
    join pg_class child on child.oid = pg_inherits.inhrelid
    join pg_namespace ns on ns.oid = parent.relnamespace
    where parent.relname = 'history_points' and ns.nspname = current_schema() and child.relname ~ '^history_points_p[0-9]{8}$'
    order by child.relname`.execute(db);
  return result.rows.map((row) => row.name);
}
