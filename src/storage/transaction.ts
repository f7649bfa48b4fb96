// Transactions that know when they committed: work queued with `afterCommit` runs once the
// transaction's commit resolved (durable, also under SQLite's group commit), never on a rollback;
// and a request's outcome recorded with its effect.
import type { Kysely, Transaction } from 'kysely';
import type { Database, Executor } from './schema.js';
import { transactionStatementRunner } from './sqlite-dialect.js';
import type { JoinedRows } from './postgres-writes.js';

/** The transaction's queue of after-commit work, on the transaction object itself (a WeakMap entry per write cost more: bench/HISTORY.md, "Response bodies in reused buffers, and the write path"). */
const AFTER_COMMIT = Symbol('afterCommit');
type QueuingTransaction = Transaction<Database> & { [AFTER_COMMIT]?: Array<() => void> };

/**
 * What a request records in the transaction of its effect, before the commit, given what the
 * work returned: an idempotent request's outcome (idempotency/), so that the effect and the answer
 * to a retry commit together or not at all.
 */
export interface OutcomeRecord {
  /** Where records of its kind go: several of them by one statement. */
  readonly recorder: OutcomeRecorder;
  /** The row that records the outcome, given what the work returned; undefined when it records nothing. */
  rowOf(value: unknown): object | undefined;
  /** Its row (the last `rowOf` gave) was written in the transaction, to commit with the effect. */
  written(): void;
}

/** Writes outcome rows of one kind. */
export interface OutcomeRecorder {
  /** Inserts the rows, unless one of them is recorded already: whether all were inserted. */
  insert(trx: Executor, rows: readonly object[]): Promise<boolean>;
  /**
   * PostgreSQL: the rows as a part of an account write's one statement; one recorded already
   * fails the statement with a unique violation, and nothing is written.
   */
  joined(rows: readonly object[]): JoinedRows;
}

/** Thrown by an OutcomeRecord when another request recorded the same outcome first: the transaction must roll back. */
export class OutcomeTaken extends Error {
  override name = 'OutcomeTaken';
}

/**
 * Records outcomes of several requests in the transaction of their effects, one statement per
 * recorder; throws OutcomeTaken when any of them was recorded first (none is then of use).
 */
export async function recordOutcomes(trx: Transaction<Database>, pending: ReadonlyArray<{ outcome: OutcomeRecord; value: unknown }>): Promise<void> {
  for (const [recorder, rows] of rowsByRecorder(pending)) {
    const inserted = await recorder.insert(
      trx,
      rows.map(({ row }) => row),
    );
    if (!inserted) throw new OutcomeTaken();
    for (const { outcome } of rows) outcome.written();
  }
}

/**
 * PostgreSQL: the outcomes of several requests as parts of the one statement of their effects
 * (storage/postgres-writes.ts), and what to call once it wrote them. The statement fails with a
 * unique violation when one of them was recorded first.
 */
export function joinedOutcomes(pending: ReadonlyArray<{ outcome: OutcomeRecord; value: unknown }>): { rows: JoinedRows[]; written(): void } {
  const byRecorder = rowsByRecorder(pending);
  return {
    rows: [...byRecorder].map(([recorder, rows]) => recorder.joined(rows.map(({ row }) => row))),
    written: () => {
      for (const rows of byRecorder.values()) for (const { outcome } of rows) outcome.written();
    },
  };
}

function rowsByRecorder(
  pending: ReadonlyArray<{ outcome: OutcomeRecord; value: unknown }>,
): Map<OutcomeRecorder, Array<{ outcome: OutcomeRecord; row: object }>> {
  const byRecorder = new Map<OutcomeRecorder, Array<{ outcome: OutcomeRecord; row: object }>>();
  for (const { outcome, value } of pending) {
    const row = outcome.rowOf(value);
    if (row === undefined) continue;
    const rows = byRecorder.get(outcome.recorder) ?? [];
    rows.push({ outcome, row });
    byRecorder.set(outcome.recorder, rows);
  }
  return byRecorder;
}

/** Runs `work` in a transaction, records `outcome` in it, then runs what it queued with `afterCommit`, in order. */
export async function inTransaction<T>(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<T>, outcome?: OutcomeRecord): Promise<T> {
  const queued: Array<() => void> = [];
  const result = await db.transaction().execute(async (trx) => {
    (trx as QueuingTransaction)[AFTER_COMMIT] = queued;
    const value = await work(trx);
    if (outcome) await recordOutcomes(trx, [{ outcome, value }]);
    return value;
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

/**
 * A statement on a request's path beside the writes of others. On SQLite it joins the open group
 * of transactions (sqlite-dialect.ts): a statement outside a transaction makes the group commit
 * early, and one on every request split every group (an Idempotency-Key's lookup did:
 * bench/HISTORY.md, "Idempotent requests and batches"); it is done once the group commits.
 * Elsewhere a plain statement.
 */
export async function amongWrites<T>(db: Kysely<Database>, statement: (exec: Executor) => Promise<T>): Promise<T> {
  if (!transactionStatementRunner(db.getExecutor().adapter)) return statement(db);
  return db.transaction().execute(statement);
}
