// The staged points of live writes (migration 0015): appended in each write's transaction, moved
// into history_points a batch at a time. A batch is sorted into each series' run of points by one
// statement, so a page of a series is written once for many points instead of once per write.
// The order written decides which of two points at the same time of a resource is kept: the later.
import { sql, type Kysely } from 'kysely';
import type { Database, Executor } from './schema.js';
import { inTransaction } from './transaction.js';
import { isPostgres, rowsOf, type JoinedRows } from './postgres-writes.js';
import { prepare } from './prepared.js';

/** A point staged for a resource, by the resource's id: a number or boolean in `value`, a string in `text`. */
export interface StagedPoint {
  resourceId: string;
  at: number;
  value: number | null;
  text: string | null;
}

/** Serializes movers across processes, so that two points of a resource at one time land in the order written. */
const MOVER_LOCK = 0x6465_7664; // "devd"

/**
 * Moves up to `limit` of the oldest staged points into history_points, in one transaction; points
 * of a resource deleted meanwhile are dropped. Returns how many left the staging table.
 */
export async function moveStagedPoints(db: Kysely<Database>, limit: number): Promise<number> {
  if (isPostgres(db)) {
    return inTransaction(db, async (trx) => {
      await sql`select pg_advisory_xact_lock(${MOVER_LOCK}::bigint)`.execute(trx);
      // A statement of its own: its snapshot sees what a mover that held the lock before committed.
      const result = await sql<{ moved: number }>`
        with taken as (select id from history_staged order by id limit ${limit}),
        moved as (
          delete from history_staged staged using taken where staged.id = taken.id
          returning staged.id, staged.resource_id, staged.at, staged.value, staged.text
        ), inserted as (
          insert into history_points (series, at, value, text)
          select distinct on (s.key, m.at) s.key, m.at, m.value, m.text
          from moved m join history_series s on s.resource_id = m.resource_id and s.retired = 0
          order by s.key, m.at, m.id desc
          on conflict (series, at) do update set value = excluded.value, text = excluded.text
        )
        select count(*)::int as moved from moved`.execute(trx);
      return Number(result.rows[0]?.moved ?? 0);
    });
  }
  return inTransaction(db, async (trx) => {
    const edge = await sql<{ last: number }>`select rowid as last from history_staged order by rowid limit 1 offset ${limit - 1}`.execute(trx);
    const last = edge.rows[0]?.last ?? Number.MAX_SAFE_INTEGER;
    // In rowid order, so a later point at the same time replaces an earlier one (`where` parses the upsert).
    await sql`
      insert into history_points (series, at, value, text)
      select s.key, staged.at, staged.value, staged.text
      from history_staged staged join history_series s on s.resource_id = staged.resource_id and s.retired = 0
      where staged.rowid <= ${last}
      order by staged.rowid
      on conflict (series, at) do update set value = excluded.value, text = excluded.text`.execute(trx);
    // All of it taken (nothing else writes while this transaction holds the one connection): a
    // delete without `where` empties the table's pages at once instead of row by row.
    const deleted = await (edge.rows.length === 0 ? sql`delete from history_staged` : sql`delete from history_staged where rowid <= ${last}`).execute(trx);
    return Number(deleted.numAffectedRows ?? 0);
  });
}

/** PostgreSQL: the points staged by a part of an account's one statement, written only with its events. */
export function stagedPointsJoined(points: readonly StagedPoint[]): JoinedRows {
  return (written) => stagedInsertSql(points, sql`where exists (select 1 from ${written})`);
}

const stagePoint = prepare((db, p: StagedPoint) =>
  db.insertInto('history_staged').values({ resource_id: p.resourceId, at: p.at, value: p.value, text: p.text }),
);

/** Stages the points of live writes in the caller's transaction: PostgreSQL by one statement, SQLite a prepared insert each. */
export async function stagePoints(db: Executor, points: readonly StagedPoint[]): Promise<void> {
  if (points.length === 0) return;
  if (isPostgres(db)) await sql`${stagedInsertSql(points)}`.execute(db);
  else for (const point of points) await stagePoint.execute(db, point);
}

function stagedInsertSql(points: readonly StagedPoint[], condition = sql``) {
  const values = rowsOf('p', {
    resource_id: { values: points.map((point) => point.resourceId), type: 'text' },
    at: { values: points.map((point) => String(point.at)), type: 'text' },
    value: { values: points.map((point) => (point.value === null ? '' : String(point.value))), type: 'text' },
    text: { values: points.map((point) => point.text ?? ''), type: 'text' },
    kind: { values: points.map((point) => (point.text !== null ? 't' : 'v')), type: 'text' },
  });
  // Text columns carry every value (NULL has no place in the arrays): `kind` says which one is set.
  return sql`
    insert into history_staged (resource_id, at, value, text)
    select p.resource_id, p.at::bigint, case when p.kind = 'v' then p.value::double precision end, case when p.kind = 't' then p.text end
    from ${values} ${condition}`;
}
