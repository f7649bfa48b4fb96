// Kysely's SQLite dialect with four changes that matter under concurrent requests (measured with
// npm run bench): prepared statements are cached by SQL text instead of prepared on every query,
// waiters for the single connection queue in order instead of all waking at each release,
// transactions that queue behind one another commit together (group commit, below), and a
// transaction's prepared queries may run on the connection directly (transactionStatementRunner).
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import { CompiledQuery, SqliteDialect, type DatabaseConnection, type DialectAdapter, type Driver, type QueryResult } from 'kysely';

/** Prepared statements kept by SQL text, the least recently used dropped past it. */
export const STATEMENT_CACHE_SIZE = 500;

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

  get held(): boolean {
    return this.locked;
  }

  get waiting(): number {
    return this.waiters.length;
  }
}

class CachedStatementConnection implements DatabaseConnection {
  // lru-cache marks a statement used without touching its Map. Re-inserting into a Map on every
  // query (delete, then set) made the Map rebuild its table every few dozen queries, each new
  // table allocated straight in V8's old space: the largest share of what a PATCH promoted, and
  // many of the mark-compacts under steady writes (bench/HISTORY.md, "Long runs").
  private readonly statements = new LRUCache<string, Statement>({ max: STATEMENT_CACHE_SIZE });

  constructor(private readonly db: SqliteDatabase) {}

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.statement(compiledQuery.sql);
    const parameters = compiledQuery.parameters as unknown[];
    if (statement.reader) return Promise.resolve({ rows: statement.all(parameters) as R[] });
    const { changes, lastInsertRowid } = statement.run(parameters);
    return Promise.resolve({ numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] });
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not used with SQLite');
  }
}

/** The most transactions one commit takes: bounds how long the first of them waits. */
const GROUP_COMMIT_MAX = 32;
/**
 * Turns of the event loop a group of two or more waits before it commits, so that the requests
 * read in that turn join it; a lone transaction does not wait.
 */
const GROUP_COMMIT_EXTRA_TURNS = 1;

/** One turn at the connection; a statement outside a transaction first commits any open group. */
class Lease implements DatabaseConnection {
  inTransaction = false;
  /** Handed back when its transaction joined a group, before the group commits. */
  released = false;

  constructor(private readonly driver: QueuedSqliteDriver) {}

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    // A failed group commit fails the group's transactions, not this statement.
    if (!this.inTransaction) this.driver.commitGroup();
    return this.driver.connection.executeQuery(compiledQuery);
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not used with SQLite');
  }
}

/**
 * Group commit. A commit costs far more than the statements before it (writing its pages to the
 * write-ahead log and taking the write lock: most of a PATCH's SQLite time; bench/HISTORY.md,
 * "Figures the code's comments refer to"), and
 * requests that arrive together reach their transactions one after another within one turn of the
 * event loop. So a finished transaction does not commit: it hands the connection on, the next
 * transactions run as further savepoints of the same outer one, and that commits once, when the
 * event loop turns (setImmediate) with nobody at the connection, or earlier when a statement outside
 * a transaction needs the connection or GROUP_COMMIT_MAX have joined. A group of two or more (the
 * service is under load) waits GROUP_COMMIT_EXTRA_TURNS more turns: under the soak's paced load the
 * groups grew and the server used less CPU, the median response time unchanged (bench/HISTORY.md,
 * "Long runs"). Each transaction's commit
 * resolves only then, so nothing is reported, announced or kept in memory before it is durable,
 * and reads outside a transaction never see a group's uncommitted changes. A transaction that fails
 * rolls back to its savepoint alone; a failed group commit fails every transaction in it.
 * It made PATCH and POST /api/v1/events much faster (bench/HISTORY.md, "Earlier steps").
 */
class QueuedSqliteDriver implements Driver {
  private readonly mutex = new FifoMutex();
  /** The open outer transaction: the commits waiting for it. */
  private group: Array<{ resolve: () => void; reject: (error: unknown) => void }> | undefined;
  private commitScheduled = false;

