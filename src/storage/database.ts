// The Kysely factory: the one place that knows which backend is in use.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from './sqlite-driver.js';
import pg from 'pg';
import { Kysely, Migrator, PostgresDialect, sql, type Dialect, type MigrationProvider } from 'kysely';
import { QueuedSqliteDialect, type ConnectionStats } from './sqlite-dialect.js';
import { observedDialect, type StorageObserver } from './observed-dialect.js';
import { startBackgroundCheckpoints, WAL_SIZE_LIMIT_BYTES, type BackgroundCheckpointer } from './sqlite-checkpointer.js';
import type { Database } from './schema.js';
import { migrations } from './migrations/index.js';
import { PostgresNotifications, type Notifications } from './notifications.js';

export type Backend = 'sqlite' | 'postgres';

export interface Storage {
  db: Kysely<Database>;
  backend: Backend;
  /** Cross-process notifications; only PostgreSQL has them (SQLite serves one process). */
  notifications: Notifications | undefined;
  /**
   * SQLite only: a number that changes when another connection to the file (another process)
   * commits, and not on this process's own commits; in-memory read models compare it before use.
   */
  dataVersion: (() => number) | undefined;
  /** Applies pending migrations and returns the names of those it applied; safe to call from several processes at once. */
  migrate(): Promise<string[]>;
  /** A lightweight read of a real table, for readiness checks. */
  ping(): Promise<void>;
  /** The connections: the pool's on PostgreSQL, the one connection on SQLite (for metrics). */
  connections(): ConnectionStats;
  /** SQLite with background checkpoints: their worker (for the status body). */
  checkpointer: BackgroundCheckpointer | undefined;
  close(): Promise<void>;
}

const migrationProvider: MigrationProvider = { getMigrations: async () => migrations };

export interface StorageOptions {
  /** Times connection waits and transactions (the operator's metrics). */
  observer?: StorageObserver;
  /**
   * SQLite file: checkpoint the WAL from a worker thread rather than inside commits
   * (sqlite-checkpointer.ts). For the server's storage; a short-lived command keeps SQLite's own.
   */
  backgroundCheckpoints?: { intervalMs?: number; restartFrames?: number };
}

function dialectFor(dialect: Dialect, options: StorageOptions): Dialect {
  return options.observer ? observedDialect(dialect, options.observer) : dialect;
}

interface Opened {
  db: Kysely<Database>;
  dataVersion: (() => number) | undefined;
  connections: () => ConnectionStats;
  checkpointer?: BackgroundCheckpointer;
}

function openSqlite(path: string, options: StorageOptions): Opened {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const database = new SQLite(path);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  // Another process (a CLI command beside the server) may hold the write lock briefly.
  database.pragma('busy_timeout = 5000');
  // Outside the connection queue: the pragma only reads a counter of the connection.
  const dataVersion = database.prepare('pragma data_version').pluck();
  const dialect = new QueuedSqliteDialect(database);
  let checkpointer: BackgroundCheckpointer | undefined;
  if (options.backgroundCheckpoints && path !== ':memory:') {
    database.pragma('wal_autocheckpoint = 0');
    // After a burst past the limit, the WAL file shrinks back when it starts over.
    database.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    checkpointer = startBackgroundCheckpoints(path, {
      ...options.backgroundCheckpoints,
      pauseWrites: (work) => dialect.exclusively(work),
      onLost: () => {
        if (database.open) database.pragma('wal_autocheckpoint = 1000'); // SQLite's default
      },
    });
  }
  return {
    db: new Kysely<Database>({ dialect: dialectFor(dialect, options) }),
    dataVersion: () => dataVersion.get() as number,
    connections: () => dialect.connections(),
    checkpointer,
  };
}

function openPostgres(url: string, options: StorageOptions): Opened {
  // int8 columns (counters, sequences) fit JavaScript numbers well below 2^53.
  pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // Just-in-time compilation pays off for long analytic queries, never for these: a history read
  // whose estimate looked large spent 318 ms compiling a 20 ms plan (bench/HISTORY.md, "History").
  // Set before the connection's first query (a client runs its queries in order); a server without
  // JIT refuses the setting, which changes nothing then.
  pool.on('connect', (client) => {
    client.query('set jit = off').catch(() => {});
  });
  return {
    db: new Kysely<Database>({ dialect: dialectFor(new PostgresDialect({ pool }), options) }),
    dataVersion: undefined,
    connections: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  };
}

export function openStorage(databaseUrl: string, options: StorageOptions = {}): Storage {
  const backend: Backend = databaseUrl.startsWith('sqlite:') ? 'sqlite' : 'postgres';
  const { db, dataVersion, connections, checkpointer } =
    backend === 'sqlite' ? openSqlite(databaseUrl.slice('sqlite:'.length), options) : openPostgres(databaseUrl, options);
  const notifications = backend === 'postgres' ? new PostgresNotifications(databaseUrl) : undefined;
  // Kysely's migrator takes a lock table on both backends, so concurrent starts apply each migration once.
  // On PostgreSQL its tables go in the current schema, named explicitly: otherwise the migrator
  // would take another schema's migration table for its own.
  async function migrateOnce(): Promise<string[]> {
    const migrationTableSchema =
      backend === 'postgres' ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema : undefined;
    const { error, results } = await new Migrator({ db, provider: migrationProvider, migrationTableSchema }).migrateToLatest();
    const failed = results?.find((result) => result.status === 'Error');
    if (error) throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${String(error)}`, { cause: error });
    return (results ?? []).filter((result) => result.status === 'Success').map((result) => result.migrationName);
  }

  return {
    db,
    backend,
    notifications,
    dataVersion,
    async migrate() {
      // The migrator lists the tables of every schema before it starts; on PostgreSQL that listing
      // fails when another schema is dropped meanwhile, so such a failure is retried.
      for (let attempt = 1; ; attempt++) {
        try {
          return await migrateOnce();
        } catch (error) {
          const code = (error as { cause?: { code?: string } }).cause?.code;
          if (backend !== 'postgres' || attempt >= 5 || (code !== '3F000' && code !== '42P01')) throw error;
          await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
        }
      }
    },
    connections,
    checkpointer,
    async ping() {
      await sql`select id from accounts limit 1`.execute(db);
    },
    async close() {
      await notifications?.close();
      // The worker's connection first: the server's, closed last, checkpoints what is left and removes the WAL.
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}
