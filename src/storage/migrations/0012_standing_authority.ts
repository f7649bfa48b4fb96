import type { Kysely } from 'kysely';

// Standing authority (docs/decisions.md): schedules and apps record the credential they act on.
// Existing ones take it from their audit records: a schedule from the latest record that created
// it or changed what it does, an app from the latest that registered it, changed its scopes or
// rotated its secret. A schedule whose record names no credential is disabled (credential_revoked);
// an app without one issues no client-credentials tokens. Credentials that had already ended are
// found by the first sweep (RETENTION_INTERVAL_MS), and a due run re-checks before acting.
// Webhooks recorded the credential that created or last enabled them; they now take the one that
// created them or last changed their url, events or enabled (a token that repointed a key's webhook);
// one whose record names a token no longer stored is cut off by the sweep.

const SCHEDULE_CHANGES = ['cron', 'at', 'timezone', 'action', 'enabled'];
const WEBHOOK_CHANGES = ['url', 'events', 'enabled'];

interface AuditActor {
  kind?: string;
  id?: string;
}

interface Row {
  type: string;
  actor: string;
  data: string;
}

// biome-ignore lint/suspicious/noExplicitAny: a migration runs on the schema as it was then, not on today's types.
type Db = Kysely<any>;

/** The object's records, newest first: read through the (account_id, seq) index, not the whole log once per object. */
async function auditTrail(db: Db, accountId: string, type: string, id: string, types: string[]): Promise<Row[]> {
  return db
    .selectFrom('audit_log')
    .select(['type', 'actor', 'data'])
    .where('account_id', '=', accountId)
    .where('target', '=', JSON.stringify({ type, id }))
    .where('type', 'in', types)
    .orderBy('seq', 'desc')
    .execute();
}

function changed(row: Row): string[] {
  const data = JSON.parse(row.data) as { changed?: unknown };
  return Array.isArray(data.changed) ? (data.changed as string[]) : [];
}

/** The authorizer an actor stands for: its key, or its token's connection or (client credentials) app. */
async function authorizerOf(db: Db, actorJson: string): Promise<{ kind: string; id: string } | undefined> {
  const actor = JSON.parse(actorJson) as AuditActor;
  if (actor.kind === 'api_key' && actor.id) return { kind: 'api_key', id: actor.id };
  if (actor.kind !== 'oauth_access_token' || !actor.id) return undefined;
  const token = await db.selectFrom('oauth_tokens').select(['app_id', 'connection_id']).where('id', '=', actor.id).executeTakeFirst();
  if (!token) return undefined;
  return token.connection_id !== null ? { kind: 'oauth_connection', id: token.connection_id } : { kind: 'oauth_app', id: token.app_id };
}

export async function up(db: Db): Promise<void> {
  await db.schema.alterTable('schedules').addColumn('disabled_reason', 'text').execute();
  await db.schema
    .alterTable('schedules')
    .addColumn('authorized_by_kind', 'text', (col) => col.notNull().defaultTo(''))
    .execute();
  await db.schema
    .alterTable('schedules')
    .addColumn('authorized_by_id', 'text', (col) => col.notNull().defaultTo(''))
    .execute();
  await db.schema.createIndex('schedules_authorizer_idx').on('schedules').columns(['authorized_by_id']).execute();
  await db.schema.alterTable('apps').addColumn('authorized_by_key_id', 'text').execute();
  await db.schema.alterTable('apps').addColumn('client_credentials_ended', 'text').execute();
  await db.schema.createIndex('apps_authorizer_idx').on('apps').columns(['authorized_by_key_id']).execute();

  for (const schedule of await db.selectFrom('schedules').select(['id', 'account_id']).execute()) {
    const trail = await auditTrail(db, schedule.account_id, 'schedule', schedule.id, ['schedule.created', 'schedule.updated']);
    const decisive = trail.find((row) => row.type === 'schedule.created' || changed(row).some((field) => SCHEDULE_CHANGES.includes(field)));
    const authorizer = decisive && (await authorizerOf(db, decisive.actor));
    await db
      .updateTable('schedules')
      .set(
        authorizer
          ? { authorized_by_kind: authorizer.kind, authorized_by_id: authorizer.id }
          : { enabled: 0, next_run_at: null, disabled_reason: 'credential_revoked', authorized_by_kind: 'api_key', authorized_by_id: '' },
      )
      .where('id', '=', schedule.id)
      .execute();
  }

  for (const app of await db.selectFrom('apps').select(['id', 'account_id']).execute()) {
    const trail = await auditTrail(db, app.account_id, 'app', app.id, ['app.created', 'app.updated', 'app.secret_rotated']);
    const decisive = trail.find((row) => row.type !== 'app.updated' || changed(row).includes('scopes'));
    const actor = decisive ? (JSON.parse(decisive.actor) as AuditActor) : undefined;
    if (actor?.kind === 'api_key' && actor.id) await db.updateTable('apps').set({ authorized_by_key_id: actor.id }).where('id', '=', app.id).execute();
  }

  for (const webhook of await db.selectFrom('webhooks').select(['id', 'account_id']).execute()) {
    const trail = await auditTrail(db, webhook.account_id, 'webhook', webhook.id, ['webhook.created', 'webhook.updated']);
    const decisive = trail.find((row) => row.type === 'webhook.created' || changed(row).some((field) => WEBHOOK_CHANGES.includes(field)));
    // No record: the credential 1.3.0 recorded (its creator or last enabler) stays.
    if (!decisive) continue;
    // A credential no longer to be found (its token went with its app) is no one's: the sweep and
    // the delivery re-check cut the webhook off, with its audit record and its queue cleared.
    const authorizer = (await authorizerOf(db, decisive.actor)) ?? { kind: 'api_key', id: '' };
    await db.updateTable('webhooks').set({ authorized_by_kind: authorizer.kind, authorized_by_id: authorizer.id }).where('id', '=', webhook.id).execute();
  }
}

export async function down(db: Db): Promise<void> {
  await db.schema.dropIndex('apps_authorizer_idx').execute();
  await db.schema.alterTable('apps').dropColumn('client_credentials_ended').execute();
  await db.schema.alterTable('apps').dropColumn('authorized_by_key_id').execute();
  await db.schema.dropIndex('schedules_authorizer_idx').execute();
  for (const column of ['authorized_by_id', 'authorized_by_kind', 'disabled_reason']) {
    await db.schema.alterTable('schedules').dropColumn(column).execute();
  }
}
