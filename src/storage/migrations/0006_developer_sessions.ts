import type { Kysely } from 'kysely';

// Developer sessions (cookie), and where an account came from (signup capacity counts signups).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('origin', 'text', (col) => col.notNull().defaultTo('operator'))
    .execute();
  await db.schema
    .createTable('developer_sessions')
    .addColumn('token_hash', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('expires_at', 'text', (col) => col.notNull())
    .addColumn('ended_at', 'text')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('developer_sessions').execute();
  await db.schema.alterTable('accounts').dropColumn('origin').execute();
}
