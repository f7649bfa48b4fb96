// PostgreSQL's statements of the account-write pipeline (src/account-writes/pipeline.ts): an
// account's events, and the rows that go with them, written by one statement whose data-modifying
// parts join on the account's counter. Several processes only; SQLite never batches an account's
// writes (its one connection commits a turn's transactions together).
import { PostgresAdapter, sql, type RawBuilder } from 'kysely';
import type { Executor } from './schema.js';
import type { AccountCondition } from './sequences.js';

/**
 * A data-modifying statement written with an account's events: `written` names a table with one
 * row when the events are written and none otherwise, for the statement to join, so that it
 * changes nothing unless they are.
 */
export type JoinedRows = (written: RawBuilder<unknown>) => RawBuilder<unknown>;

/** Events as the columns of their rows, in id order. */
export interface EventColumns {
  types: string[];
  data: string[];
  createdAt: string[];
}

/** How one statement of events is written: its condition on the account's row, and what joins it. */
export interface EventStatement {
  /** How many ids to take from the account's counter: the events' count, less one the transaction reserved. */
  take: number;
  /** Written only while the account's counters hold these values. */
  condition?: AccountCondition;
  /** Written only while the account's newest event id is still this one. */
  ifNewestIs?: number;
  rows?: JoinedRows | readonly JoinedRows[];
}

/**
 * Moves the account's counter by `take` and gives the events the ids up to it, inserting them in
 * order with `rows` in one statement; the row lock lasts the statement. Returns the first event's
 * id, or undefined when a condition failed and nothing was written.
 */
export async function insertEventsTakingIds(db: Executor, accountId: string, events: EventColumns, statement: EventStatement): Promise<number | undefined> {
  const count = events.types.length;
  const conditions = Object.entries(statement.condition ?? {}).map(([column, value]) => sql` and ${sql.ref(column)} = ${value}`);
  if (statement.ifNewestIs !== undefined) conditions.push(sql` and event_seq = ${statement.ifNewestIs}`);
  const result = await sql<{ last: string }>`
    with seq as (
      update accounts set event_seq = event_seq + ${statement.take}
      where id = ${accountId}${conditions.reduce((all, condition) => sql`${all}${condition}`, sql``)}
      returning event_seq
    ), inserted as (
      insert into events (account_id, id, type, data, created_at)
      select ${accountId}, seq.event_seq - ${count} + item.position, item.type, item.data, item.created_at
      from seq, unnest(${events.types}::text[], ${events.data}::text[], ${events.createdAt}::text[])
        with ordinality as item(type, data, created_at, position)
      returning id
    )${sql.join(
      joinedOf(statement.rows).map((rows, index) => sql`, ${sql.raw(`also${index}`)} as (${rows(sql.table('seq'))})`),
      sql``,
    )}
    select event_seq as last from seq`.execute(db);
  const row = result.rows[0];
  return row === undefined ? undefined : Number(row.last) - count + 1;
}

function joinedOf(rows: EventStatement['rows']): readonly JoinedRows[] {
  return rows === undefined ? [] : typeof rows === 'function' ? [rows] : rows;
}

/** A column of values for `rowsOf`, with its SQL type. */
export type ValueColumn = { values: ReadonlyArray<string | number>; type: 'text' | 'integer' };

/** The values as a table `alias(columns…)` to join in an update, one row per index: `from rowsOf(…)`. */
export function rowsOf(alias: string, columns: Record<string, ValueColumn>): RawBuilder<unknown> {
  const names = Object.keys(columns);
  const arrays = names.map((name) => {
    const { values, type } = columns[name]!;
    return type === 'text' ? sql`${values}::text[]` : sql`${values}::integer[]`;
  });
  return sql`unnest(${sql.join(arrays)}) as ${sql.raw(alias)}(${sql.join(names.map((name) => sql.ref(name)))})`;
}

/** Whether `db` is a PostgreSQL database (else SQLite): for the statements written differently on each. */
export function isPostgres(db: Executor): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
