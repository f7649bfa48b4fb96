// Credentials by the hash of their secret, so an authenticated request need not read storage
// before its own work (the key lookup was a fifth of a GET's CPU, measured with npm run bench).
// One process (SQLite) caches: it makes nearly every revocation itself and forgets the credential
// then; a revocation by another process on the same file (the operator's `devdata keys revoke`)
// shows as an external write, and the whole cache is dropped.
// Several processes (PostgreSQL) cannot see each other's revocations in memory, so they read
// storage on every request: revocation stays immediate everywhere.
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

/** Bounded: past the cap the oldest entry goes (a miss only costs a storage read). */
export const CREDENTIAL_CACHE_CAP = 10_000;

export class InProcessCredentialCache implements CredentialCache {
  private readonly bySecretHash = new Map<string, Credential>();
  private readonly secretHashById = new Map<string, string>();
  generation = 0;

  /** `externalWrites`: whether another process committed to the storage since last asked (ExternalWrites). */
  constructor(private readonly externalWrites?: { happened(): boolean }) {}

  get(secretHash: string): Credential | undefined {
    if (this.externalWrites?.happened()) this.clear();
    return this.bySecretHash.get(secretHash);
  }

  /** Forgets everything: another process may have revoked any of them. */
  private clear(): void {
    this.generation++;
    this.bySecretHash.clear();
    this.secretHashById.clear();
  }

  remember(secretHash: string, credential: Credential, generation: number): void {
    // A revocation committed while the lookup read storage: what it read may be stale.
    if (generation !== this.generation) return;
    if (this.bySecretHash.size >= CREDENTIAL_CACHE_CAP) {
      const oldest = this.bySecretHash.entries().next().value as [string, Credential];
      this.bySecretHash.delete(oldest[0]);
      this.secretHashById.delete(oldest[1].id);
    }
    this.bySecretHash.set(secretHash, credential);
    this.secretHashById.set(credential.id, secretHash);
  }

  forget(credentialId: string): void {
    this.generation++;
    const secretHash = this.secretHashById.get(credentialId);
    if (secretHash === undefined) return;
    this.secretHashById.delete(credentialId);
    this.bySecretHash.delete(secretHash);
  }
}

/** For several processes sharing storage: nothing is kept, every lookup reads storage. */
export class UncachedCredentials implements CredentialCache {
  readonly generation = 0;

  get(): Credential | undefined {
    return undefined;
  }

  remember(): void {}

  forget(): void {}
}
