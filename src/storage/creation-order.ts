import { sql, type RawBuilder } from 'kysely';

/** Tables listed in creation order within an account (migration 0009). */
export type CreationOrdered = 'api_keys' | 'apps' | 'webhooks' | 'schedules';

/**
 * The value of `created_seq` for a row being inserted: one past the account's last. Two inserts for
 * one account at the same moment on PostgreSQL may take the same number; they then list by id.
 */
export function nextCreatedSeq(table: CreationOrdered, accountId: string): RawBuilder<number> {
  return sql<number>`(select coalesce(max(created_seq), 0) + 1 from ${sql.table(table)} where account_id = ${accountId})`;
}
