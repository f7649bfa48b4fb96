// Standing authority (docs/decisions.md, "Standing authority"): whatever acts later on an account's
// behalf records the credential that authorized it and stops when that credential ends. Each kind
// of such object registers here once; a revocation (a key's, a connection's, an app's) cuts them
// all off in the transaction that ends the credential, so every process sees it at its next read,
// and an expiry, which no request announces, is found by a run's re-check and by the sweep.
import type { Kysely } from 'kysely';
import type { AuditService, AuditType } from './areas/audit/service.js';
import type { DomainEvents } from './domain-events.js';
import type { Authorizer, CutOffReason } from './platform/credential.js';
import type { Database, Executor } from './storage/schema.js';
import { lockAccountRow } from './storage/sequences.js';
import { inTransaction } from './storage/transaction.js';

/** One kind of object that acts later on an account's behalf (webhooks, schedules…). */
export interface StandingObjects {
  /** Stops the objects authorized by these ended credentials, with an audit record each; returns how many. */
  cutOffAuthorizedBy(exec: Executor, credentialIds: readonly string[], reason: CutOffReason): Promise<number>;
  /** The credentials its still-acting objects depend on. */
  activeAuthorizers(exec: Executor): Promise<Authorizer[]>;
}

export class StandingAuthority {
  private readonly kinds: StandingObjects[] = [];

  constructor(
    private readonly db: Kysely<Database>,
    domain: DomainEvents,
    /** Which of these credentials are live now (keys, connections, apps with a live registering key). */
    private readonly liveIds: (authorizers: Authorizer[]) => Promise<Set<string>>,
  ) {
    domain.inside('key.revoked', async (exec, key) => this.cutOff(exec, [key.id], 'credential_revoked'));
    domain.inside('credentials.ended', async (exec, { ids, how }) => this.cutOff(exec, ids, how === 'expired' ? 'credential_expired' : 'credential_revoked'));
  }

  register(objects: StandingObjects): void {
    this.kinds.push(objects);
  }

  async cutOff(exec: Executor, credentialIds: readonly string[], reason: CutOffReason): Promise<void> {
    if (credentialIds.length === 0) return;
    for (const kind of this.kinds) await kind.cutOffAuthorizedBy(exec, credentialIds, reason);
  }

  /**
   * Which of these authorizers have ended; what they authorized is cut off (as expired: a
   * revocation cut it off when it committed). A run re-checks its authorizer this way before acting.
   */
  async ended(authorizers: readonly Authorizer[]): Promise<Set<string>> {
    if (authorizers.length === 0) return new Set();
    const unique = [...new Map(authorizers.map((authorizer) => [authorizer.id, authorizer])).values()];
    const live = await this.liveIds(unique);
    const ended = unique.filter((authorizer) => !live.has(authorizer.id)).map((authorizer) => authorizer.id);
    if (ended.length > 0) await inTransaction(this.db, (trx) => this.cutOff(trx, ended, 'credential_expired'));
    return new Set(ended);
  }

  /** The periodic sweep: cuts off every object whose credential ran out since the last one. */
  async sweep(): Promise<number> {
    const authorizers: Authorizer[] = [];
    for (const kind of this.kinds) authorizers.push(...(await kind.activeAuthorizers(this.db)));
    return (await this.ended(authorizers)).size;
  }
}

/** How one kind records the cut-off of one of its objects. */
export interface CutOffRecord<T> {
  /** The audit record's type and target type. */
  type: AuditType;
  target: string;
  /** Stops the object; false when another transaction did first. */
  cutOff: (object: T) => Promise<boolean>;
  /** The audit record's data (the reason and the ended credential). */
  data: (object: T) => Record<string, unknown>;
}

/**
 * Cuts off each object in turn and audits those this transaction stopped. The account's row is
 * taken before the object's, in the order every write and run of the account takes them, so a
 * cut-off never deadlocks with them on PostgreSQL; an object another process stopped first (its
 * update waits for that one's lock, then finds it stopped) is audited once, by that one.
 */
export async function cutOffEach<T extends { id: string; accountId: string }>(
  exec: Executor,
  audit: Pick<AuditService, 'record'>,
  objects: readonly T[],
  record: CutOffRecord<T>,
): Promise<T[]> {
  const stopped: T[] = [];
  for (const object of objects) {
    await lockAccountRow(exec, object.accountId);
    if (!(await record.cutOff(object))) continue;
    stopped.push(object);
    await audit.record(exec, {
      accountId: object.accountId,
      type: record.type,
      actor: { kind: 'system' },
      target: { type: record.target, id: object.id },
      data: record.data(object),
    });
  }
  return stopped;
}
