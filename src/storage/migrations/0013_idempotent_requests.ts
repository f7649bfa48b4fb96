import type { Kysely } from 'kysely';

// The outcomes of requests sent with an Idempotency-Key (api-decisions §11), kept 24 hours: a retry
// with the same key is answered from here. `scope` is the account (or, before there is one, the
// caller's address: signup); `body` is sealed under the secrets key when it holds a secret.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('idempotent_requests')
    .addColumn('scope', 'text', (col) => col.notNull())
    .addColumn('key', 'text', (col) => col.notNull())
    .addColumn('fingerprint', 'text', (col) => col.notNull())
    .addColumn('status', 'integer', (col) => col.notNull())
    .addColumn('headers', 'text', (col) => col.notNull())
    .addColumn('body', 'text', (col) => col.notNull())
    .addColumn('sealed', 'integer', (col) => col.notNull())
    .addColumn('created_at', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('idempotent_requests_pk', ['scope', 'key'])
    .execute();
  await db.schema.createIndex('idempotent_requests_created_at').on('idempotent_requests').columns(['created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('idempotent_requests').execute();
}
