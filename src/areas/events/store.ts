import type { Executor } from '../../storage/schema.js';
import { startsWith } from '../../storage/filters.js';
import type { TypeFilter } from '../../platform/type-filter.js';

export interface EventRow {
  id: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: string;
}

export async function insertEvent(db: Executor, accountId: string, event: EventRow): Promise<void> {
  await db
    .insertInto('events')
    .values({ account_id: accountId, id: event.id, type: event.type, data: JSON.stringify(event.data), created_at: event.createdAt })
    .execute();
}

/** The account's newest event id (0 before the first event). */
export async function newestEventId(db: Executor, accountId: string): Promise<number> {
  const row = await db.selectFrom('accounts').select('event_seq').where('id', '=', accountId).executeTakeFirst();
  return row ? Number(row.event_seq) : 0;
}

/** Events with `after` < id ≤ `upTo` (when given), oldest first, at most `limit`. */
export async function listEvents(
  db: Executor,
  accountId: string,
  query: { after: number; limit: number; type?: TypeFilter; upTo?: number },
): Promise<EventRow[]> {
  let select = db
    .selectFrom('events')
    .select(['id', 'type', 'data', 'created_at'])
    .where('account_id', '=', accountId)
    .where('id', '>', query.after)
    .orderBy('id')
    .limit(query.limit);
  if (query.upTo !== undefined) select = select.where('id', '<=', query.upTo);
  if (query.type) select = query.type.prefix ? select.where(startsWith('type', query.type.value)) : select.where('type', '=', query.type.value);
  const rows = await select.execute();
  return rows.map((row) => ({ id: Number(row.id), type: row.type, data: JSON.parse(row.data) as Record<string, unknown>, createdAt: row.created_at }));
}

/** Accounts holding more than `keep` events by their counter: the candidates for pruning. */
export async function accountsOverRetention(db: Executor, keep: number): Promise<Array<{ accountId: string; newest: number }>> {
  const rows = await db.selectFrom('accounts').select(['id', 'event_seq']).where('event_seq', '>', keep).execute();
  return rows.map((row) => ({ accountId: row.id, newest: Number(row.event_seq) }));
}

export async function deleteEventsUpTo(db: Executor, accountId: string, upTo: number): Promise<number> {
  const result = await db.deleteFrom('events').where('account_id', '=', accountId).where('id', '<=', upTo).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Newest event id of each of these accounts. */
export async function newestEventIds(db: Executor, accountIds: string[]): Promise<Map<string, number>> {
  if (accountIds.length === 0) return new Map();
  const rows = await db.selectFrom('accounts').select(['id', 'event_seq']).where('id', 'in', accountIds).execute();
  return new Map(rows.map((row) => [row.id, Number(row.event_seq)]));
}
