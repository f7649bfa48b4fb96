import { sql, type Kysely } from 'kysely';

// How many resources an account has, of each type and with each tag, kept as the resources change
// (areas/resources/store.ts, in the writing transaction) so that a list's `total` is one row read
// instead of a count over the account. Tag rows get the resource's place in creation order, so a
// tag's page is an index range like the account's and a type's; a page at a large offset reads
// only such an index up to its first row (store.ts).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('resource_counts')
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    // '' for the whole account, 'type' or 'tag'.
    .addColumn('kind', 'text', (col) => col.notNull())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('count', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('resource_counts_pk', ['account_id', 'kind', 'name'])
    .execute();
  await countResources(db);

  await db.schema.alterTable('resource_tags').addColumn('created_seq', 'bigint').execute();
  await sql`update resource_tags set created_seq = (select created_seq from resources where resources.id = resource_tags.resource_id)`.execute(db);
  // Serves what the index it replaces served (a tag's rows of an account), in creation order.
  await db.schema.createIndex('resource_tags_order_idx').on('resource_tags').columns(['account_id', 'tag', 'created_seq']).execute();
  await db.schema.dropIndex('resource_tags_lookup_idx').execute();
}

/** Fills the empty table from the resources there are (exported for tests that write resources directly). */
export async function countResources(db: Kysely<unknown>): Promise<void> {
  await sql`
    insert into resource_counts (account_id, kind, name, count)
    select account_id, '', '', count(*) from resources group by account_id`.execute(db);
  await sql`
    insert into resource_counts (account_id, kind, name, count)
    select account_id, 'type', type, count(*) from resources group by account_id, type`.execute(db);
  await sql`
    insert into resource_counts (account_id, kind, name, count)
    select account_id, 'tag', tag, count(*) from resource_tags group by account_id, tag`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('resource_tags_lookup_idx').on('resource_tags').columns(['account_id', 'tag', 'resource_id']).execute();
  await db.schema.dropIndex('resource_tags_order_idx').execute();
  await db.schema.alterTable('resource_tags').dropColumn('created_seq').execute();
  await db.schema.dropTable('resource_counts').execute();
}
