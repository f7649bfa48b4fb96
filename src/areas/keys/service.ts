import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { addDays, nowIso, type Clock } from '../../platform/clock.js';
import type { Credential, CredentialResolver } from '../../platform/credential.js';
import type { CredentialCache } from '../../platform/credential-cache.js';
import type { DomainEvents } from '../../domain-events.js';
import { inTransaction, type OutcomeRecord } from '../../storage/transaction.js';
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
  listKeysWithEnded,
  renameKey,
  revokeKey,
  updateLastUsed,
  usableKeyIds,
  type KeyRow,
} from './store.js';
import { DEFAULT_KEY_DAYS, ENDED_KEYS_LISTED, type ApiKey, type CreateKey, type KeyListing, type KeyStatus } from './schemas.js';

export const KEY_PREFIX = 'ddk';
/** At most this many active (neither revoked nor expired) keys per account (api-decisions §10). */
export const MAX_ACTIVE_KEYS_PER_ACCOUNT = 100;

/** A newly issued key with its secret (`key`), which is returned this once. */
export type IssuedKey = ApiKey & { key: string };

/** What the operator sees of a key: its account as well, never its secret or hash. */
export type OperatorKeyView = ApiKey & { accountId: string };

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
    return { ...toApiKey(row, row.createdAt), key };
  }

  /** POST /keys: only scopes the caller holds, never outliving the caller. */
  async create(caller: Credential, input: CreateKey, outcome?: OutcomeRecord): Promise<IssuedKey> {
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
    return inTransaction(
      this.db,
      (trx) =>
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
      outcome,
    );
  }

  /** GET /keys: the active keys, or with `all` those and the ENDED_KEYS_LISTED that ended last. */
  async list(accountId: string, listing: KeyListing = 'active'): Promise<ApiKey[]> {
    const now = this.clock.now().toISOString();
    const rows = listing === 'all' ? await listKeysWithEnded(this.db, accountId, now, ENDED_KEYS_LISTED) : await listUsableKeys(this.db, accountId, now);
    return rows.map((row) => this.view(row, now));
  }

  /** Every key of the account, revoked and expired ones too, with its state (the operator's list). */
  async listAll(accountId: string): Promise<OperatorKeyView[]> {
    const now = this.clock.now().toISOString();
    return (await listAllKeys(this.db, accountId)).map((row) => ({ ...this.view(row, now), accountId: row.accountId }));
  }

  /** One key by id, whatever its state. */
  async find(keyId: string): Promise<OperatorKeyView | undefined> {
    const row = await findKey(this.db, keyId);
    return row && { ...this.view(row, this.clock.now().toISOString()), accountId: row.accountId };
  }

  /** A key as the API shows it, with the freshest last use this process knows (buffered until the flush). */
  private view(row: KeyRow, now: string): ApiKey {
    const buffered = this.lastUsed.get(row.id);
    const lastUsedAt = buffered !== undefined && buffered > (row.lastUsedAt ?? '') ? buffered : row.lastUsedAt;
    return toApiKey({ ...row, lastUsedAt }, now);
  }

  /**
   * PATCH /keys/{id}: a new name for an active key of the caller's account (404 for any other, as
   * revoking one is), audited as `key.updated`. What the key may do is what it was issued with.
   */
  async rename(caller: Credential, keyId: string, name: string, outcome?: OutcomeRecord): Promise<ApiKey> {
    const now = this.clock.now().toISOString();
    return inTransaction(
      this.db,
      async (trx) => {
        const current = await findKey(trx, keyId);
        const trimmed = name.trim();
        if (!current || current.accountId !== caller.accountId || !(await renameKey(trx, caller.accountId, keyId, trimmed, now))) throw notFound('API key');
        await this.audit.recordFor(
          trx,
          caller,
          'key.updated',
          { type: 'api_key', id: keyId },
          { changed: ['name'], name: trimmed, previousName: current.name },
        );
        return this.view({ ...current, name: trimmed }, now);
      },
      outcome,
    );
  }

  async revoke(accountId: string, keyId: string, actor: Actor, outcome?: OutcomeRecord): Promise<void> {
    try {
      await inTransaction(
        this.db,
        async (trx) => {
          if (!(await revokeKey(trx, accountId, keyId, this.clock.now().toISOString()))) throw notFound('API key');
          await this.audit.record(trx, { accountId, type: 'key.revoked', actor, target: { type: 'api_key', id: keyId } });
          await this.domain.emit(trx, 'key.revoked', { id: keyId, accountId });
        },
        outcome,
      );
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

/** Whether a key is usable at `now`, or why not. */
function keyStatus(row: KeyRow, now: string): KeyStatus {
  if (row.revokedAt !== null) return 'revoked';
  return row.expiresAt <= now ? 'expired' : 'active';
}

function toApiKey(row: KeyRow, now: string): ApiKey {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    lastUsedAt: row.lastUsedAt,
    status: keyStatus(row, now),
    revokedAt: row.revokedAt,
  };
}
