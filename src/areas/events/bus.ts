// Fan-out of committed events to live streams. One process: an in-memory map of listeners.
// Several processes (PostgreSQL): the same, plus a notification of each account's newest id sent
// after the commit, those of one turn of the event loop in one statement (inside the writing
// transaction it was one more round trip while the account's row was locked); a process that
// hears of events it did not write reads them from the log once and hands them to its listeners. Listeners tolerate gaps and repeats (a stream re-reads the log when
// an id is not the one it expects), and the bus also polls the log, so a lost notification delays
// an event by at most one poll interval but never loses it.
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import type { Notifications } from '../../storage/notifications.js';
import type { Event } from './event.js';
import { listEvents, newestEventIds } from './store.js';

export type EventListener = (event: Event) => void;

/**
 * What else in a process keeps copies of accounts' data (the resources read model): told at once
 * of every account's notified newest id, its own commits' too (a copy at or past it ignores it),
 * and when the notifications may have been missed, so that it stops trusting what it holds.
 */
export interface NotificationFollower {
  /** The account has committed events up to `upTo`. */
  heard(accountId: string, upTo: number): void;
  /** The listening connection is lost: notifications may be missed from now until `regained`. */
  lost(): void;
  /** The listening connection is back; what was sent meanwhile is lost. */
  regained(): void;
}

export interface EventBus {
  /** Calls `listener` with each event committed for the account from now on; returns unsubscribe. */
  subscribe(accountId: string, listener: EventListener): () => void;
  /** After commit: hands the events to this process's listeners, in id order. */
  publish(accountId: string, events: readonly Event[]): void;
  /** Several processes: `follower` hears of every account's commits from now on. One process has nothing to tell. */
  follow(follower: NotificationFollower): void;
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

  follow(): void {}

  accountsWithListeners(): string[] {
    return [...this.listeners.keys()];
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}

const CHANNEL = 'devdata_events';
const FETCH_PAGE = 1000;

export class NotifyingEventBus implements EventBus {
  private readonly local = new InProcessEventBus();
  /** Per account, the newest id committed here and not yet notified; sent when the loop turns. */
  private readonly unannounced = new Map<string, number>();
  private announcing = false;
  /** One statement at a time (on the listening connection): what commits meanwhile goes in the next. */
  private sending = false;
  /** Per account with listeners: the newest id handed to them, and the fetch in progress. */
  private readonly delivered = new Map<string, number>();
  private readonly fetching = new Map<string, Promise<void>>();
  private readonly pollTimer: NodeJS.Timeout;
  private readonly followers: NotificationFollower[] = [];

  constructor(
    private readonly db: Kysely<Database>,
    private readonly notifications: Notifications,
    pollIntervalMs = 1000,
  ) {
    this.pollTimer = setInterval(() => void this.poll(), pollIntervalMs);
    this.pollTimer.unref();
  }

  async start(): Promise<void> {
    await this.notifications.listen(
      CHANNEL,
      (payload) => {
        const [accountId = '', upTo = '0'] = payload.split(' ');
        const newest = Number(upTo);
        for (const follower of this.followers) follower.heard(accountId, newest);
        // A process hears its own notifications too: those events it has handed out already.
        if (newest > (this.delivered.get(accountId) ?? 0)) this.catchUp(accountId, newest);
      },
      () => {
        for (const follower of this.followers) follower.regained();
        void this.poll();
      },
      () => {
        for (const follower of this.followers) follower.lost();
      },
    );
  }

  follow(follower: NotificationFollower): void {
    this.followers.push(follower);
  }

  subscribe(accountId: string, listener: EventListener): () => void {
    return this.local.subscribe(accountId, listener);
  }

  /** This process's own commits: handed to its listeners, and notified to the others. */
  publish(accountId: string, events: readonly Event[]): void {
    this.deliver(accountId, events);
    const last = events.at(-1);
    if (!last || last.id <= (this.unannounced.get(accountId) ?? 0)) return;
    this.unannounced.set(accountId, last.id);
    this.scheduleNotifications();
  }

  private scheduleNotifications(): void {
    if (this.announcing || this.sending) return;
    this.announcing = true;
    setImmediate(() => void this.sendNotifications());
  }

  /**
   * The commits of one turn of the event loop, one notification per account, in one statement. A
   * failure or a crash before it loses them; the other processes' poll (once a second) reads the
   * log and finds those events anyway.
   */
  private async sendNotifications(): Promise<void> {
    const payloads = [...this.unannounced].map(([accountId, id]) => `${accountId} ${id}`);
    this.unannounced.clear();
    this.announcing = false;
    this.sending = true;
    try {
      await this.notifications.notifyMany(this.db, CHANNEL, payloads);
    } catch {
      // Storage trouble: the others' poll catches up.
    } finally {
      this.sending = false;
      if (this.unannounced.size > 0) this.scheduleNotifications();
    }
  }

  private deliver(accountId: string, events: readonly Event[]): void {
    const last = events.at(-1);
    if (last && last.id > (this.delivered.get(accountId) ?? 0)) this.delivered.set(accountId, last.id);
    this.local.publish(accountId, events);
  }

  /** Reads events up to `upTo` that this process's listeners have not been handed, once per account. */
  private catchUp(accountId: string, upTo: number): void {
    if (!this.local.accountsWithListeners().includes(accountId)) return;
    const previous = this.fetching.get(accountId) ?? Promise.resolve();
    const next = previous.then(async () => {
      let after = this.delivered.get(accountId) ?? upTo - 1;
      while (after < upTo) {
        const events = await listEvents(this.db, accountId, { after, upTo, limit: FETCH_PAGE });
        if (events.length === 0) break;
        this.deliver(accountId, events);
        after = (events.at(-1) as Event).id;
      }
    });
    const settled = next.catch(() => undefined);
    this.fetching.set(accountId, settled);
    void settled.then(() => {
      if (this.fetching.get(accountId) === settled) this.fetching.delete(accountId);
    });
  }

  /** The fallback: compares the log's newest ids with what listeners have had. */
  private async poll(): Promise<void> {
    const accounts = this.local.accountsWithListeners();
    if (accounts.length === 0) return;
    try {
      for (const [accountId, newest] of await newestEventIds(this.db, accounts)) {
        if (newest > (this.delivered.get(accountId) ?? newest)) this.catchUp(accountId, newest);
        else if (!this.delivered.has(accountId)) this.delivered.set(accountId, newest);
      }
    } catch {
      // Storage trouble: the next poll tries again.
    }
  }

  async close(): Promise<void> {
    clearInterval(this.pollTimer);
    await this.notifications.close();
    await this.local.close();
  }
}
