import type { Executor } from '../../storage/schema.js';

export interface AccountRow {
  id: string;
  name: string;
  email: string | null;
  createdAt: string;
}

export type AccountOrigin = 'operator' | 'signup';

export async function insertAccount(db: Executor, account: AccountRow, origin: AccountOrigin): Promise<void> {
  await db.insertInto('accounts').values({ id: account.id, name: account.name, email: account.email, created_at: account.createdAt, origin }).execute();
}

export async function findAccount(db: Executor, id: string): Promise<AccountRow | undefined> {
  const row = await db.selectFrom('accounts').select(['id', 'name', 'email', 'created_at']).where('id', '=', id).executeTakeFirst();
  return row && { id: row.id, name: row.name, email: row.email, createdAt: row.created_at };
}

export async function emailTaken(db: Executor, email: string): Promise<boolean> {
  const row = await db.selectFrom('accounts').select('id').where('email', '=', email).executeTakeFirst();
  return row !== undefined;
}

export async function countAccounts(db: Executor, origin: AccountOrigin): Promise<number> {
  const row = await db
    .selectFrom('accounts')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('origin', '=', origin)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export interface AccountListing extends AccountRow {
  origin: AccountOrigin;
  /** Keys neither revoked nor expired at the time of the listing. */
  activeKeys: number;
}

/** Every account, oldest first, with its count of usable keys (the operator CLI's list). */
export async function listAccounts(db: Executor, nowIso: string): Promise<AccountListing[]> {
  const rows = await db
    .selectFrom('accounts')
    .leftJoin('api_keys', (join) =>
      join.onRef('api_keys.account_id', '=', 'accounts.id').on('api_keys.revoked_at', 'is', null).on('api_keys.expires_at', '>', nowIso),
    )
    .select([
      'accounts.id',
      'accounts.name',
      'accounts.email',
      'accounts.created_at',
      'accounts.origin',
      (eb) => eb.fn.count<number>('api_keys.id').as('active_keys'),
    ])
    .groupBy(['accounts.id', 'accounts.name', 'accounts.email', 'accounts.created_at', 'accounts.origin'])
    .orderBy('accounts.created_at')
    .orderBy('accounts.id')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    email: row.email,
    createdAt: row.created_at,
    origin: row.origin as AccountOrigin,
    activeKeys: Number(row.active_keys),
  }));
}
