import { sql, type Kysely } from 'kysely';

// Keys, apps, webhooks and schedules are listed in creation order. Their timestamps have
// millisecond precision and their ids are random, so two made in the same millisecond came back
// in either order; each now records its position among the account's own (creation-order.ts).
const TABLES = ['api_keys', 'apps', 'webhooks', 'schedules'] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) {
    await db.schema.alterTable(table).addColumn('created_seq', 'bigint').execute();
    // Rows made before: numbered by the order they were listed in until now.
    await sql`
      update ${sql.table(table)} set created_seq = (
        select count(*) from ${sql.table(table)} as earlier
        where earlier.account_id = ${sql.table(table)}.account_id
          and (earlier.created_at < ${sql.table(table)}.created_at
            or (earlier.created_at = ${sql.table(table)}.created_at and earlier.id <= ${sql.table(table)}.id))
      )`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) await db.schema.alterTable(table).dropColumn('created_seq').execute();
}
