// Fan-out of committed events to live streams. In one process an in-memory map of listeners;
// several processes need a shared implementation (PostgreSQL LISTEN/NOTIFY) behind the same
// interface. Listeners must tolerate gaps and repeats: a stream re-reads the log whenever an
// event's id is not the one it expects, so a lost or reordered notification never loses an event.
import type { Event } from './service.js';

export type EventListener = (event: Event) => void;

export interface EventBus {
  /** Calls `listener` with each event committed for the account from now on; returns unsubscribe. */
  subscribe(accountId: string, listener: EventListener): () => void;
  /** Announces events that have just been committed, in id order. */
  publish(accountId: string, events: readonly Event[]): void;
  close(): Promise<void>;
}

export class InProcessEventBus implements EventBus {
  private readonly listeners = new Map<string, Set<EventListener>>();

  subscribe(accountId: string, listener: EventListener): () => void {
    let set = this.listeners.get(accountId);
    if (!set) {
      set = new Set();
      this.listeners.set(accountId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(accountId);
    };
  }

  publish(accountId: string, events: readonly Event[]): void {
    const set = this.listeners.get(accountId);
    if (!set) return;
    for (const event of events) for (const listener of set) listener(event);
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}
