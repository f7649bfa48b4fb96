import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { addDays, nowIso, type Clock } from '../../platform/clock.js';
import type { Credential, CredentialResolver } from '../../platform/credential.js';
import type { CredentialCache } from '../../platform/credential-cache.js';
import type { DomainEvents } from '../../domain-events.js';
import { inTransaction } from '../../storage/transaction.js';
import { DomainError, conflict, insufficientScope, notFound } from '../../domain-errors.js';
import { newId, newSecret, sha256Hex } from '../../platform/ids.js';
import { isScope, NOT_A_SCOPE, unknownScopes, type Scope } from '../../platform/scopes.js';
import { actorOf, type Actor, type AuditService } from '../audit/service.js';
import {
  countActiveKeys,
  findKey,
  findUsableKeyByHash,
  insertKey,
  listAllKeys,
  listUsableKeys,
  revokeKey,
  updateLastUsed,
  usableKeyIds,
  type KeyRow,
} from './store.js';
import { DEFAULT_KEY_DAYS, type ApiKey, type CreateKey } from './schemas.js';

export const KEY_PREFIX = 'ddk';
/** At most this many active (neither revoked nor expired) keys per account (api-decisions §10). */
export const MAX_ACTIVE_KEYS_PER_ACCOUNT = 100;

/** A newly issued key with its secret (`key`), which is returned this once. */
export type IssuedKey = ApiKey & { key: string };

/** What the operator sees of a key: its state as well, never its secret or hash. */
export type OperatorKeyView = ApiKey & { accountId: string; revokedAt: string | null; status: 'active' | 'revoked' | 'expired' };

export interface IssueKeyInput {
  accountId: string;
  name: string;
  scopes: Scope[];
  expiresInDays: number;
  /** The key may not outlive this instant (the creating credential's expiry). */
  notAfter?: string;
}

