// The newest events of each account, kept in memory with their API JSON, so that a poll near the
// head of the log (the common case, and a stream's catch-up) is answered without reading storage:
// stepping through 100 stored events was most of an event page's cost (bench/HISTORY.md, "Earlier steps").
// Filled from commits only, never from storage: an account's run of events starts at the first
// commit this process sees and stays gapless, so a read that starts inside the run is complete.
// One process (SQLite) answers from them alone. Several (PostgreSQL) keep them too, and each hears
// every account's newest id from the others' notifications: a run behind an id it heard of does
// not answer (storage does), until this process's own next commit starts a run past it. A page
// served meanwhile ends at the run's newest id, so a commit not yet heard of comes in the next
// page, never skipped (docs/decisions.md, "Several processes on PostgreSQL", for the bound). Each
// account's run is an entry of an lru-cache sized by its JSON bytes.
import { LRUCache } from 'lru-cache';
import { setWeighed, weighedMaxSize } from '../../platform/weighed-lru.js';
import { PackedBytes } from '../../platform/json-body.js';
import type { ExternalWrites } from '../../storage/external-writes.js';
import { matchesTypeFilter, type TypeFilter } from '../../platform/type-filter.js';
import { eventJson, type Event } from './event.js';
import type { NotificationFollower } from './bus.js';
import { NewestIdCheck } from '../../storage/notifications.js';

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
  /**
   * Inside a writing transaction, before it commits: a mark to pass to `committed`, which tells
   * whether another process's commits were noticed in between.
   */
  mark(): number;
  /**
   * After commit: the account's new events, in id order. With the transaction's `mark`, they are
   * not kept when another process's commits were noticed since: those may lie after them.
   */
  committed(accountId: string, events: readonly Event[], mark?: number): void;
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
  /**
   * What the run weighs: a fixed cost per entry, and the memory its entries' JSON pins (each chunk
   * once for every stretch of consecutive entries in it, so at least what they keep alive), and the
   * run it replaced.
   */
  weight = 0;
  countedWeight?: number;
  /** Several processes: the account's newest id heard of; past `newest`, the run does not answer. */
  heardUpTo = 0;
  /** Several processes: when the newest id was last confirmed by storage. */
  check = new NewestIdCheck();
  /** Where the entries' JSON is kept. */
  private readonly packed = new PackedBytes();

  /**
   * `replaced`: the run before a gap, kept until the gap fills or another one opens. Concurrent
   * commits of one account are announced in the order their acknowledgements arrive (on
   * PostgreSQL, 6-10 of 3,000 events from 16 writers came before an earlier one), and a gap that
   * a late announcement fills joins the two runs again; one that never fills (another process's
   * commit) costs nothing, as the new run answers from its first event on.
   */
  constructor(
    private readonly capacity: number,
    private replaced?: Run,
  ) {
    if (replaced) {
      // A run's weight is its own plus the run it replaced (late adds to both): drop the older one's.
      replaced.weight -= replaced.replaced?.weight ?? 0;
      replaced.replaced = undefined;
      this.weight = replaced.weight;
    }
  }

  /**
   * An event announced after later ones: appended to the replaced run if it is that run's next,
   * and the two joined once nothing lies between them; the run that holds the account now.
   */
  late(entry: Entry): Run {
    const replaced = this.replaced;
    if (!replaced || entry.id !== replaced.newest + 1 || entry.id >= this.firstId) return this;
    this.weight += replaced.push(entry);
    if (replaced.newest + 1 !== this.firstId) return this;
    for (let index = this.start; index < this.entries.length; index++) replaced.push(this.entries[index]!);
    return replaced;
  }

  get firstId(): number {
    return this.entries[this.start]!.id;
  }

  get newest(): number {
    return this.entries[this.entries.length - 1]!.id;
  }

  /** The entry of an event, its JSON kept with this run's. */
  entryOf(event: Event): Entry {
    return { id: event.id, type: event.type, json: this.packed.bytes(eventJson(event)) };
  }

  /** Appends an event, dropping the oldest past the capacity; returns how much the weight changed. */
  push(entry: Entry): number {
    const previous = this.entries.length > this.start ? this.entries[this.entries.length - 1] : undefined;
    this.entries.push(entry);
    let change = ENTRY_OVERHEAD + (previous?.json.buffer === entry.json.buffer ? 0 : entry.json.buffer.byteLength);
    if (this.entries.length - this.start > this.capacity) {
      const dropped = this.entries[this.start]!;
      this.start++;
      change -= ENTRY_OVERHEAD + (this.entries[this.start]!.json.buffer === dropped.json.buffer ? 0 : dropped.json.buffer.byteLength);
      // Compacting now and then keeps the array from growing while each push stays cheap.
      if (this.start >= this.capacity) {
        this.entries = this.entries.slice(this.start);
        this.start = 0;
      }
    }
    this.weight += change;
    return change;
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

export interface RecentEventsOptions {
  /** SQLite: another process's commits to the same file (then everything is dropped). */
  externalWrites?: ExternalWrites;
  /** PostgreSQL: other processes commit too; the model then follows the bus, and reads the newest id from storage once in a while. */
  others?: { newestId(accountId: string): Promise<number> };
  budget?: number;
  /** Several processes: how long a run answers before its newest id is confirmed by storage (a notification lost silently). */
  confirmMs?: number;
}

/** Several processes: a run answers this long before its account's newest id is read from storage again. */
export const RUN_CONFIRM_MS = 1000;

export class InMemoryRecentEvents implements RecentEvents, NotificationFollower {
  private readonly runs: LRUCache<string, Run>;
  private readonly capacity: number;
  private readonly externalWrites: ExternalWrites | undefined;
  private readonly others: RecentEventsOptions['others'];
  private readonly confirmMs: number;
  /** How many times everything was dropped for another process's commits. */
  private drops = 0;
  /** Several processes: while notifications may be missed (the listening connection is down), nothing is kept. */
  private blind = false;

  constructor(retention: number, options: RecentEventsOptions = {}) {
    // Never more than the log keeps: an event this holds is one storage still has.
    this.capacity = Math.max(1, Math.min(RECENT_EVENTS_PER_ACCOUNT, retention));
    this.externalWrites = options.externalWrites;
    this.others = options.others;
    this.confirmMs = options.confirmMs ?? RUN_CONFIRM_MS;
    this.runs = new LRUCache<string, Run>({
      maxSize: weighedMaxSize(options.budget ?? RECENT_EVENTS_BUDGET),
      sizeCalculation: (run) => Math.max(1, run.weight),
    });
  }

  mark(): number {
    this.dropIfWrittenElsewhere();
    return this.drops;
  }

  committed(accountId: string, events: readonly Event[], mark?: number): void {
    this.dropIfWrittenElsewhere();
    // Another process committed after this transaction began and it was noticed (and everything
    // dropped) before these events got here: kept now, they would pass for the newest.
    if ((mark !== undefined && mark !== this.drops) || this.blind) return;
    const held = this.runs.peek(accountId);
    let run = held;
    for (const event of events) {
      if (run && event.id <= run.newest) {
        if (event.id < run.firstId) run = run.late(run.entryOf(event));
        continue;
      }
      // A commit this process has not been told of yet (or has forgotten) lies before this event:
      // a new run starts here, so the events held stay consecutive (Run.late may join them again).
      if (!run || event.id !== run.newest + 1) run = new Run(this.capacity, run);
      run.push(run.entryOf(event));
    }
    // Marked used last: the account that wrote most recently is the last to be forgotten, and its
    // new weight counted once it drifted (a run heavier than the whole budget is not kept).
    if (!run) return;
    if (held && run !== held) {
      // What was heard of the account stays known to the run that holds it now.
      run.heardUpTo = Math.max(run.heardUpTo, held.heardUpTo);
      run.check = held.check;
    }
    setWeighed(this.runs, accountId, run);
  }

  /** Another process appended events this one was not told of: none of the runs can be trusted. */
  private dropIfWrittenElsewhere(): void {
    if (this.externalWrites?.happened()) {
      this.runs.clear();
      this.drops++;
    }
  }

  newest(accountId: string): number | undefined {
    this.dropIfWrittenElsewhere();
    if (this.blind) return undefined;
    const run = this.runs.peek(accountId);
    // Several processes: as for a page of the run itself, only while nothing past it was heard of.
    if (!run || !this.current(accountId, run)) return undefined;
    return run.newest;
  }

  after(accountId: string, after: number, limit: number, type: TypeFilter | undefined): { newest: number; events: RecentEvent[] } | undefined {
    this.dropIfWrittenElsewhere();
    if (this.blind) return undefined;
    const run = this.runs.get(accountId);
    if (!run?.covers(after) || !this.current(accountId, run)) return undefined;
    return { newest: run.newest, events: run.after(after, limit, type) };
  }

  /** Several processes: false once another process committed past what the run holds (storage answers). */
  private current(accountId: string, run: Run): boolean {
    if (!this.others) return true;
    if (run.heardUpTo > run.newest) return false;
    this.confirmIfDue(accountId, run);
    return true;
  }

  private confirmIfDue(accountId: string, run: Run): void {
    if (!run.check.due(this.confirmMs)) return;
    run.check.run(
      () => this.others!.newestId(accountId),
      (newest) => {
        run.heardUpTo = Math.max(run.heardUpTo, newest);
      },
      () => {
        if (this.runs.peek(accountId) === run) this.runs.delete(accountId);
      },
    );
  }

  // Several processes: the bus tells of every account's commits (NotificationFollower).

  heard(accountId: string, upTo: number): void {
    const run = this.runs.peek(accountId);
    if (run && upTo > run.heardUpTo) run.heardUpTo = upTo;
  }

  lost(): void {
    this.blind = true;
    this.runs.clear();
    this.drops++;
  }

  regained(): void {
    this.blind = false;
  }
}
