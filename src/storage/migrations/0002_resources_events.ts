import type { Kysely } from 'kysely';

// Resources with their tags, and the per-account event log.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('resources')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('state', 'text', (col) => col.notNull())
    .addColumn('attributes', 'text', (col) => col.notNull())
    .addColumn('tags', 'text', (col) => col.notNull())
    .addColumn('version', 'integer', (col) => col.notNull())
    // The id of the resource.created event: orders resources by creation, ties impossible.
    .addColumn('created_seq', 'bigint', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('updated_at', 'text', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('resources_account_created_idx').on('resources').columns(['account_id', 'created_seq']).execute();
  await db.schema.createIndex('resources_account_type_idx').on('resources').columns(['account_id', 'type', 'created_seq']).execute();

  // One row per tag, so the tag filter is a plain indexed lookup on both backends.
  await db.schema
    .createTable('resource_tags')
    .addColumn('resource_id', 'text', (col) => col.notNull().references('resources.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('tag', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('resource_tags_pk', ['resource_id', 'tag'])
    .execute();
  await db.schema.createIndex('resource_tags_lookup_idx').on('resource_tags').columns(['account_id', 'tag', 'resource_id']).execute();

  await db.schema
    .createTable('events')
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'bigint', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('data', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('events_pk', ['account_id', 'id'])
    .execute();
  await db.schema.createIndex('events_account_type_idx').on('events').columns(['account_id', 'type', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['events', 'resource_tags', 'resources']) await db.schema.dropTable(table).execute();
}
