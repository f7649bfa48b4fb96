// Credentials by the hash of their secret, so an authenticated request need not read storage
// before its own work (the key lookup was a large share of a GET's CPU on SQLite and a round trip
// of every request on PostgreSQL: bench/HISTORY.md, "Earlier steps" and "PostgreSQL: round trips
// per request"). lru-cache bounds it by bytes.
// One process (SQLite) makes nearly every revocation itself and forgets the credential then; a
// revocation by another process on the same file (the operator's `devdata keys revoke`) shows as
// an external write, and the whole cache is dropped.
// Several processes (PostgreSQL): a revocation commits with a notification that every process
// hears and forgets the credential on (`listenForRevocations`); while the listening connection is
// down nothing is cached, and an entry is read again after `ttlMs` however the notifications fare
// (decisions: "Credentials cached on PostgreSQL").
import { LRUCache } from 'lru-cache';
import type { Executor } from '../storage/schema.js';
import type { Notifications } from '../storage/notifications.js';
import type { Credential } from './credential.js';

export interface CredentialCache {
  /** A cached credential; the caller still checks its expiry. */
  get(secretHash: string): Credential | undefined;
  /** Counts forgets: a lookup notes it before reading storage and hands it to `remember`. */
  readonly generation: number;
  /** Remembers a credential read from storage, unless something was forgotten since `generation`. */
  remember(secretHash: string, credential: Credential, generation: number): void;
  /** Forgets a credential by id (revoked); effective for lookups already under way. */
  forget(credentialId: string): void;
}

/** The most the cache holds, in (roughly counted) bytes: some 10,000 keys. */
export const CREDENTIAL_CACHE_BYTES = 4 * 1024 * 1024;
/** Roughly what an entry costs besides its strings. */
const ENTRY_OVERHEAD = 200;

export interface CredentialCacheOptions {
  /** Whether another process committed to the storage since last asked (SQLite: ExternalWrites). */
  externalWrites?: { happened(): boolean };
  /** An entry older than this is read from storage again (several processes: the bound when a notification is lost). */
  ttlMs?: number;
  maxBytes?: number;
}

export class InProcessCredentialCache implements CredentialCache {
  private readonly bySecretHash: LRUCache<string, Credential>;
  private readonly secretHashById = new Map<string, string>();
  private readonly externalWrites: { happened(): boolean } | undefined;
  private paused = false;
  generation = 0;

  constructor(options: CredentialCacheOptions = {}) {
    this.externalWrites = options.externalWrites;
    this.bySecretHash = new LRUCache<string, Credential>({
      maxSize: options.maxBytes ?? CREDENTIAL_CACHE_BYTES,
      sizeCalculation: (credential, secretHash) =>
        ENTRY_OVERHEAD +
        secretHash.length +
        credential.id.length +
        credential.accountId.length +
        credential.accountName.length +
        credential.scopes.join(' ').length,
      ...(options.ttlMs === undefined ? {} : { ttl: options.ttlMs }),
      // An entry that leaves (evicted, expired, replaced, deleted) takes its id index with it.
      dispose: (credential, secretHash) => {
        if (this.secretHashById.get(credential.id) === secretHash) this.secretHashById.delete(credential.id);
      },
    });
  }

  get(secretHash: string): Credential | undefined {
    if (this.externalWrites?.happened()) this.forgetAll();
    return this.bySecretHash.get(secretHash);
  }

  /** Forgets everything: another process may have revoked any of them. */
  forgetAll(): void {
    this.generation++;
    this.bySecretHash.clear();
    this.secretHashById.clear();
  }

  /** Keeps nothing until `resume` (the revocations of other processes cannot be heard meanwhile). */
  pause(): void {
    this.paused = true;
    this.forgetAll();
  }

  /** Caches again, from empty: revocations made while paused were not heard. */
  resume(): void {
    this.forgetAll();
    this.paused = false;
  }

  remember(secretHash: string, credential: Credential, generation: number): void {
    // A revocation committed while the lookup read storage: what it read may be stale.
    if (generation !== this.generation || this.paused) return;
    this.bySecretHash.set(secretHash, credential);
    this.secretHashById.set(credential.id, secretHash);
  }

  forget(credentialId: string): void {
    this.generation++;
    const secretHash = this.secretHashById.get(credentialId);
    if (secretHash !== undefined) this.bySecretHash.delete(secretHash);
  }
}

/** Keeps nothing, every lookup reads storage. */
export class UncachedCredentials implements CredentialCache {
  readonly generation = 0;

  get(): Credential | undefined {
    return undefined;
  }

  remember(): void {}

  forget(): void {}
}

const REVOCATIONS = 'devdata_credentials';

/** Inside the revoking transaction: every process forgets these credentials once it commits. */
export async function announceRevocation(notifications: Notifications, exec: Executor, credentialIds: readonly string[]): Promise<void> {
  // A notification carries at most 8,000 bytes: ids of some 30 characters go 200 at a time.
  for (let start = 0; start < credentialIds.length; start += 200) {
    await notifications.notify(exec, REVOCATIONS, credentialIds.slice(start, start + 200).join(' '));
  }
}

/**
 * Keeps `cache` coherent with the revocations of every process sharing the storage, and tells
 * `revoked` of them (the process's streams of those credentials close).
 */
export async function listenForRevocations(notifications: Notifications, cache: InProcessCredentialCache, revoked: (ids: string[]) => void): Promise<void> {
  await notifications.listen(
    REVOCATIONS,
    (payload) => {
      const ids = payload.split(' ');
      for (const id of ids) cache.forget(id);
      revoked(ids);
    },
    () => cache.resume(),
    () => cache.pause(),
  );
}

/** Several processes: how long a cached credential is trusted without hearing of its revocation. */
export const SHARED_CREDENTIAL_TTL_MS = 1000;
