import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../storage/schema.js';
import { nextEventSequence } from '../../storage/sequences.js';
import type { Clock } from '../../platform/clock.js';
import type { UsageService } from '../usage/service.js';
import type { EventBus } from './bus.js';
import type { DomainEvents } from '../../domain-events.js';
import { afterCommit, inTransaction } from '../../storage/transaction.js';
import { eventDataJson, oldestRetainedCursor, type Event } from './event.js';
import type { RecentEvents } from './recent.js';
import type { WrittenWith } from './store.js';
import { AccountBatches, type AccountQueue, type Waiting } from './account-queue.js';
import { accountsOverRetention, deleteEventsBetween, insertEvent, insertEventsAlone, insertEventsLocked, oldestStoredEventId } from './store.js';

/** PostgreSQL: the most custom events of one account written in one statement, and their most data (bytes of JSON). */
const CUSTOM_BATCH = { items: 100, bytes: 1024 * 1024 };

/** Event ids deleted by one statement of retention: 500 blocked the event loop too long under the soak's load (bench/HISTORY.md, "Long runs"). */
const PRUNE_BATCH = 100;

/** How retention's runs go: ids deleted per statement, and the signal that stops them between statements. */
interface PruneOptions {
  batch?: number;
  signal?: AbortSignal;
}

/** Accounts remembered as written between two runs of `pruneWritten`; past it the run sweeps every account. */
const WRITTEN_ACCOUNTS_LIMIT = 10_000;

// Where other areas looked for them before events/event.ts held them.
export { EVENT_TYPES, RESOURCE_EVENT_TYPES, type Event } from './event.js';

/** A write transaction of one account that may append events to its log. */
export interface EventWriter {
  trx: Transaction<Database>;
  accountId: string;
  /** The account's newest event id as this transaction sees it: the committed ones, then its own. */
  lastEventId: number;
  append(type: string, data: Record<string, unknown>): Promise<Event>;
  /** PostgreSQL only (a batch's transaction): appends the events, and runs `also` with them, in one statement. */
  appendMany(items: ReadonlyArray<{ type: string; data: Record<string, unknown> }>, also?: WrittenWith): Promise<Event[]>;
}

