import type { Executor } from '../../storage/schema.js';

export interface ConnectionRow {
  id: string;
  accountId: string;
  appId: string;
  approvingKeyId: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string;
  endedAt: string | null;
}

export interface TokenRow {
  id: string;
  kind: 'access' | 'refresh';
  appId: string;
  accountId: string;
  connectionId: string | null;
  scopes: string[];
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
  rotatedAt: string | null;
}

export interface CodeRow {
  connectionId: string;
  redirectUri: string;
  codeChallenge: string;
  expiresAt: string;
  usedAt: string | null;
}

export { setting } from '../../storage/settings.js';

export async function insertConnection(db: Executor, row: ConnectionRow): Promise<void> {
  await db
    .insertInto('oauth_connections')
    .values({
      id: row.id,
      account_id: row.accountId,
      app_id: row.appId,
      approving_key_id: row.approvingKeyId,
      scopes: JSON.stringify(row.scopes),
      created_at: row.createdAt,
      expires_at: row.expiresAt,
      ended_at: null,
      ended_reason: null,
    })
    .execute();
}

export async function findConnection(db: Executor, id: string): Promise<ConnectionRow | undefined> {
  const row = await db.selectFrom('oauth_connections').selectAll().where('id', '=', id).executeTakeFirst();
  return (
    row && {
      id: row.id,
      accountId: row.account_id,
      appId: row.app_id,
      approvingKeyId: row.approving_key_id,
      scopes: JSON.parse(row.scopes) as string[],
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      endedAt: row.ended_at,
    }
  );
}

/** Ends a connection and revokes its tokens; false when it had already ended. */
export async function endConnection(db: Executor, id: string, reason: string, nowIso: string): Promise<boolean> {
  const result = await db
    .updateTable('oauth_connections')
    .set({ ended_at: nowIso, ended_reason: reason })
    .where('id', '=', id)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  await db.updateTable('oauth_tokens').set({ revoked_at: nowIso }).where('connection_id', '=', id).where('revoked_at', 'is', null).execute();
  return Number(result.numUpdatedRows) > 0;
}

export async function openConnectionsOf(db: Executor, filter: { approvingKeyId?: string; appId?: string }): Promise<Array<{ id: string; accountId: string }>> {
  let query = db.selectFrom('oauth_connections').select(['id', 'account_id']).where('ended_at', 'is', null);
  if (filter.approvingKeyId !== undefined) query = query.where('approving_key_id', '=', filter.approvingKeyId);
  if (filter.appId !== undefined) query = query.where('app_id', '=', filter.appId);
  return (await query.execute()).map((row) => ({ id: row.id, accountId: row.account_id }));
}

/** Connections not yet ended whose time has run out. */
export async function expiredOpenConnections(db: Executor, nowIso: string): Promise<Array<{ id: string; accountId: string }>> {
  const rows = await db.selectFrom('oauth_connections').select(['id', 'account_id']).where('ended_at', 'is', null).where('expires_at', '<=', nowIso).execute();
  return rows.map((row) => ({ id: row.id, accountId: row.account_id }));
}

/** Open, unexpired connections among these ids, with their approving keys. */
export async function liveConnections(db: Executor, ids: string[], nowIso: string): Promise<Array<{ id: string; approvingKeyId: string }>> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('oauth_connections')
    .select(['id', 'approving_key_id'])
    .where('id', 'in', ids)
    .where('ended_at', 'is', null)
    .where('expires_at', '>', nowIso)
    .execute();
  return rows.map((row) => ({ id: row.id, approvingKeyId: row.approving_key_id }));
}

export async function insertCode(db: Executor, codeHash: string, row: CodeRow): Promise<void> {
  await db
    .insertInto('oauth_codes')
    .values({
      code_hash: codeHash,
      connection_id: row.connectionId,
      redirect_uri: row.redirectUri,
      code_challenge: row.codeChallenge,
      expires_at: row.expiresAt,
      used_at: null,
    })
    .execute();
}

export async function findCode(db: Executor, codeHash: string): Promise<CodeRow | undefined> {
  const row = await db.selectFrom('oauth_codes').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
  return (
    row && { connectionId: row.connection_id, redirectUri: row.redirect_uri, codeChallenge: row.code_challenge, expiresAt: row.expires_at, usedAt: row.used_at }
  );
}

