import type { Insertable, Selectable } from 'kysely';
import type { CutOffReason } from '../../platform/credential.js';
import type { AppsTable, Executor } from '../../storage/schema.js';
import { nextCreatedSeq } from '../../storage/creation-order.js';
import type { App } from './schemas.js';

export interface AppRow {
  id: string;
  accountId: string;
  clientId: string;
  name: string;
  type: App['type'];
  redirectUris: string[];
  scopes: string[];
  clientSecretHash: string | null;
  /** The API key that registered it, changed its scopes or rotated its secret: its client credentials end with that key. */
  authorizedByKeyId: string | null;
  /** Set when that key ended: no client-credentials token until a live key changes its scopes or secret. */
  clientCredentialsEnded: CutOffReason | null;
  createdAt: string;
  updatedAt: string;
}

function toApp(row: Selectable<AppsTable>): AppRow {
  return {
    id: row.id,
    accountId: row.account_id,
    clientId: row.client_id,
    name: row.name,
    type: row.type as AppRow['type'],
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    scopes: JSON.parse(row.scopes) as string[],
    clientSecretHash: row.client_secret_hash,
    authorizedByKeyId: row.authorized_by_key_id,
    clientCredentialsEnded: row.client_credentials_ended as CutOffReason | null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toColumns(app: AppRow): Insertable<AppsTable> {
  return {
    id: app.id,
    account_id: app.accountId,
    client_id: app.clientId,
    name: app.name,
    type: app.type,
    redirect_uris: JSON.stringify(app.redirectUris),
    scopes: JSON.stringify(app.scopes),
    client_secret_hash: app.clientSecretHash,
    authorized_by_key_id: app.authorizedByKeyId,
    client_credentials_ended: app.clientCredentialsEnded,
    created_at: app.createdAt,
    updated_at: app.updatedAt,
  };
}

export async function insertApp(db: Executor, app: AppRow): Promise<void> {
  await db
    .insertInto('apps')
    .values({ ...toColumns(app), created_seq: nextCreatedSeq('apps', app.accountId) })
    .execute();
}

export async function updateApp(db: Executor, app: AppRow): Promise<void> {
  const { id: _id, account_id: _account, client_id: _client, created_at: _created, ...changes } = toColumns(app);
  await db.updateTable('apps').set(changes).where('id', '=', app.id).execute();
}

export async function findApp(db: Executor, accountId: string, id: string): Promise<AppRow | undefined> {
  const row = await db.selectFrom('apps').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return row && toApp(row);
}

export async function findAppByClientId(db: Executor, clientId: string): Promise<AppRow | undefined> {
  const row = await db.selectFrom('apps').selectAll().where('client_id', '=', clientId).executeTakeFirst();
  return row && toApp(row);
}

export async function listApps(db: Executor, accountId: string): Promise<AppRow[]> {
  const rows = await db.selectFrom('apps').selectAll().where('account_id', '=', accountId).orderBy('created_seq').orderBy('id').execute();
  return rows.map(toApp);
}

export async function deleteApp(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('apps').where('id', '=', id).execute();
}

/** The authorizing key of each of these apps whose client credentials have not ended. */
export async function appAuthorizingKeys(db: Executor, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('apps')
    .select(['id', 'authorized_by_key_id'])
    .where('id', 'in', ids)
    .where('client_credentials_ended', 'is', null)
    .execute();
  return new Map(rows.flatMap((row) => (row.authorized_by_key_id === null ? [] : [[row.id, row.authorized_by_key_id] as const])));
}

/** The confidential apps whose client credentials rest on these keys and have not ended. */
export async function confidentialAppsAuthorizedBy(db: Executor, keyIds: readonly string[]): Promise<AppRow[]> {
  if (keyIds.length === 0) return [];
  const rows = await db
    .selectFrom('apps')
    .selectAll()
    .where('authorized_by_key_id', 'in', keyIds)
    .where('type', '=', 'confidential')
    .where('client_credentials_ended', 'is', null)
    .execute();
  return rows.map(toApp);
}

/** The keys the client credentials of confidential apps rest on, where they have not ended. */
export async function clientCredentialKeys(db: Executor): Promise<string[]> {
  const rows = await db
    .selectFrom('apps')
    .select('authorized_by_key_id')
    .distinct()
    .where('type', '=', 'confidential')
    .where('client_credentials_ended', 'is', null)
    .where('authorized_by_key_id', 'is not', null)
    .execute();
  return rows.map((row) => row.authorized_by_key_id as string);
}

/** Records that an app's client credentials ended; false when another transaction did first. */
export async function endClientCredentials(db: Executor, appId: string, reason: CutOffReason, nowIso: string): Promise<boolean> {
  const result = await db
    .updateTable('apps')
    .set({ client_credentials_ended: reason, updated_at: nowIso })
    .where('id', '=', appId)
    .where('client_credentials_ended', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function countApps(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('apps')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}
