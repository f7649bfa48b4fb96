// Cross-area reactions to credentials and apps ending (an account's writes of events react through
// the account-write pipeline instead: src/account-writes/pipeline.ts). A service announces what
// happened with the executor of the transaction it happened in. A reaction registered with
// `inside` runs in that transaction, before it commits: what must commit or roll back together
// with the change (cut-offs, connections that end with a credential, notifications to the other
// processes). One registered with `afterCommit` runs once the change is durable: what must never
// act on a change that may still roll back (closing streams). docs/architecture.md lists who
// reacts to what.
import type { AppRow } from './areas/apps/store.js';
import type { Executor } from './storage/schema.js';
import { afterCommit } from './storage/transaction.js';

export interface DomainEventMap {
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

  async emit<K extends DomainEventName>(exec: Executor, name: K, payload: DomainEventMap[K]): Promise<void> {
    const inside = this.insideReactions.get(name);
    if (inside) for (const reaction of inside) await (reaction as InsideReaction<K>)(exec, payload);
    const committed = this.committedReactions.get(name);
    if (committed && committed.length > 0)
      afterCommit(exec, () => {
        for (const reaction of committed) (reaction as CommittedReaction<K>)(payload);
      });
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
