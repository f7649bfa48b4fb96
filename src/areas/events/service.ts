import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import type { UsageService } from '../usage/service.js';
import type { EventBus } from './bus.js';
import type { AccountWrite, AccountWrites, CommittedReaction, Outcome, Submit, WriteKind } from '../../account-writes/pipeline.js';
import { eventDataJson, oldestRetainedCursor, type Event } from './event.js';
import type { RecentEvents } from './recent.js';
import type { OutcomeRecord } from '../../storage/transaction.js';
import { accountsOverRetention, deleteEventsBetween, oldestStoredEventId } from './store.js';

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

/** Custom events: on several processes those of one account waiting together take one statement. */
const customEvents: WriteKind<Event, Event> = {
  limits: CUSTOM_BATCH,
  alone: (_accountId, events) => ({ outcomes: events.map((event) => ({ value: event })), events: [...events] }),
  async inTransaction(write, events) {
    const outcomes: Array<Outcome<Event>> = [];
    for (const { type, data } of events) outcomes.push({ value: await write.append(type, data) });
    return outcomes;
  },
};

export class EventsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly retention: number,
    readonly bus: EventBus,
    private readonly usage: UsageService,
    private readonly recent: RecentEvents,
    writes: AccountWrites,
  ) {
    this.publish = writes.kind(customEvents);
  }

  private readonly publish: Submit<Event, Event>;
  /** Accounts past the retention window that this process wrote since the last `pruneWritten`, with their newest id. */
  private written = new Map<string, number>();
  /** More accounts were written than `written` holds: the next `pruneWritten` sweeps them all. */
  private writtenOverflow = false;

  /**
   * After each commit of an account's write, before the writer hears of it: the events are kept,
   * counted and published. `recentMark` was taken holding the account's lock (see RecentEvents.mark).
   */
  readonly committed: CommittedReaction<number> = {
    locked: () => this.recent.mark(),
    committed: ({ accountId, events }, recentMark) => this.keep(accountId, events, recentMark),
  };

  private keep(accountId: string, events: readonly Event[], recentMark: number): void {
    const newest = events[events.length - 1]!.id;
    if (newest > this.retention) {
      if (this.written.size < WRITTEN_ACCOUNTS_LIMIT || this.written.has(accountId)) this.written.set(accountId, newest);
      else this.writtenOverflow = true;
    }
    this.usage.count(accountId, { eventsCreated: events.length });
    this.recent.committed(accountId, events, recentMark);
    this.bus.publish(accountId, events);
  }

  async publishCustom(accountId: string, type: string, data: Record<string, unknown>, outcome?: OutcomeRecord): Promise<Event> {
    const event: Event = { id: 0, type, data, createdAt: '' };
    return this.publish(accountId, event, eventDataJson(event).length, outcome);
  }

  /**
   * Custom events inside an account's write the caller holds (a batch), in order, their ids taken
   * at once (on PostgreSQL in one statement).
   */
  async publishWithin(write: AccountWrite, published: ReadonlyArray<{ type: string; data: Record<string, unknown> }>): Promise<Event[]> {
    const events = published.map(({ type, data }): Event => ({ id: 0, type, data, createdAt: '' }));
    await write.appendAll(events);
    return events;
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
