import type { Kysely } from 'kysely';

// The retention task looks for open OAuth connections whose time has run out, every minute: an
// index on the expiry keeps that a range read however many connections have ever been made.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('oauth_connections_expiry_idx').on('oauth_connections').columns(['expires_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('oauth_connections_expiry_idx').execute();
}
