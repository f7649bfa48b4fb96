// The newest events of each account, kept in memory with their API JSON, so that a poll near the
// head of the log (the common case, and a stream's catch-up) is answered without reading storage:
// stepping through 100 stored events was most of an event page's cost (measured with npm run bench).
// Filled from commits only, never from storage: an account's run of events starts at the first
// commit this process sees and stays gapless, so a read that starts inside the run is complete.
// One process (SQLite) keeps them; several (PostgreSQL) cannot see each other's commits, so there
// every read goes to storage.
import { ownBytes } from '../../platform/json-body.js';
import { SizedLru } from '../../platform/sized-lru.js';
import type { ExternalWrites } from '../../storage/external-writes.js';
import { matchesTypeFilter, type TypeFilter } from '../../platform/type-filter.js';
import { eventJson, type Event } from './event.js';

/** Events kept per account: a poller or a reconnecting stream this far behind reads storage. */
export const RECENT_EVENTS_PER_ACCOUNT = 1000;
/** The most event JSON held for all accounts together, in bytes. */
export const RECENT_EVENTS_BUDGET = 32 * 1024 * 1024;
/** Roughly what an entry costs besides its JSON. */
const ENTRY_OVERHEAD = 64;

export interface RecentEvent {
  id: number;
  /** Its API JSON, UTF-8. */
  json: Buffer;
}

export interface RecentEvents {
  /** After commit: the account's new events, in id order. */
  committed(accountId: string, events: readonly Event[]): void;
  /**
   * Up to `limit` events with id > `after` (of the type, if given) and the newest id known, or
   * undefined when memory does not hold every event after `after`: then storage answers.
   */
  after(accountId: string, after: number, limit: number, type: TypeFilter | undefined): { newest: number; events: RecentEvent[] } | undefined;
  /** The account's newest committed event id when memory knows it (this process has seen its commits). */
  newest(accountId: string): number | undefined;
}

interface Entry extends RecentEvent {
  type: string;
}

/** One account's newest events: consecutive ids, oldest first, from `entries[start]` on. */
class Run {
  private entries: Entry[] = [];
  private start = 0;

  constructor(private readonly capacity: number) {}

  get firstId(): number {
    return this.entries[this.start]!.id;
  }

  get newest(): number {
    return this.entries[this.entries.length - 1]!.id;
  }

  /** Appends an event; returns the weight added (negative when the oldest fell out). */
  push(entry: Entry): number {
    this.entries.push(entry);
    let delta = entry.json.length + ENTRY_OVERHEAD;
    if (this.entries.length - this.start > this.capacity) {
      const dropped = this.entries[this.start]!;
      delta -= dropped.json.length + ENTRY_OVERHEAD;
      this.start++;
      // Compacting now and then keeps the array from growing while each push stays cheap.
      if (this.start >= this.capacity) {
        this.entries = this.entries.slice(this.start);
        this.start = 0;
      }
    }
    return delta;
  }

  /** Whether every event after `after` is here. */
  covers(after: number): boolean {
    return after >= this.firstId - 1;
  }

  after(after: number, limit: number, type: TypeFilter | undefined): RecentEvent[] {
    const found: RecentEvent[] = [];
    for (let index = this.start + Math.max(0, after + 1 - this.firstId); index < this.entries.length && found.length < limit; index++) {
      const entry = this.entries[index]!;
      if (matchesTypeFilter(entry.type, type)) found.push(entry);
    }
    return found;
  }
}

export class InMemoryRecentEvents implements RecentEvents {
  private readonly runs: SizedLru<string, Run>;
  private readonly capacity: number;

  constructor(
    retention: number,
    private readonly externalWrites?: ExternalWrites,
    budget = RECENT_EVENTS_BUDGET,
  ) {
    // Never more than the log keeps: an event this holds is one storage still has.
    this.capacity = Math.max(1, Math.min(RECENT_EVENTS_PER_ACCOUNT, retention));
    this.runs = new SizedLru(budget);
  }

  committed(accountId: string, events: readonly Event[]): void {
    let run = this.runs.peek(accountId);
    for (const event of events) {
      if (run && event.id <= run.newest) continue;
      // A commit this process has not been told of yet (or has forgotten) lies before this event:
      // a new run starts here, so the events held stay consecutive.
      if (!run || event.id !== run.newest + 1) {
        run = new Run(this.capacity);
        this.runs.set(accountId, run, 0);
      }
      this.runs.resize(accountId, run.push({ id: event.id, type: event.type, json: ownBytes(eventJson(event)) }));
    }
    // Touched last: the account that wrote most recently is the last to be forgotten.
    this.runs.get(accountId);
  }

  /** Another process appended events this one was not told of: none of the runs can be trusted. */
  private dropIfWrittenElsewhere(): void {
    if (this.externalWrites?.happened()) this.runs.clear();
  }

  newest(accountId: string): number | undefined {
    this.dropIfWrittenElsewhere();
    return this.runs.peek(accountId)?.newest;
  }

  after(accountId: string, after: number, limit: number, type: TypeFilter | undefined): { newest: number; events: RecentEvent[] } | undefined {
    this.dropIfWrittenElsewhere();
    const run = this.runs.get(accountId);
    if (!run || !run.covers(after)) return undefined;
    return { newest: run.newest, events: run.after(after, limit, type) };
  }
}

/** For several processes sharing storage: nothing is kept, every read goes to storage. */
export class NoRecentEvents implements RecentEvents {
  committed(): void {}

  newest(): undefined {
    return undefined;
  }

  after(): undefined {
    return undefined;
  }
}
