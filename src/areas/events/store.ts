import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../../storage/schema.js';
import { prefixLength, startsWith } from '../../storage/filters.js';
import { prepare, type PreparedQuery } from '../../storage/prepared.js';
import type { TypeFilter } from '../../platform/type-filter.js';
import { eventDataJson, eventJsonOf, type Event } from './event.js';

const insertEventRow = prepare((db, p: { accountId: string; id: number; type: string; data: string; createdAt: string }) =>
  db.insertInto('events').values({ account_id: p.accountId, id: p.id, type: p.type, data: p.data, created_at: p.createdAt }),
);

export async function insertEvent(db: Executor, accountId: string, event: Event): Promise<void> {
  await insertEventRow.execute(db, { accountId, id: event.id, type: event.type, data: eventDataJson(event), createdAt: event.createdAt });
}

/**
 * A data-modifying statement written with events by `insertEventsAlone` or `insertEventsLocked`: `written` names a table
 * with one row when the events are written and none otherwise, for the statement to join, so that
 * it changes nothing unless they are.
 */
export type WrittenWith = (written: RawBuilder<unknown>) => RawBuilder<unknown>;

/**
 * PostgreSQL: takes the account's next ids and inserts the events, in order, in one statement
 * committed on its own (the row lock lasts the statement, not four round trips), when the account
 * has no webhooks (whose outbox rows would have to commit with them) and, with `ifNewestIs`, its
 * newest event id is still that. `also` is run in the same statement. Sets each `event.id` and
 * returns true, or returns false when nothing was written.
 */
export async function insertEventsAlone(
  db: Executor,
  accountId: string,
  events: Event[],
  { ifNewestIs, also }: { ifNewestIs?: number; also?: WrittenWith } = {},
): Promise<boolean> {
  const condition = ifNewestIs === undefined ? sql` and webhook_count = 0` : sql` and webhook_count = 0 and event_seq = ${ifNewestIs}`;
  return insertEventsTaking(db, accountId, events, events.length, condition, also);
}

/**
 * PostgreSQL, in a transaction holding the account's row: inserts the events, in order, with `also`
 * in one statement. `reserved`: the transaction took the first of their ids already.
 */
export async function insertEventsLocked(db: Executor, accountId: string, events: Event[], reserved: boolean, also?: WrittenWith): Promise<void> {
  await insertEventsTaking(db, accountId, events, events.length - (reserved ? 1 : 0), sql``, also);
}

/** Moves the account's counter by `take`, then gives the events the ids up to it; false (nothing written) when `condition` fails. */
async function insertEventsTaking(
  db: Executor,
  accountId: string,
  events: Event[],
  take: number,
  condition: RawBuilder<unknown>,
  also: WrittenWith | undefined,
): Promise<boolean> {
  const count = events.length;
  const result = await sql<{ last: string }>`
    with seq as (
      update accounts set event_seq = event_seq + ${take}
      where id = ${accountId}${condition}
      returning event_seq
    ), inserted as (
      insert into events (account_id, id, type, data, created_at)
      select ${accountId}, seq.event_seq - ${count} + item.position, item.type, item.data, item.created_at
      from seq, unnest(${events.map((event) => event.type)}::text[], ${events.map(eventDataJson)}::text[], ${events.map((event) => event.createdAt)}::text[])
        with ordinality as item(type, data, created_at, position)
      returning id
    )${also ? sql`, also as (${also(sql.table('seq'))})` : sql``}
    select event_seq as last from seq`.execute(db);
  const row = result.rows[0];
  if (row === undefined) return false;
  const first = Number(row.last) - count + 1;
  events.forEach((event, index) => {
    event.id = first + index;
  });
  return true;
}

const eventSeq = prepare((db, p: { accountId: string }) => db.selectFrom('accounts').select('event_seq').where('id', '=', p.accountId));

/** The account's newest event id (0 before the first event). */
export async function newestEventId(db: Executor, accountId: string): Promise<number> {
  const row = await eventSeq.first(db, { accountId });
  return row ? Number(row.event_seq) : 0;
}

type ListParams = { accountId: string; after: number; limit: number; upTo: number; type: string; prefixLength: number };
type StoredEvent = { id: number; type: string; data: string; created_at: string };