export class KeysService implements CredentialResolver {
  readonly prefix = `${KEY_PREFIX}_`;
  /** Last-use times buffered in memory and written by flushLastUsed, so reads never write. */
  private lastUsed = new Map<string, string>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly cache: CredentialCache,
    private readonly domain: DomainEvents,
  ) {}

  /** Issues a key without a calling credential (operator CLI, account creation). */
  async issue(exec: Executor, input: IssueKeyInput, actor: Actor): Promise<IssuedKey> {
    const now = this.clock.now();
    let expiresAt = addDays(now, input.expiresInDays).toISOString();
    if (input.notAfter !== undefined && input.notAfter < expiresAt) expiresAt = input.notAfter;
    const key = newSecret(KEY_PREFIX);
    const row: KeyRow = {
      id: newId('key'),
      accountId: input.accountId,
      name: input.name.trim(),
      scopes: input.scopes,
      createdAt: now.toISOString(),
      expiresAt,
      revokedAt: null,
      lastUsedAt: null,
    };
    // The audit record takes the account's row lock first, so two creates cannot both pass the cap.
    await this.audit.record(exec, {
      accountId: input.accountId,
      type: 'key.created',
      actor,
      target: { type: 'api_key', id: row.id },
      data: { name: row.name, scopes: row.scopes, expiresAt },
    });
    if ((await countActiveKeys(exec, input.accountId, row.createdAt)) >= MAX_ACTIVE_KEYS_PER_ACCOUNT) {
      throw conflict(`An account may have at most ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active API keys: revoke one first`);
    }
    await insertKey(exec, row, sha256Hex(key));
    return { ...toApiKey(row), key };
  }

  /** POST /keys: only scopes the caller holds, never outliving the caller. */
  async create(caller: Credential, input: CreateKey): Promise<IssuedKey> {
    const unknown = input.scopes.flatMap((scope, index) => (isScope(scope) ? [] : [{ path: `/scopes/${index}`, message: NOT_A_SCOPE, scope }]));
    if (unknown.length > 0) {
      throw new DomainError(
        'invalid_request',
        unknownScopes(unknown.map((entry) => entry.scope)),
        unknown.map(({ path, message }) => ({ path, message })),
      );
    }
    const scopes = [...new Set(input.scopes)] as Scope[];
    const missing = scopes.filter((scope) => !caller.scopes.includes(scope));
    if (missing.length > 0) throw insufficientScope(missing);
    return this.db.transaction().execute((trx) =>
      this.issue(
        trx,
        {
          accountId: caller.accountId,
          name: input.name,
          scopes,
          expiresInDays: input.expiresInDays ?? DEFAULT_KEY_DAYS,
          notAfter: caller.expiresAt,
        },
        actorOf(caller),
      ),
    );
  }

  async list(accountId: string): Promise<ApiKey[]> {
    const rows = await listUsableKeys(this.db, accountId, this.clock.now().toISOString());
    return rows.map((row) => {
      const buffered = this.lastUsed.get(row.id);
      return toApiKey({ ...row, lastUsedAt: buffered !== undefined && buffered > (row.lastUsedAt ?? '') ? buffered : row.lastUsedAt });
    });
  }

  /** Every key of the account, revoked and expired ones too, with its state (the operator's list). */
  async listAll(accountId: string): Promise<OperatorKeyView[]> {
    const now = this.clock.now().toISOString();
    return (await listAllKeys(this.db, accountId)).map((row) => this.operatorView(row, now));
  }

  /** One key by id, whatever its state. */
  async find(keyId: string): Promise<OperatorKeyView | undefined> {
    const row = await findKey(this.db, keyId);
    return row && this.operatorView(row, this.clock.now().toISOString());
  }

  private operatorView(row: KeyRow, now: string): OperatorKeyView {
    const buffered = this.lastUsed.get(row.id);
    const lastUsedAt = buffered !== undefined && buffered > (row.lastUsedAt ?? '') ? buffered : row.lastUsedAt;
    const status = row.revokedAt !== null ? 'revoked' : row.expiresAt <= now ? 'expired' : 'active';
    return { ...toApiKey({ ...row, lastUsedAt }), accountId: row.accountId, revokedAt: row.revokedAt, status };
  }

  async revoke(accountId: string, keyId: string, actor: Actor): Promise<void> {
    try {
      await inTransaction(this.db, async (trx) => {
        if (!(await revokeKey(trx, accountId, keyId, this.clock.now().toISOString()))) throw notFound('API key');
        await this.audit.record(trx, { accountId, type: 'key.revoked', actor, target: { type: 'api_key', id: keyId } });
        await this.domain.emit(trx, 'key.revoked', { id: keyId, accountId });
      });
    } finally {
      // After the commit (or rollback): a lookup that read the key before then does not cache it.
      this.cache.forget(keyId);
    }
  }

  /**
   * CredentialResolver: a usable key by the hash of its secret, from the credential cache
   * (synchronously) or storage. Revocation is immediate: revoking forgets the cached key (see
   * CredentialCache).
   */
  resolve(secret: string): Credential | undefined | Promise<Credential | undefined> {
    const now = nowIso(this.clock);
    const keyHash = sha256Hex(secret);
    const cached = this.cache.get(keyHash);
    if (cached !== undefined && cached.expiresAt > now) return this.used(cached, now);
    return this.resolveStored(keyHash, now);
  }

  private async resolveStored(keyHash: string, now: string): Promise<Credential | undefined> {
    const generation = this.cache.generation;
    const row = await findUsableKeyByHash(this.db, keyHash, now);
    if (!row) return undefined;
    const credential: Credential = {
      kind: 'api_key',
      id: row.id,
      accountId: row.accountId,
      accountName: row.accountName,
      scopes: row.scopes.filter(isScope),
      expiresAt: row.expiresAt,
      rateLimitKey: `key:${row.id}`,
    };
    this.cache.remember(keyHash, credential, generation);
    return this.used(credential, now);
  }

  private used(credential: Credential, now: string): Credential {
    this.lastUsed.set(credential.id, now);
    return credential;
  }

  /** Which of these keys are still usable now. */
  usableIds(keyIds: string[], exec: Executor = this.db): Promise<Set<string>> {
    return usableKeyIds(exec, keyIds, this.clock.now().toISOString());
  }

  async flushLastUsed(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const batch = this.lastUsed;
    this.lastUsed = new Map();
    await this.db.transaction().execute((trx) => updateLastUsed(trx, batch));
  }
}

function toApiKey(row: KeyRow): ApiKey {
  return { id: row.id, name: row.name, scopes: row.scopes, createdAt: row.createdAt, expiresAt: row.expiresAt, lastUsedAt: row.lastUsedAt };
}