  constructor(
    private readonly db: SqliteDatabase,
    readonly connection: CachedStatementConnection,
  ) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    // SQLite has one connection: requests take turns, first come first served.
    await this.mutex.lock();
    return new Lease(this);
  }

  private run(sql: string): void {
    void this.connection.executeQuery(CompiledQuery.raw(sql));
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    // Defence: a group whose outer transaction SQLite ended must fail, not be begun anew.
    if (this.group && !this.db.inTransaction) this.settleGroup(new Error('SQLite rolled the transaction back'));
    if (!this.group) {
      this.run('begin');
      this.group = [];
    }
    this.run('savepoint member');
    (connection as Lease).inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    this.run('release member');
    lease.inTransaction = false;
    const group = this.group as NonNullable<typeof this.group>;
    // Every commit of a group resolves the same way, in order: their callers carry on in commit order.
    const committed = new Promise<void>((resolve, reject) => group.push({ resolve, reject }));
    if (group.length >= GROUP_COMMIT_MAX) this.commitGroup();
    else {
      // The connection goes on to whoever comes next, in this transaction; this one's commit
      // resolves with theirs, at the latest when the event loop turns.
      this.scheduleCommit();
      lease.released = true;
      this.mutex.unlock();
    }
    return committed;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    (connection as Lease).inTransaction = false;
    if (this.db.inTransaction) {
      this.run('rollback to member');
      this.run('release member');
      return;
    }
    // SQLite ended the whole outer transaction itself (it does after some errors, e.g. a full
    // disk): what the group's other transactions wrote is gone with it.
    this.settleGroup(new Error('SQLite rolled the transaction back'));
  }

  /** Commits the open group, if any, and settles its transactions' commits (a failure fails them all). */
  commitGroup(): void {
    if (!this.group) return;
    try {
      this.run('commit');
    } catch (error) {
      if (this.db.inTransaction) this.run('rollback');
      this.settleGroup(error);
      return;
    }
    this.settleGroup(undefined);
  }

  private settleGroup(error: unknown): void {
    const group = this.group ?? [];
    this.group = undefined;
    for (const waiting of group) {
      if (error === undefined) waiting.resolve();
      else waiting.reject(error);
    }
  }

  private scheduleCommit(): void {
    if (this.commitScheduled) return;
    this.commitScheduled = true;
    let extraTurns = 0;
    const turn = () => {
      // Not while a transaction holds the connection: the last of the group commits it then.
      if (!this.mutex.held && (this.group?.length ?? 0) >= 2 && extraTurns < GROUP_COMMIT_EXTRA_TURNS) {
        extraTurns++;
        setImmediate(turn);
        return;
      }
      this.commitScheduled = false;
      if (!this.mutex.held) this.commitGroup();
    };
    setImmediate(turn);
  }

  /**
   * Runs `work` while no transaction is open on the connection and none can begin: the open group
   * is committed first, and whoever asks for the connection meanwhile waits (asynchronously).
   */
  async exclusively<T>(work: () => Promise<T>): Promise<T> {
    await this.mutex.lock();
    try {
      this.commitGroup();
      return await work();
    } finally {
      this.mutex.unlock();
    }
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    if (lease.released) return;
    lease.released = true;
    this.mutex.unlock();
    if (this.group && !this.mutex.held) this.scheduleCommit();
  }

  async destroy(): Promise<void> {
    this.commitGroup();
    this.db.close();
  }

  /** The one connection: whether it is taken, and how many wait for it (for metrics). */
  connections(): ConnectionStats {
    return { total: 1, idle: this.mutex.held ? 0 : 1, waiting: this.mutex.waiting };
  }
}

export interface ConnectionStats {
  total: number;
  idle: number;
  waiting: number;
}

type StatementRunner = (query: CompiledQuery) => Promise<QueryResult<unknown>>;

const transactionStatements = new WeakMap<DialectAdapter, StatementRunner>();

/**
 * Runs a statement of a transaction of this SQLite Kysely instance (known by its adapter) on the
 * connection itself, past Kysely's executor: its connection provider and promise chain cost
 * as much a statement as better-sqlite3 takes to run a prepared one (bench/HISTORY.md, "What changed"). Only for a transaction: it holds
 * the one connection from begin to commit, so no other statement can be running on it, and its
 * statements, being synchronous, run in the order they are called. Undefined for other dialects.
 */
export function transactionStatementRunner(adapter: DialectAdapter): StatementRunner | undefined {
  return transactionStatements.get(adapter);
}

export class QueuedSqliteDialect extends SqliteDialect {
  private readonly connection: CachedStatementConnection;

  constructor(private readonly sqlite: SqliteDatabase) {
    super({ database: sqlite });
    this.connection = new CachedStatementConnection(sqlite);
  }

  private driver: QueuedSqliteDriver | undefined;

  override createDriver(): Driver {
    this.driver = new QueuedSqliteDriver(this.sqlite, this.connection);
    return this.driver;
  }

  connections(): ConnectionStats {
    return this.driver?.connections() ?? { total: 1, idle: 1, waiting: 0 };
  }

  /** See QueuedSqliteDriver.exclusively (before Kysely made the driver, nothing can be writing). */
  exclusively<T>(work: () => Promise<T>): Promise<T> {
    return this.driver ? this.driver.exclusively(work) : work();
  }

  override createAdapter(): DialectAdapter {
    const adapter = super.createAdapter();
    transactionStatements.set(adapter, (query) => this.connection.executeQuery(query));
    return adapter;
  }
}
