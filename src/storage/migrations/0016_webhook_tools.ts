import type { Kysely } from 'kysely';

// Webhook tools (api-decisions §14):
// - webhook_deliveries.origin: `event` (queued by the event's write), `test` (POST …/test) or
//   `replay` (POST …/replay and …/recover); a test is sent even while its webhook is disabled.
// - webhooks.failing_since / failed_deliveries: since when no delivery has succeeded (the first
//   failed attempt after the last success) and how many deliveries ended failed since, which
//   disable a webhook after WEBHOOK_DISABLE_AFTER_HOURS.
// - webhooks.held_until: the time before which its receiver asked for no requests (Retry-After).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('webhook_deliveries')
    .addColumn('origin', 'text', (col) => col.notNull().defaultTo('event'))
    .execute();
  await db.schema.alterTable('webhooks').addColumn('failing_since', 'text').execute();
  await db.schema.alterTable('webhooks').addColumn('held_until', 'text').execute();
  await db.schema
    .alterTable('webhooks')
    .addColumn('failed_deliveries', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhooks').dropColumn('failed_deliveries').execute();
  await db.schema.alterTable('webhooks').dropColumn('held_until').execute();
  await db.schema.alterTable('webhooks').dropColumn('failing_since').execute();
  await db.schema.alterTable('webhook_deliveries').dropColumn('origin').execute();
}
