import { prepare } from './prepared.js';
import type { Executor } from './schema.js';

const nextAudit = prepare((db, p: { accountId: string }) =>
  db
    .updateTable('accounts')
    .set((eb) => ({ audit_seq: eb('audit_seq', '+', 1) }))
    .where('id', '=', p.accountId)
    .returning('audit_seq'),
);

/**
 * The account's counters hand out numbers in commit order with no gaps: the update locks the
 * account's row until the transaction ends (docs/decisions.md: "Events and streams").
 */
export async function nextAuditSequence(db: Executor, accountId: string): Promise<number> {
  const row = await nextAudit.first(db, { accountId });
  if (!row) throw new Error(`no account ${accountId}`);
  return Number(row.audit_seq);
}

const nextEvent = prepare((db, p: { accountId: string }) =>
  db
    .updateTable('accounts')
    .set((eb) => ({ event_seq: eb('event_seq', '+', 1) }))
    .where('id', '=', p.accountId)
    .returning(['event_seq', 'webhook_count']),
);

/** The counters of an account's row that a write's reactions look at, read under its lock. */
export interface AccountCounters {
  /** How many webhooks the account has (webhooks created or deleted meanwhile wait for the lock). */
  webhook_count: number;
}

/** Values of some of the account's counters: a condition that holds when each counter has its value. */
export type AccountCondition = Partial<AccountCounters>;

/** Whether the counters satisfy the condition. */
export function conditionHolds(condition: AccountCondition, counters: AccountCounters): boolean {
  for (const [column, value] of Object.entries(condition) as Array<[keyof AccountCounters, number]>) if (counters[column] !== value) return false;
  return true;
}

/**
 * The account's next event id, and its counters as of the lock it takes.
 */
export async function nextEventSequence(db: Executor, accountId: string): Promise<{ id: number; counters: AccountCounters }> {
  const row = await nextEvent.first(db, { accountId });
  if (!row) throw new Error(`no account ${accountId}`);
  return { id: Number(row.event_seq), counters: { webhook_count: Number(row.webhook_count) } };
}

const takeEvents = prepare((db, p: { accountId: string; count: number }) =>
  db
    .updateTable('accounts')
    .set((eb) => ({ event_seq: eb('event_seq', '+', p.count) }))
    .where('id', '=', p.accountId)
    .returning('event_seq'),
);

/** Takes the account's next `count` event ids at once; returns the last of them. */
export async function takeEventIds(db: Executor, accountId: string, count: number): Promise<number> {
  const row = await takeEvents.first(db, { accountId, count });
  if (!row) throw new Error(`no account ${accountId}`);
  return Number(row.event_seq);
}

const lockAccount = prepare((db, p: { accountId: string }) =>
  db
    .updateTable('accounts')
    .set((eb) => ({ audit_seq: eb.ref('audit_seq') }))
    .where('id', '=', p.accountId),
);

/**
 * Takes the account's row lock without taking a number: work that changes an account's other rows
 * and then audits takes it first, in the order every writer takes its locks (the account's row,
 * then its others), so it never deadlocks with a write of the account.
 */
export async function lockAccountRow(db: Executor, accountId: string): Promise<void> {
  await lockAccount.execute(db, { accountId });
}
