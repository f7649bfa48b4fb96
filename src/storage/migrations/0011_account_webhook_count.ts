import { sql, type Kysely } from 'kysely';

// How many webhooks an account has, kept on its row as webhooks are created and deleted
// (areas/webhooks/store.ts, in the same transaction). A write takes the account's row first (its
// event counter) and reads this with it, so the webhook outbox looks up the account's webhooks
// only when there are some: that lookup was one of the statements every write made while holding
// the row's lock (bench/HISTORY.md, "PostgreSQL: reads from memory in every process, and the writes").
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('accounts')
    .addColumn('webhook_count', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  await sql`update accounts set webhook_count = (select count(*) from webhooks where webhooks.account_id = accounts.id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').dropColumn('webhook_count').execute();
}
