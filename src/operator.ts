// What the operator's CLI does, as functions: the tests provision accounts the same way.
import type { AppContext } from './context.js';
import type { Account } from './areas/accounts/service.js';
import type { IssuedKey } from './areas/keys/service.js';
import { ALL_SCOPES, type Scope } from './platform/scopes.js';

export const OPERATOR_KEY_DAYS = 365;

export interface ProvisionedAccount {
  account: Account;
  apiKey: IssuedKey;
}

/** Creates an account and its first key (every scope, 365 days unless told otherwise) in one transaction. */
export async function createAccountWithKey(
  context: AppContext,
  input: { name: string; email?: string; scopes?: Scope[]; expiresInDays?: number; keyName?: string },
): Promise<ProvisionedAccount> {
  const { accounts, keys } = context.services;
  return context.storage.db.transaction().execute(async (trx) => {
    const account = await accounts.create(trx, { name: input.name, email: input.email }, { kind: 'operator' });
    const apiKey = await keys.issue(
      trx,
      {
        accountId: account.id,
        name: input.keyName ?? 'Initial key',
        scopes: input.scopes ?? ALL_SCOPES,
        expiresInDays: input.expiresInDays ?? OPERATOR_KEY_DAYS,
      },
      { kind: 'operator' },
    );
    return { account, apiKey };
  });
}

export async function issueKey(
  context: AppContext,
  input: { accountId: string; name: string; scopes?: Scope[]; expiresInDays?: number },
): Promise<IssuedKey> {
  const { accounts, keys } = context.services;
  return context.storage.db.transaction().execute(async (trx) => {
    if (!(await accounts.get(input.accountId, trx))) throw new Error(`no account with id ${input.accountId}`);
    return keys.issue(
      trx,
      { accountId: input.accountId, name: input.name, scopes: input.scopes ?? ALL_SCOPES, expiresInDays: input.expiresInDays ?? OPERATOR_KEY_DAYS },
      { kind: 'operator' },
    );
  });
}
