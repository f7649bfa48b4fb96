import type { Executor } from '../../storage/schema.js';
import { prefixLength, startsWith } from '../../storage/filters.js';
import { prepare, type PreparedQuery } from '../../storage/prepared.js';
import type { TypeFilter } from '../../platform/type-filter.js';
import { eventJsonOf, type Event } from './event.js';

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
