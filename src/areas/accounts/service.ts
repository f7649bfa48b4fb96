import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import { conflict } from '../../domain-errors.js';
import { newId } from '../../platform/ids.js';
import type { Actor, AuditService } from '../audit/service.js';
import { countAccounts, emailTaken, findAccount, insertAccount, listAccounts, type AccountListing, type AccountOrigin, type AccountRow } from './store.js';

export type Account = AccountRow;
export type { AccountListing };

export class AccountsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly audit: AuditService,
  ) {}

  /** Creates an account and records `account.created`; run inside the caller's transaction. */
  async create(exec: Executor, input: { name: string; email?: string | null; origin?: AccountOrigin }, actor: Actor): Promise<Account> {
    const email = input.email?.trim().toLowerCase() ?? null;
    if (email !== null && (await emailTaken(exec, email))) throw conflict('An account with this email already exists');
    const account: Account = { id: newId('acc'), name: input.name.trim(), email, createdAt: this.clock.now().toISOString() };
    await insertAccount(exec, account, input.origin ?? 'operator');
    await this.audit.record(exec, { accountId: account.id, type: 'account.created', actor, target: { type: 'account', id: account.id } });
    return account;
  }

  get(id: string, exec: Executor = this.db): Promise<Account | undefined> {
    return findAccount(exec, id);
  }

  count(origin: AccountOrigin, exec: Executor = this.db): Promise<number> {
    return countAccounts(exec, origin);
  }

  /** Every account with its count of usable keys (the operator's list). */
  list(): Promise<AccountListing[]> {
    return listAccounts(this.db, this.clock.now().toISOString());
  }
}
