import { PostgresAdapter, sql, type Kysely } from 'kysely';

// history_staged: the points of live writes as they are written, in the write's own transaction,
// appended in the order written; moved into history_points in batches by
// src/storage/history-staged.ts (before every read of history, and every second). A write then
// dirties the one page where the table ends instead of a page in each resource's run of points
// (bench/HISTORY.md, "History points staged"). No index: the table holds about a second of points.
// PostgreSQL: an identity column gives the order written; SQLite: the rowid.
export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`
      create table history_staged (
        id bigint generated always as identity, resource_id text not null, at bigint not null, value double precision, text text
      )`.execute(db);
  } else {
    await sql`create table history_staged (resource_id text not null, at integer not null, value real, text text)`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('history_staged').execute();
}
