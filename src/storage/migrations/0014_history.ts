import { PostgresAdapter, sql, type Kysely } from 'kysely';
import { historyPartitionDays, historyPartitionSql } from '../history-partitions.js';

// The history of resources' states (api-decisions §13, docs/architecture.md "History"):
// - history_series: one row per resource with history, its compact integer key (never reused, so
//   a deleted resource's points can be removed later, in small steps, without being mistaken for a
//   new resource's), how far its hourly aggregates are built, and whether it was retired;
// - history_points: one row per state, keyed by (series, at in epoch ms). `value` holds a number or
//   a boolean (1/0), `text` a string. SQLite: a table without a rowid, so the key is the only index
//   (bytes per point: bench/README.md). PostgreSQL: partitioned by day on `at`, so retention drops
//   a partition; the default partition takes what falls before the first one;
// - history_hours: the hourly aggregates that serve buckets of an hour and longer;
// - history_stale: hours whose aggregate a backfill made out of date, built again by housekeeping.
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable('history_series')
    .addColumn('key', postgres ? 'bigint' : 'integer', (col) => (postgres ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement()))
    .addColumn('resource_id', 'text', (col) => col.notNull().unique())
    .addColumn('account_id', 'text', (col) => col.notNull())
    // Hours before this one (epoch ms) are aggregated in history_hours, or are in history_stale.
    .addColumn('rolled_until', 'bigint', (col) => col.notNull())
    .addColumn('retired', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('history_series_rolled_idx').on('history_series').columns(['rolled_until']).where(sql.ref('retired'), '=', 0).execute();
  await db.schema.createIndex('history_series_retired_idx').on('history_series').columns(['key']).where(sql.ref('retired'), '=', 1).execute();

  if (postgres) {
    await sql`
      create table history_points (
        series bigint not null, at bigint not null, value double precision, text text,
        primary key (series, at)
      ) partition by range (at)`.execute(db);
    await sql`create table history_points_default partition of history_points default`.execute(db);
    for (const day of historyPartitionDays(Date.now())) await sql.raw(historyPartitionSql(day)).execute(db);
  } else {
    await sql`
      create table history_points (
        series integer not null, at integer not null, value real, text text,
        primary key (series, at)
      ) without rowid`.execute(db);
  }

  await db.schema
    .createTable('history_hours')
    .addColumn('series', 'bigint', (col) => col.notNull())
    .addColumn('hour', 'bigint', (col) => col.notNull())
    .addColumn('count', 'integer', (col) => col.notNull())
    .addColumn('numeric_count', 'integer', (col) => col.notNull())
    .addColumn('min', postgres ? 'double precision' : 'real')
    .addColumn('max', postgres ? 'double precision' : 'real')
    .addColumn('sum', postgres ? 'double precision' : 'real')
    .addColumn('first_at', 'bigint', (col) => col.notNull())
    .addColumn('last_at', 'bigint', (col) => col.notNull())
    .addColumn('last_value', postgres ? 'double precision' : 'real')
    .addColumn('last_text', 'text')
    // Time spent true from the first point of the hour to its end (booleans).
    .addColumn('true_ms', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('history_hours_pk', ['series', 'hour'])
    .execute();

  await db.schema
    .createTable('history_stale')
    .addColumn('series', 'bigint', (col) => col.notNull())
    .addColumn('hour', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('history_stale_pk', ['series', 'hour'])
    .execute();

  // The resources there are start their history now: nothing to aggregate before this hour.
  const hour = Date.now() - (Date.now() % 3_600_000);
  await sql`
    insert into history_series (resource_id, account_id, rolled_until)
    select id, account_id, ${hour} from resources order by account_id, created_seq`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['history_stale', 'history_hours', 'history_points', 'history_series']) await db.schema.dropTable(table).execute();
}
