// Kysely's SQLite dialect with two changes that matter under concurrent requests (measured with
// npm run bench): prepared statements are cached by SQL text instead of prepared on every query,
// and waiters for the single connection queue in order instead of all waking at each release.
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import {
  CompiledQuery,
  SqliteDialect,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';

const STATEMENT_CACHE_SIZE = 500;

class FifoMutex {
  private locked = false;
  private readonly waiters: Array<() => void> = [];

  lock(): Promise<void> {
    if (!this.locked) {
      this.locked = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  unlock(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.locked = false;
  }
}

class CachedStatementConnection implements DatabaseConnection {
  private readonly statements = new Map<string, Statement>();

  constructor(private readonly db: SqliteDatabase) {}

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (statement) {
      // Re-inserting keeps the map in least-recently-used order.
      this.statements.delete(sql);
    } else {
      statement = this.db.prepare(sql);
      if (this.statements.size >= STATEMENT_CACHE_SIZE) this.statements.delete(this.statements.keys().next().value as string);
    }
    this.statements.set(sql, statement);
    return statement;
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.statement(compiledQuery.sql);
    const parameters = compiledQuery.parameters as unknown[];
    if (statement.reader) return Promise.resolve({ rows: statement.all(parameters) as R[] });
    const { changes, lastInsertRowid } = statement.run(parameters);
    return Promise.resolve({ numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] });
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not used with SQLite');
  }
}

class QueuedSqliteDriver implements Driver {
  private readonly mutex = new FifoMutex();
  private readonly connection: CachedStatementConnection;

  constructor(private readonly db: SqliteDatabase) {
    this.connection = new CachedStatementConnection(db);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    // SQLite has one connection: requests take turns, first come first served.
    await this.mutex.lock();
    return this.connection;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(): Promise<void> {
    this.mutex.unlock();
  }

  async destroy(): Promise<void> {
    this.db.close();
  }
}

export class QueuedSqliteDialect extends SqliteDialect {
  constructor(private readonly sqlite: SqliteDatabase) {
    super({ database: sqlite });
  }

  override createDriver(): Driver {
    return new QueuedSqliteDriver(this.sqlite);
  }
}
