import type { Kysely } from 'kysely';

// Registered applications, OAuth connections (grants), authorization codes and tokens, and the
// service's own settings (a signing key shared by every process).
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('service_settings')
    .addColumn('name', 'text', (col) => col.primaryKey())
    .addColumn('value', 'text', (col) => col.notNull())
    .execute();

  await db.schema
    .createTable('apps')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('client_id', 'text', (col) => col.notNull().unique())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('redirect_uris', 'text', (col) => col.notNull())
    .addColumn('scopes', 'text', (col) => col.notNull())
    .addColumn('client_secret_hash', 'text')
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('updated_at', 'text', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('apps_account_idx').on('apps').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('oauth_connections')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('account_id', 'text', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('app_id', 'text', (col) => col.notNull().references('apps.id').onDelete('cascade'))
    .addColumn('approving_key_id', 'text', (col) => col.notNull())
    .addColumn('scopes', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('expires_at', 'text', (col) => col.notNull())
    .addColumn('ended_at', 'text')
    .addColumn('ended_reason', 'text')
    .execute();
  await db.schema.createIndex('oauth_connections_key_idx').on('oauth_connections').columns(['approving_key_id']).execute();

  await db.schema
    .createTable('oauth_codes')
    .addColumn('code_hash', 'text', (col) => col.primaryKey())
    .addColumn('connection_id', 'text', (col) => col.notNull().references('oauth_connections.id').onDelete('cascade'))
    .addColumn('redirect_uri', 'text', (col) => col.notNull())
    .addColumn('code_challenge', 'text', (col) => col.notNull())
    .addColumn('expires_at', 'text', (col) => col.notNull())
    .addColumn('used_at', 'text')
    .execute();

  await db.schema
    .createTable('oauth_tokens')
    .addColumn('token_hash', 'text', (col) => col.primaryKey())
    .addColumn('id', 'text', (col) => col.notNull().unique())
    .addColumn('kind', 'text', (col) => col.notNull())
    .addColumn('app_id', 'text', (col) => col.notNull().references('apps.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (col) => col.notNull())
    .addColumn('connection_id', 'text', (col) => col.references('oauth_connections.id').onDelete('cascade'))
    .addColumn('scopes', 'text', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addColumn('expires_at', 'text', (col) => col.notNull())
    .addColumn('revoked_at', 'text')
    .addColumn('rotated_at', 'text')
    .execute();
  await db.schema.createIndex('oauth_tokens_connection_idx').on('oauth_tokens').columns(['connection_id']).execute();
  await db.schema.createIndex('oauth_tokens_app_idx').on('oauth_tokens').columns(['app_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['oauth_tokens', 'oauth_codes', 'oauth_connections', 'apps', 'service_settings']) await db.schema.dropTable(table).execute();
}
