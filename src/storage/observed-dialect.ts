// Timings of the storage for the operator's metrics: how long a query waited for a connection (the
// pool, or SQLite's one connection) and how long each transaction took from begin to its commit
// (on SQLite, until its group commit made it durable). A wrapper around any dialect's driver, used
// only when metrics are on. It adds no async layer of its own: each timing ends in one `.then` on
// the wrapped driver's promise, and a transaction's begin time rides on its connection object.
import { performance } from 'node:perf_hooks';
import type { DatabaseConnection, Dialect, Driver, TransactionSettings } from 'kysely';

export interface StorageObserver {
  connectionWait(seconds: number): void;
  transaction(seconds: number, outcome: 'commit' | 'rollback'): void;
}

/** When the connection's open transaction began (performance.now()), on the connection itself. */
const BEGUN = Symbol('transactionBegun');
type TimedConnection = DatabaseConnection & { [BEGUN]?: number };

class ObservedDriver implements Driver {
  // Savepoints only where the wrapped driver has them (Kysely checks for them).
  readonly savepoint?: Driver['savepoint'];
  readonly rollbackToSavepoint?: Driver['rollbackToSavepoint'];
  readonly releaseSavepoint?: Driver['releaseSavepoint'];

  constructor(
    private readonly inner: Driver,
    private readonly observer: StorageObserver,
  ) {
    this.savepoint = inner.savepoint?.bind(inner);
    this.rollbackToSavepoint = inner.rollbackToSavepoint?.bind(inner);
    this.releaseSavepoint = inner.releaseSavepoint?.bind(inner);
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  acquireConnection(): Promise<DatabaseConnection> {
    const asked = performance.now();
    return this.inner.acquireConnection().then((connection) => {
      this.observer.connectionWait((performance.now() - asked) / 1000);
      return connection;
    });
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    (connection as TimedConnection)[BEGUN] = performance.now();
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.ended(this.inner.commitTransaction(connection), connection, 'commit');
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.ended(this.inner.rollbackTransaction(connection), connection, 'rollback');
  }

  /** Reports the transaction once `ending` settles, whichever way (a failed commit still ended it). */
  private ended(ending: Promise<void>, connection: DatabaseConnection, outcome: 'commit' | 'rollback'): Promise<void> {
    const report = (): void => {
      const begun = (connection as TimedConnection)[BEGUN];
      if (begun === undefined) return;
      (connection as TimedConnection)[BEGUN] = undefined;
      this.observer.transaction((performance.now() - begun) / 1000, outcome);
    };
    return ending.then(report, (error: unknown) => {
      report();
      throw error;
    });
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(connection);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** The same dialect, its driver timed (the adapter stays the dialect's own: its identity matters). */
export function observedDialect(dialect: Dialect, observer: StorageObserver): Dialect {
  return {
    createDriver: () => new ObservedDriver(dialect.createDriver(), observer),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}