/** Marks a code used; false when it already was (so a second use, even a concurrent one, is seen). */
export async function takeCode(db: Executor, codeHash: string, nowIso: string): Promise<boolean> {
  const result = await db.updateTable('oauth_codes').set({ used_at: nowIso }).where('code_hash', '=', codeHash).where('used_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function insertToken(db: Executor, tokenHash: string, row: TokenRow): Promise<void> {
  await db
    .insertInto('oauth_tokens')
    .values({
      token_hash: tokenHash,
      id: row.id,
      kind: row.kind,
      app_id: row.appId,
      account_id: row.accountId,
      connection_id: row.connectionId,
      scopes: JSON.stringify(row.scopes),
      created_at: row.createdAt,
      expires_at: row.expiresAt,
      revoked_at: null,
      rotated_at: null,
    })
    .execute();
}

export async function findToken(db: Executor, tokenHash: string): Promise<TokenRow | undefined> {
  const row = await db.selectFrom('oauth_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  return (
    row && {
      id: row.id,
      kind: row.kind as TokenRow['kind'],
      appId: row.app_id,
      accountId: row.account_id,
      connectionId: row.connection_id,
      scopes: JSON.parse(row.scopes) as string[],
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      revokedAt: row.revoked_at,
      rotatedAt: row.rotated_at,
    }
  );
}

/** The usable access token with this hash, with what the request needs to know about it. */
export async function findUsableAccessToken(
  db: Executor,
  tokenHash: string,
  nowIso: string,
): Promise<(TokenRow & { accountName: string; clientId: string; connectionExpiresAt: string | null; authorizingKeyId: string | null }) | undefined> {
  const row = await db
    .selectFrom('oauth_tokens')
    .innerJoin('apps', 'apps.id', 'oauth_tokens.app_id')
    .innerJoin('accounts', 'accounts.id', 'oauth_tokens.account_id')
    .leftJoin('oauth_connections', 'oauth_connections.id', 'oauth_tokens.connection_id')
    .select([
      'oauth_tokens.id',
      'oauth_tokens.app_id',
      'oauth_tokens.account_id',
      'oauth_tokens.connection_id',
      'oauth_tokens.scopes',
      'oauth_tokens.created_at',
      'oauth_tokens.expires_at',
      'apps.client_id',
      'apps.authorized_by_key_id as app_key_id',
      'accounts.name as account_name',
      'oauth_connections.expires_at as connection_expires_at',
      'oauth_connections.ended_at as connection_ended_at',
      'oauth_connections.approving_key_id',
    ])
    .where('oauth_tokens.token_hash', '=', tokenHash)
    .where('oauth_tokens.kind', '=', 'access')
    .where('oauth_tokens.revoked_at', 'is', null)
    .where('oauth_tokens.expires_at', '>', nowIso)
    .executeTakeFirst();
  if (!row || row.connection_ended_at !== null) return undefined;
  return {
    id: row.id,
    kind: 'access',
    appId: row.app_id,
    accountId: row.account_id,
    connectionId: row.connection_id,
    scopes: JSON.parse(row.scopes) as string[],
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: null,
    rotatedAt: null,
    accountName: row.account_name,
    clientId: row.client_id,
    connectionExpiresAt: row.connection_expires_at,
    // A user's grant rests on the key that approved its connection; client credentials on the app's key.
    authorizingKeyId: row.connection_id !== null ? row.approving_key_id : row.app_key_id,
  };
}

/** Marks a refresh token exchanged; false when it already was (a reuse). */
export async function rotateRefreshToken(db: Executor, tokenHash: string, nowIso: string): Promise<boolean> {
  const result = await db
    .updateTable('oauth_tokens')
    .set({ rotated_at: nowIso })
    .where('token_hash', '=', tokenHash)
    .where('rotated_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function revokeToken(db: Executor, tokenHash: string, nowIso: string): Promise<void> {
  await db.updateTable('oauth_tokens').set({ revoked_at: nowIso }).where('token_hash', '=', tokenHash).where('revoked_at', 'is', null).execute();
}

/** Revokes an app's client-credentials tokens (those of no connection). */
export async function revokeClientCredentialTokens(db: Executor, appId: string, nowIso: string): Promise<void> {
  await db
    .updateTable('oauth_tokens')
    .set({ revoked_at: nowIso })
    .where('app_id', '=', appId)
    .where('connection_id', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();
}

export async function revokeAppTokens(db: Executor, appId: string, nowIso: string): Promise<void> {
  await db.updateTable('oauth_tokens').set({ revoked_at: nowIso }).where('app_id', '=', appId).where('revoked_at', 'is', null).execute();
}
