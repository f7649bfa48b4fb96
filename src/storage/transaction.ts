// Transactions that know when they committed: work queued with `afterCommit` runs once the
// transaction's commit resolved (durable, also under SQLite's group commit), never on a rollback.
import type { Kysely, Transaction } from 'kysely';
import type { Database, Executor } from './schema.js';

/** The transaction's queue of after-commit work, on the transaction object itself (a WeakMap entry per write cost more: bench/HISTORY.md, "Response bodies in reused buffers, and the write path"). */
const AFTER_COMMIT = Symbol('afterCommit');
type QueuingTransaction = Transaction<Database> & { [AFTER_COMMIT]?: Array<() => void> };

/** Runs `work` in a transaction, then what it queued with `afterCommit`, in order. */
export async function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  const queued: Array<() => void> = [];
  const result = await db.transaction().execute((trx) => {
    (trx as QueuingTransaction)[AFTER_COMMIT] = queued;
    return work(trx);
  });
  for (const callback of queued) callback();
  return result;
}

/**
 * Queues `callback` for after the commit of `exec`'s transaction; outside a transaction (each
 * statement commits on its own) it runs at once. A transaction not opened by `inTransaction` is
 * refused: its commit could not be seen.
 */
export function afterCommit(exec: Executor, callback: () => void): void {
  if (!exec.isTransaction) {
    callback();
    return;
  }
  const queued = (exec as QueuingTransaction)[AFTER_COMMIT];
  if (!queued) throw new Error('afterCommit: the transaction was not opened with inTransaction');
  queued.push(callback);
}