export class EventsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly retention: number,
    readonly bus: EventBus,
    private readonly usage: UsageService,
    private readonly recent: RecentEvents,
    private readonly domain: DomainEvents,
    /** Several processes: an account's writers queue here instead of at its row lock. */
    private readonly writers?: AccountQueue,
  ) {
    this.customEvents = this.batches((accountId, waiting) => this.writeCustom(accountId, waiting), CUSTOM_BATCH);
  }

  /** Accounts past the retention window that this process wrote since the last `pruneWritten`, with their newest id. */
  private written = new Map<string, number>();
  /** More accounts were written than `written` holds: the next `pruneWritten` sweeps them all. */
  private writtenOverflow = false;
  /** PostgreSQL: custom events of one account that wait for its turn together. */
  private readonly customEvents: AccountBatches<Event, Event> | undefined;

  /**
   * Runs `work` in a transaction that writes at least one event. The account's event counter is
   * taken first, which locks the account's row: writers of one account run one at a time, ids
   * follow commit order, and a read-modify-write inside `work` cannot race. `events.appended` is
   * emitted inside the transaction (the webhook outbox); after the commit, and before the writer
   * hears of it, the events are kept, counted, published on the bus, and then the domain event's
   * after-commit reactions run (read models, metrics, the webhook dispatcher).
   */
  async transact<T>(accountId: string, work: (writer: EventWriter) => Promise<T>): Promise<T> {
    return this.writers ? this.writers.run(accountId, () => this.transactInTurn(accountId, work)) : this.transactInTurn(accountId, work);
  }

  /** `transact` for work that already holds the account's turn in the queue (a batch's `write`). */
  async transactInTurn<T>(accountId: string, work: (writer: EventWriter) => Promise<T>): Promise<T> {
    const appended: Event[] = [];
    return inTransaction(this.db, async (trx) => {
      const first = await nextEventSequence(trx, accountId);
      let nextId = first.id;
      // Taken holding the account's row (and on SQLite the write lock): see RecentEvents.mark.
      const recentMark = this.recent.mark();
      const writer: EventWriter = {
        trx,
        accountId,
        lastEventId: nextId - 1,
        append: async (type, data) => {
          // The first id was reserved when the transaction started; further ones are taken now.
          if (appended.length > 0) nextId = (await nextEventSequence(trx, accountId)).id;
          const id = nextId;
          const event: Event = { id, type, data, createdAt: this.clock.now().toISOString() };
          await insertEvent(trx, accountId, event);
          appended.push(event);
          writer.lastEventId = id;
          return event;
        },
        appendMany: async (items, also) => {
          const createdAt = this.clock.now().toISOString();
          const events: Event[] = items.map(({ type, data }) => ({ id: 0, type, data, createdAt }));
          if (events.length === 0) return events;
          // The first id was reserved when the transaction started, if nothing took it yet.
          await insertEventsLocked(trx, accountId, events, appended.length === 0, also);
          appended.push(...events);
          writer.lastEventId = events.at(-1)!.id;
          return events;
        },
      };
      const value = await work(writer);
      if (appended.length === 0) throw new Error('an event transaction committed no event');
      afterCommit(trx, () => this.committed(accountId, appended, recentMark));
      await this.domain.emit(trx, 'events.appended', { accountId, events: appended, webhookCount: first.webhooks });
      await this.bus.announce(trx, accountId, appended);
      return value;
    });
  }

  /**
   * Several processes: batches of one account's writes that take its turn in the queue together,
   * each written by `write` (which may call `appendAlone` and `transactInTurn`); undefined with one
   * process, where SQLite commits a turn's writes together already.
   */
  batches<Item, Result>(
    write: (accountId: string, waiting: readonly Waiting<Item, Result>[]) => Promise<void>,
    limits: { items: number; bytes: number },
  ): AccountBatches<Item, Result> | undefined {
    return this.writers && new AccountBatches(this.writers, write, limits);
  }

  /**
   * PostgreSQL, holding the account's turn: takes the account's next ids and writes `events` (their
   * ids and one `createdAt` set here) in one statement committed on its own, with `also` if
   * given, when the account has no webhooks and, if `ifNewestIs` is given, its newest id is still
   * that. Then the after-commit work of `transact` runs and it returns true; else nothing was
   * written and it returns false.
   */
  async appendAlone(accountId: string, events: Event[], options: { ifNewestIs?: number; also?: WrittenWith } = {}): Promise<boolean> {
    const createdAt = this.clock.now().toISOString();
    for (const event of events) event.createdAt = createdAt;
    // Taken before the statement, as `transact` takes it holding the lock: see RecentEvents.mark.
    const recentMark = this.recent.mark();
    if (!(await insertEventsAlone(this.db, accountId, events, options))) return false;
    this.committed(accountId, events, recentMark);
    this.domain.committedAlone('events.appended', { accountId, events, webhookCount: 0 });
    return true;
  }

  /** After commit, before the writer hears of it: the events are kept, counted and published. */
  private committed(accountId: string, events: Event[], recentMark: number): void {
    const newest = events[events.length - 1]!.id;
    if (newest > this.retention) {
      if (this.written.size < WRITTEN_ACCOUNTS_LIMIT || this.written.has(accountId)) this.written.set(accountId, newest);
      else this.writtenOverflow = true;
    }
    this.usage.count(accountId, { eventsCreated: events.length });
    this.recent.committed(accountId, events, recentMark);
    this.bus.publish(accountId, events);
  }

  async publishCustom(accountId: string, type: string, data: Record<string, unknown>): Promise<Event> {
    if (!this.customEvents) return this.transactInTurn(accountId, (writer) => writer.append(type, data));
    const event: Event = { id: 0, type, data, createdAt: '' };
    return this.customEvents.add(accountId, event, eventDataJson(event).length);
  }

  /** PostgreSQL: the batch's events in one statement, else (the account has webhooks) in one transaction with their outbox rows. */
  private async writeCustom(accountId: string, waiting: readonly Waiting<Event, Event>[]): Promise<void> {
    const events = waiting.map((entry) => entry.item);
    if (await this.appendAlone(accountId, events)) {
      for (const entry of waiting) entry.resolve(entry.item);
      return;
    }
    const written = await this.transactInTurn(accountId, async (writer) => {
      const appended: Event[] = [];
      for (const { item } of waiting) appended.push(await writer.append(item.type, item.data));
      return appended;
    });
    for (const [index, entry] of waiting.entries()) entry.resolve(written[index]!);
  }

  /**
   * Deletes the events past each account's retention window a batch of ids at a time, with a turn
   * of the event loop between batches: under a steady write load one statement for everything was
   * hundreds of thousands of rows on the only SQLite connection while requests and streams waited.
   * Stops between batches once `signal` is aborted (shutdown); the next run goes on from there.
   * Returns how many were deleted. This sweeps every account; `pruneWritten` keeps pace with writes.
   */
  async prune(options: PruneOptions = {}): Promise<number> {
    const accounts = await accountsOverRetention(this.db, this.retention);
    return this.pruneAccounts(
      accounts.map(({ accountId, newest }) => [accountId, newest]),
      options,
    );
  }

  /**
   * `prune` for the accounts this process wrote past their window since the last call (all of
   * them, when there were more than it remembers): run every second, it deletes about a second's
   * writes each time, instead of a minute's at once. Accounts written before a restart, or by a
   * process that stopped, are left to `prune`.
   */
  async pruneWritten(options: PruneOptions = {}): Promise<number> {
    const { written, writtenOverflow } = this;
    this.written = new Map();
    this.writtenOverflow = false;
    return writtenOverflow ? this.prune(options) : this.pruneAccounts(written, options);
  }

  /** Each account's events up to the window of its `newest` id, in batches; returns how many were deleted. */
  private async pruneAccounts(accounts: Iterable<[accountId: string, newest: number]>, options: PruneOptions): Promise<number> {
    const batch = options.batch ?? PRUNE_BATCH;
    let deleted = 0;
    for (const [accountId, newest] of accounts) {
      const upTo = oldestRetainedCursor(newest, this.retention);
      let from = await oldestStoredEventId(this.db, accountId);
      while (from !== undefined && from <= upTo) {
        if (options.signal?.aborted) return deleted;
        const to = Math.min(upTo, from + batch - 1);
        deleted += await deleteEventsBetween(this.db, accountId, from, to);
        from = to + 1;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return deleted;
  }
}
