// Cross-area reactions, one mechanism: a service announces what happened with the executor of the
// transaction it happened in. A reaction registered with `inside` runs in that transaction, before
// it commits: what must commit or roll back together with the change (webhook outbox rows,
// deliveries and connections that end with a credential). One registered with `afterCommit` runs
// once the change is durable: what must never act on a change that may still roll back (closing
// streams, read models, metrics, waking workers). docs/architecture.md lists who reacts to what.
import type { Event } from './areas/events/event.js';
import type { AppRow } from './areas/apps/store.js';
import type { Executor } from './storage/schema.js';
import { afterCommit } from './storage/transaction.js';

export interface DomainEventMap {
  /** Events were appended to an account's log (by any writer: resources, custom events, schedules). */
  'events.appended': {
    accountId: string;
    events: readonly Event[];
    /** How many webhooks the account has, read under its row lock with the event ids: none, no outbox rows to write. */
    webhookCount: number;
  };
  /** An API key was revoked. */
  'key.revoked': { id: string; accountId: string };
  /** OAuth credentials stopped working: connections, apps (their tokens), or single access tokens. */
  'credentials.ended': { ids: string[]; how: 'revoked' | 'expired' };
  /** An app is about to be deleted, in the deleting transaction. */
  'app.deleting': { app: AppRow };
}

export type DomainEventName = keyof DomainEventMap;
type InsideReaction<K extends DomainEventName> = (exec: Executor, payload: DomainEventMap[K]) => Promise<void>;
type CommittedReaction<K extends DomainEventName> = (payload: DomainEventMap[K]) => void;

export class DomainEvents {
  private readonly insideReactions = new Map<DomainEventName, Array<InsideReaction<never>>>();
  private readonly committedReactions = new Map<DomainEventName, Array<CommittedReaction<never>>>();

  /** Reacts inside the transaction that made the change; a failure rolls the change back. */
  inside<K extends DomainEventName>(name: K, reaction: InsideReaction<K>): () => void {
    return register(this.insideReactions, name, reaction as InsideReaction<never>);
  }

  /** Reacts after the change committed; must not throw (the change is done). */
  afterCommit<K extends DomainEventName>(name: K, reaction: CommittedReaction<K>): () => void {
    return register(this.committedReactions, name, reaction as CommittedReaction<never>);
  }

  /**
   * A change made in one statement, already committed, whose writer checked in that statement that
   * the inside reactions had nothing to do (an account without webhooks has no outbox rows to
   * write): runs the after-commit reactions.
   */
  committedAlone<K extends DomainEventName>(name: K, payload: DomainEventMap[K]): void {
    const committed = this.committedReactions.get(name);
    if (committed) for (const reaction of committed) (reaction as CommittedReaction<K>)(payload);
  }

  async emit<K extends DomainEventName>(exec: Executor, name: K, payload: DomainEventMap[K]): Promise<void> {
    const inside = this.insideReactions.get(name);
    if (inside) for (const reaction of inside) await (reaction as InsideReaction<K>)(exec, payload);
    if ((this.committedReactions.get(name)?.length ?? 0) > 0) afterCommit(exec, () => this.committedAlone(name, payload));
  }
}

function register<T>(map: Map<DomainEventName, T[]>, name: DomainEventName, reaction: T): () => void {
  let list = map.get(name);
  if (!list) {
    list = [];
    map.set(name, list);
  }
  list.push(reaction);
  return () => {
    const index = list.indexOf(reaction);
    if (index >= 0) list.splice(index, 1);
  };
}