/** One prepared query per shape: with or without an upper bound, and by type, type prefix or none. */
const listQueries = new Map<string, PreparedQuery<ListParams, StoredEvent>>();

function listQueryFor(bounded: boolean, typeFilter: 'none' | 'exact' | 'prefix'): PreparedQuery<ListParams, StoredEvent> {
  const shape = `${bounded}:${typeFilter}`;
  let query = listQueries.get(shape);
  if (!query) {
    query = prepare((db, p: ListParams) => {
      let select = db
        .selectFrom('events')
        .select(['id', 'type', 'data', 'created_at'])
        .where('account_id', '=', p.accountId)
        .where('id', '>', p.after)
        .orderBy('id')
        .limit(p.limit);
      if (bounded) select = select.where('id', '<=', p.upTo);
      if (typeFilter === 'prefix') select = select.where(startsWith('type', p.type, p.prefixLength));
      if (typeFilter === 'exact') select = select.where('type', '=', p.type);
      return select;
    });
    listQueries.set(shape, query);
  }
  return query;
}

type EventQuery = { after: number; limit: number; type?: TypeFilter; upTo?: number };

function storedEvents(db: Executor, accountId: string, query: EventQuery): Promise<StoredEvent[]> {
  const { type } = query;
  const prepared = listQueryFor(query.upTo !== undefined, type ? (type.prefix ? 'prefix' : 'exact') : 'none');
  return prepared.rows(db, {
    accountId,
    after: query.after,
    limit: query.limit,
    upTo: query.upTo ?? 0,
    type: type?.value ?? '',
    prefixLength: type ? prefixLength(type.value) : 0,
  });
}

/** Events with `after` < id ≤ `upTo` (when given), oldest first, at most `limit`. */
export async function listEvents(db: Executor, accountId: string, query: EventQuery): Promise<Event[]> {
  const rows = await storedEvents(db, accountId, query);
  return rows.map((row) => ({ id: Number(row.id), type: row.type, data: JSON.parse(row.data) as Record<string, unknown>, createdAt: row.created_at }));
}

/**
 * The same events as JSON (the API's Event), with the stored data spliced in as it is: parsing it
 * only to serialize it again was most of an event page's cost. The stored text is JSON.stringify's.
 */
export async function listEventsJson(db: Executor, accountId: string, query: EventQuery): Promise<Array<{ id: number; type: string; json: Buffer }>> {
  const rows = await storedEvents(db, accountId, query);
  return rows.map((row) => {
    const id = Number(row.id);
    return { id, type: row.type, json: Buffer.from(eventJsonOf(id, row.type, row.data, row.created_at)) };
  });
}

/** Accounts holding more than `keep` events by their counter: the candidates for pruning. */
export async function accountsOverRetention(db: Executor, keep: number): Promise<Array<{ accountId: string; newest: number }>> {
  const rows = await db.selectFrom('accounts').select(['id', 'event_seq']).where('event_seq', '>', keep).execute();
  return rows.map((row) => ({ accountId: row.id, newest: Number(row.event_seq) }));
}

/** The account's oldest stored event id, or undefined when it holds none. */
export async function oldestStoredEventId(db: Executor, accountId: string): Promise<number | undefined> {
  const row = await db.selectFrom('events').select('id').where('account_id', '=', accountId).orderBy('id').limit(1).executeTakeFirst();
  return row && Number(row.id);
}

/** Deletes the account's events with ids from `from` to `upTo`: one bounded step of retention. */
export async function deleteEventsBetween(db: Executor, accountId: string, from: number, upTo: number): Promise<number> {
  const result = await db.deleteFrom('events').where('account_id', '=', accountId).where('id', '>=', from).where('id', '<=', upTo).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Newest event id of each of these accounts. */
export async function newestEventIds(db: Executor, accountIds: string[]): Promise<Map<string, number>> {
  if (accountIds.length === 0) return new Map();
  const rows = await db.selectFrom('accounts').select(['id', 'event_seq']).where('id', 'in', accountIds).execute();
  return new Map(rows.map((row) => [row.id, Number(row.event_seq)]));
}
