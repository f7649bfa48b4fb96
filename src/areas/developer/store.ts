import type { Executor } from '../../storage/schema.js';

export async function insertSession(db: Executor, tokenHash: string, session: { accountId: string; createdAt: string; expiresAt: string }): Promise<void> {
  await db
    .insertInto('developer_sessions')
    .values({ token_hash: tokenHash, account_id: session.accountId, created_at: session.createdAt, expires_at: session.expiresAt, ended_at: null })
    .execute();
}

/** The live session with this hash, with its account. */
export async function findLiveSession(
  db: Executor,
  tokenHash: string,
  nowIso: string,
): Promise<{ expiresAt: string; account: { id: string; name: string; email: string | null; createdAt: string } } | undefined> {
  const row = await db
    .selectFrom('developer_sessions')
    .innerJoin('accounts', 'accounts.id', 'developer_sessions.account_id')
    .select(['developer_sessions.expires_at', 'accounts.id', 'accounts.name', 'accounts.email', 'accounts.created_at'])
    .where('developer_sessions.token_hash', '=', tokenHash)
    .where('developer_sessions.ended_at', 'is', null)
    .where('developer_sessions.expires_at', '>', nowIso)
    .executeTakeFirst();
  return row && { expiresAt: row.expires_at, account: { id: row.id, name: row.name, email: row.email, createdAt: row.created_at } };
}

export async function endSession(db: Executor, tokenHash: string, nowIso: string): Promise<void> {
  await db.updateTable('developer_sessions').set({ ended_at: nowIso }).where('token_hash', '=', tokenHash).where('ended_at', 'is', null).execute();
}
