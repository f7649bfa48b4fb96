import type { Kysely } from 'kysely';

// Webhooks and their delivery outbox.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('url', 'text', (col) => col.notNull())
    .addColumn('events', 'text', (col) => col.notNull())
    .addColumn('enabled', 'integer', (col) => col.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('secret', 'text', (col) => col.notNull())
    // The key or OAuth connection that created or last enabled the webhook: delivery stops with it.
    .addColumn('authorized_by_kind', 'text', (col) => col.notNull())
    .addColumn('authorized_by_id', 'text', (col) => col.notNull())
    .addColumn('pending_count', 'integer', (col) => col.notNull().defaultTo(0))
    // While the queue is full: the first and last dropped event ids and how many were dropped.
    .addColumn('gap_from', 'bigint')
    .addColumn('gap_to', 'bigint')
    .addColumn('gap_dropped', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('updated_at', 'text', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('webhooks_account_idx').on('webhooks').columns(['account_id', 'created_at']).execute();
  await db.schema.createIndex('webhooks_authorizer_idx').on('webhooks').columns(['authorized_by_id']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('webhook_id', 'text', (col) => col.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('event_id', 'bigint', (col) => col.notNull())
    .addColumn('event_type', 'text', (col) => col.notNull())
    /** The exact body sent on every attempt. */
    .addColumn('payload', 'text', (col) => col.notNull())
    .addColumn('gap', 'text')
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('attempts', 'text', (col) => col.notNull())
    .addColumn('next_attempt_at', 'text')
    .addColumn('claimed_until', 'text')
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('completed_at', 'text')
    .execute();
  await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('webhook_deliveries_webhook_idx').on('webhook_deliveries').columns(['webhook_id', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('webhooks').execute();
}
