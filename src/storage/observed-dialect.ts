// Timings of the storage for the operator's metrics: how long a query waited for a connection (the
// pool, or SQLite's one connection) and how long each transaction took from begin to its commit
// (on SQLite, until its group commit made it durable). A wrapper around any dialect's driver, used
// only when metrics are on.
import { performance } from 'node:perf_hooks';
import type { DatabaseConnection, Dialect, Driver, TransactionSettings } from 'kysely';

export interface StorageObserver {
  connectionWait(seconds: number): void;
  transaction(seconds: number, outcome: 'commit' | 'rollback'): void;
}

class ObservedDriver implements Driver {
  private readonly begun = new WeakMap<DatabaseConnection, number>();
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

  async acquireConnection(): Promise<DatabaseConnection> {
    const asked = performance.now();
    const connection = await this.inner.acquireConnection();
    this.observer.connectionWait((performance.now() - asked) / 1000);
    return connection;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    this.begun.set(connection, performance.now());
    return this.inner.beginTransaction(connection, settings);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await this.inner.commitTransaction(connection);
    } finally {
      this.ended(connection, 'commit');
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await this.inner.rollbackTransaction(connection);
    } finally {
      this.ended(connection, 'rollback');
    }
  }

  private ended(connection: DatabaseConnection, outcome: 'commit' | 'rollback'): void {
    const begun = this.begun.get(connection);
    if (begun === undefined) return;
    this.begun.delete(connection);
    this.observer.transaction((performance.now() - begun) / 1000, outcome);
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
