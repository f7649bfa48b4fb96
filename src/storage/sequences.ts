import { prepare } from './prepared.js';
import type { Executor } from './schema.js';

type Counter = 'event_seq' | 'audit_seq';

const increment = (counter: Counter) =>
  prepare((db, p: { accountId: string; by: number }) =>
    db
      .updateTable('accounts')
      .set((eb) => ({ [counter]: eb(counter, '+', p.by) }))
      .where('id', '=', p.accountId)
      .returning(counter),
  );
const increments = { event_seq: increment('event_seq'), audit_seq: increment('audit_seq') };

/**
 * Takes the next value of one of the account's counters. The update locks the account's row until
 * the transaction ends, so numbers are handed out in commit order with no gaps (docs/decisions.md: "Events and streams").
 */
export async function nextSequence(db: Executor, accountId: string, counter: Counter, by = 1): Promise<number> {
  const row = (await increments[counter].first(db, { accountId, by })) as Record<Counter, number> | undefined;
  if (!row) throw new Error(`no account ${accountId}`);
  return Number(row[counter]);
}

const nextEvent = prepare((db, p: { accountId: string }) =>
  db
    .updateTable('accounts')
    .set((eb) => ({ event_seq: eb('event_seq', '+', 1) }))
    .where('id', '=', p.accountId)
    .returning(['event_seq', 'webhook_count']),
);

/**
 * The account's next event id, as `nextSequence(..., 'event_seq')`, and with it the account's
 * webhook count as of the lock it takes (webhooks created or deleted after wait for it).
 */
export async function nextEventSequence(db: Executor, accountId: string): Promise<{ id: number; webhooks: number }> {
  const row = await nextEvent.first(db, { accountId });
  if (!row) throw new Error(`no account ${accountId}`);
  return { id: Number(row.event_seq), webhooks: Number(row.webhook_count) };
}
