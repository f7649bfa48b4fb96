// What the operator's CLI does, as functions: the tests provision accounts the same way.
import type { AppContext } from './context.js';
import type { Account, AccountListing } from './areas/accounts/service.js';
import type { IssuedKey, OperatorKeyView } from './areas/keys/service.js';
import { DomainError } from './domain-errors.js';
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

export async function issueKey(context: AppContext, input: { accountId: string; name: string; scopes?: Scope[]; expiresInDays?: number }): Promise<IssuedKey> {
  const { accounts, keys } = context.services;
  return context.storage.db.transaction().execute(async (trx) => {
    if (!(await accounts.get(input.accountId, trx))) throw unknownAccount(input.accountId);
    return keys.issue(
      trx,
      { accountId: input.accountId, name: input.name, scopes: input.scopes ?? ALL_SCOPES, expiresInDays: input.expiresInDays ?? OPERATOR_KEY_DAYS },
      { kind: 'operator' },
    );
  });
}

/** A failure the operator can act on: printed as is, exit status 1. */
export class OperatorError extends Error {
  override name = 'OperatorError';
}

export function listAccounts(context: AppContext): Promise<AccountListing[]> {
  return context.services.accounts.list();
}

/** Every key of an account, revoked and expired ones too; never a secret or its hash. */
export async function listKeys(context: AppContext, accountId: string): Promise<OperatorKeyView[]> {
  if (!(await context.services.accounts.get(accountId))) throw unknownAccount(accountId);
  return context.services.keys.listAll(accountId);
}

export interface RevokeOutcome {
  apiKey: OperatorKeyView;
  /** False when the key was already revoked or expired: nothing changed. */
  revoked: boolean;
}

/**
 * Revokes a key by id, as the API does (audit record, webhooks it authorized cut off, in one
 * transaction). A running server on the same SQLite file notices the write before its next
 * request; its open streams on the key end at their next heartbeat.
 */
export async function revokeKey(context: AppContext, keyId: string): Promise<RevokeOutcome> {
  const { keys } = context.services;
  const key = await keys.find(keyId);
  if (!key) throw new OperatorError(`no API key with id ${keyId} (devdata keys list --account ID lists an account's keys)`);
  if (key.status !== 'active') return { apiKey: key, revoked: false };
  let revoked = true;
  try {
    await keys.revoke(key.accountId, key.id, { kind: 'operator' });
  } catch (error) {
    // Revoked (or expired) by someone else between the read and the write: the end state is the same.
    if (!(error instanceof DomainError && error.code === 'not_found')) throw error;
    revoked = false;
  }
  return { apiKey: (await keys.find(keyId))!, revoked };
}

function unknownAccount(accountId: string): OperatorError {
  return new OperatorError(`no account with id ${accountId} (devdata accounts list lists the accounts)`);
}
