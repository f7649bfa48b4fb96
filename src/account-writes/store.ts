// The pipeline's store: the rows of an account's event log, which only account writes append.
import type { Executor } from '../storage/schema.js';
import { prepare } from '../storage/prepared.js';
import { insertEventsTakingIds, type EventStatement } from '../storage/postgres-writes.js';
import { eventDataJson, type Event } from '../areas/events/event.js';

const insertEventRow = prepare((db, p: { accountId: string; id: number; type: string; data: string; createdAt: string }) =>
  db.insertInto('events').values({ account_id: p.accountId, id: p.id, type: p.type, data: p.data, created_at: p.createdAt }),
);

export async function insertEvent(db: Executor, accountId: string, event: Event): Promise<void> {
  await insertEventRow.execute(db, { accountId, id: event.id, type: event.type, data: eventDataJson(event), createdAt: event.createdAt });
}

/**
 * PostgreSQL: the events (in order) with what `statement` joins, in one statement taking the
 * account's next ids (storage/postgres-writes.ts). Sets each event's id and returns true, or
 * returns false when its conditions failed and nothing was written.
 */
export async function insertEventsInOneStatement(db: Executor, accountId: string, events: readonly Event[], statement: EventStatement): Promise<boolean> {
  const columns = { types: events.map((event) => event.type), data: events.map(eventDataJson), createdAt: events.map((event) => event.createdAt) };
  const first = await insertEventsTakingIds(db, accountId, columns, statement);
  if (first === undefined) return false;
  events.forEach((event, index) => {
    event.id = first + index;
  });
  return true;
}
