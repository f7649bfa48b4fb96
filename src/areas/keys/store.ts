import type { ExpressionBuilder, Selectable } from 'kysely';
import { prepare } from '../../storage/prepared.js';
import type { ApiKeysTable, Database, Executor } from '../../storage/schema.js';
import { nextCreatedSeq } from '../../storage/creation-order.js';

/** A key that works now: neither revoked nor expired (the one rule every query of usable keys applies). */
const usable = (nowIso: string) => (eb: ExpressionBuilder<Database, 'api_keys'>) => eb.and([eb('revoked_at', 'is', null), eb('expires_at', '>', nowIso)]);

export interface KeyRow {
  id: string;
  accountId: string;
  name: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

const KEY_COLUMNS = ['id', 'account_id', 'name', 'scopes', 'created_at', 'expires_at', 'revoked_at', 'last_used_at'] as const;

function toKey(row: Pick<Selectable<ApiKeysTable>, (typeof KEY_COLUMNS)[number]>): KeyRow {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    scopes: JSON.parse(row.scopes) as string[],
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
  };
}

export async function insertKey(db: Executor, key: KeyRow, keyHash: string): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({
      id: key.id,
      account_id: key.accountId,
      name: key.name,
      key_hash: keyHash,
      scopes: JSON.stringify(key.scopes),
      created_at: key.createdAt,
      expires_at: key.expiresAt,
      revoked_at: null,
      last_used_at: null,
      created_seq: nextCreatedSeq('api_keys', key.accountId),
    })
    .execute();
}

const usableKeyByHash = prepare((db, p: { keyHash: string; nowIso: string }) =>
  db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .select(['api_keys.id', 'api_keys.account_id', 'api_keys.scopes', 'api_keys.expires_at', 'accounts.name as account_name'])
    .where('api_keys.key_hash', '=', p.keyHash)
    .where('api_keys.revoked_at', 'is', null)
    .where('api_keys.expires_at', '>', p.nowIso),
);

/** What authenticating with a key needs of it. */
export interface UsableKey {
  id: string;
  accountId: string;
  accountName: string;
  scopes: string[];
  expiresAt: string;
}

/** The key with this hash if it is neither revoked nor expired at `nowIso`, with its account's name. */
export async function findUsableKeyByHash(db: Executor, keyHash: string, nowIso: string): Promise<UsableKey | undefined> {
  const row = await usableKeyByHash.first(db, { keyHash, nowIso });
  return row && { id: row.id, accountId: row.account_id, accountName: row.account_name, scopes: JSON.parse(row.scopes) as string[], expiresAt: row.expires_at };
}

export async function listUsableKeys(db: Executor, accountId: string, nowIso: string): Promise<KeyRow[]> {
  const rows = await db
    .selectFrom('api_keys')
    .select(KEY_COLUMNS)
    .where('account_id', '=', accountId)
    .where(usable(nowIso))
    .orderBy('created_seq')
    .orderBy('id')
    .execute();
  return rows.map(toKey);
}

/**
 * The account's active keys and the `endedLimit` that ended last (revoked, or expired: whichever
 * came first), in creation order. Ended keys are kept for good, so they are bounded here.
 */
export async function listKeysWithEnded(db: Executor, accountId: string, nowIso: string, endedLimit: number): Promise<KeyRow[]> {
  const rows = await db
    .selectFrom('api_keys')
    .select(KEY_COLUMNS)
    .where('account_id', '=', accountId)
    .where((eb) =>
      eb.or([
        eb.and([eb('revoked_at', 'is', null), eb('expires_at', '>', nowIso)]),
        eb(
          'id',
          'in',
          eb
            .selectFrom('api_keys')
            .select('id')
            .where('account_id', '=', accountId)
            .where((ended) => ended.or([ended('revoked_at', 'is not', null), ended('expires_at', '<=', nowIso)]))
            .orderBy((ended) => ended.fn.coalesce('revoked_at', 'expires_at'), 'desc')
            .orderBy('id', 'desc')
            .limit(endedLimit),
        ),
      ]),
    )
    .orderBy('created_seq')
    .orderBy('id')
    .execute();
  return rows.map(toKey);
}

/** Changes an active (unrevoked, unexpired) key of this account; false when there is none. */
async function changeActiveKey(
  db: Executor,
  accountId: string,
  keyId: string,
  nowIso: string,
  values: { name: string } | { revoked_at: string },
): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set(values)
    .where('id', '=', keyId)
    .where('account_id', '=', accountId)
    .where(usable(nowIso))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Renames an active key of this account; false when there is none. */
export function renameKey(db: Executor, accountId: string, keyId: string, name: string, nowIso: string): Promise<boolean> {
  return changeActiveKey(db, accountId, keyId, nowIso, { name });
}

/** Marks an active key of this account revoked; false when there was none to revoke. */
export function revokeKey(db: Executor, accountId: string, keyId: string, nowIso: string): Promise<boolean> {
  return changeActiveKey(db, accountId, keyId, nowIso, { revoked_at: nowIso });
}

/** Writes buffered last-use times; never moves a time backwards. */
export async function updateLastUsed(db: Executor, lastUsed: Map<string, string>): Promise<void> {
  for (const [keyId, at] of lastUsed) {
    await db
      .updateTable('api_keys')
      .set({ last_used_at: at })
      .where('id', '=', keyId)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
      .execute();
  }
}

/** Which of these keys are still usable (neither revoked nor expired). */
export async function usableKeyIds(db: Executor, keyIds: string[], nowIso: string): Promise<Set<string>> {
  if (keyIds.length === 0) return new Set();
  const rows = await db.selectFrom('api_keys').select('id').where('id', 'in', keyIds).where(usable(nowIso)).execute();
  return new Set(rows.map((row) => row.id));
}

/** Keys neither revoked nor expired. */
export async function countActiveKeys(db: Executor, accountId: string, nowIso: string): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('account_id', '=', accountId)
    .where(usable(nowIso))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Every key of the account, revoked and expired ones included, oldest first (never the hash). */
export async function listAllKeys(db: Executor, accountId: string): Promise<KeyRow[]> {
  const rows = await db.selectFrom('api_keys').select(KEY_COLUMNS).where('account_id', '=', accountId).orderBy('created_seq').orderBy('id').execute();
  return rows.map(toKey);
}

/** One key by id, whatever its state. */
export async function findKey(db: Executor, keyId: string): Promise<KeyRow | undefined> {
  const row = await db.selectFrom('api_keys').select(KEY_COLUMNS).where('id', '=', keyId).executeTakeFirst();
  return row && toKey(row);
}
