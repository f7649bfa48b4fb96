import type { Executor } from './schema.js';

/**
 * Takes the next value of one of the account's counters. The update locks the account's row until
 * the transaction ends, so numbers are handed out in commit order with no gaps (decisions §7).
 */
export async function nextSequence(db: Executor, accountId: string, counter: 'event_seq' | 'audit_seq', by = 1): Promise<number> {
  const row = await db
    .updateTable('accounts')
    .set((eb) => ({ [counter]: eb(counter, '+', by) }))
    .where('id', '=', accountId)
    .returning(counter)
    .executeTakeFirstOrThrow();
  return Number(row[counter]);
}
