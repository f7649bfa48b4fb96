// Each account's resources in memory, with their API JSON, so that reading a resource or a page of
// them reads no storage: stepping through 50 stored rows was most of a list's cost, and a point
// read a large share of a GET's (bench/HISTORY.md, "Earlier steps"). An account is read from storage once, in
// chunks, and then kept up to date from its committed events: the resource events carry the whole
// resource, and event ids are consecutive, so a missed event shows as a gap, and the account is
// then forgotten and read again when next asked for.
// Several processes (PostgreSQL) keep them too: each hears every account's newest id from the
// others' notifications, stops answering from a view that is behind it, and reads the missing
// events from the log (docs/decisions.md, "Several processes on PostgreSQL", for the bound).
import { LRUCache } from 'lru-cache';
import { setWeighed, weighedMaxSize } from '../../platform/weighed-lru.js';
import type { ExternalWrites } from '../../storage/external-writes.js';
import type { Event } from '../events/event.js';
import type { NotificationFollower } from '../events/bus.js';
import type { ResourceRecord } from './store.js';
import { AccountResources, ENTRY_OVERHEAD, isDeletion } from './account-resources.js';
import { Fill } from './fill.js';
import type { ReadingResources, ResourceView } from './view.js';

export type { ReadingResources, ResourceView };

/**
 * The most memory kept for all accounts together, in bytes (JSON and what holds it); one account
 * takes at most half, so about 130,000 resources of 300 bytes of JSON (bench/HISTORY.md, "Large accounts").
 */
export const RESOURCE_VIEWS_BUDGET = 192 * 1024 * 1024;
/** Resources read per step when an account is read; an account of fewer is read in one step, its first readers waiting. */
export const LOAD_CHUNK = 1_000;
/**
 * Several processes (PostgreSQL): resources read per step after the first. Twenty reads instead of
 * a hundred shortened the reading of 100,000 under load (bench/HISTORY.md, "The freshly started row on
 * PostgreSQL: fewer, larger reads"); one process (SQLite) reads
 * synchronously, holding the event loop for the whole read, so it keeps LOAD_CHUNK.
 */
export const SHARED_LATER_CHUNK = 5_000;
/** How long an account found too large for memory is left to storage before it is read again. */
const TOO_LARGE_RECHECK_MS = 10 * 60_000;
/** The most accounts remembered as too large (their ids, a few dozen bytes each). */
const TOO_LARGE_MARKS = 10_000;
/** Accounts read at once: each holds what it has read until it is done; storage answers for more. */
const CONCURRENT_FILLS = 4;
/**
 * Several processes: how long a view answers before its newest id is read from storage again, in
 * case a notification was lost without the connection noticing (a half-open TCP connection).
 */
export const VIEW_CONFIRM_MS = 1000;
/** Several processes: a view further behind than this many events is read again instead of caught up. */
const CATCH_UP_MOST = 5_000;

/** Several processes (PostgreSQL): where a view reads the commits it hears of. */
export interface OtherProcesses {
  /** The account's events after `after` up to `upTo`, in id order, from the log. */
  events(accountId: string, after: number, upTo: number): Promise<Event[]>;
  /** The account's newest committed event id. */
  newestId(accountId: string): Promise<number>;
}

export interface ReadModelOptions {
  /** One process (SQLite): notices a commit by another process on the same file. */
  externalWrites?: ExternalWrites;
  /** Several processes (PostgreSQL): reads what others committed; the model then follows the bus. */
  others?: OtherProcesses;
  budget?: number;
  tooLargeRecheckMs?: number;
  chunk?: number;
  /**
   * Resources read per step after the first (`chunk` unless given): more where a read does not
   * hold the event loop while storage answers it (PostgreSQL's driver parses rows as they arrive).
   */
  laterChunk?: number;
  /** Several processes: VIEW_CONFIRM_MS unless given. */
  confirmMs?: number;
}

export interface ResourceReadModel {
  /** The account's resources, or undefined when storage must answer; may read the account first. */
  view(accountId: string): ResourceView | undefined | Promise<ResourceView | undefined>;
  /** The account's resources if memory holds them now; never reads storage (safe inside a transaction). */
  held(accountId: string): ResourceView | undefined;
  /** While the account is being read into memory (storage answers meanwhile): what helps storage answer. */
  reading(accountId: string): ReadingResources | undefined;
  /** After commit: the account's new events, in id order. */
  committed(accountId: string, events: readonly Event[]): void;
}

/**
 * Reads at most `limit` of an account's resources in creation order: the first ones together with
 * the account's newest event id, in one transaction, or (with `afterSeq`) those created after
 * `afterSeq`, committed as of now. With `orderLimit`, when the first read is a full `limit`, the
 * same transaction also reads the account's creation order: the `created_seq` of its first
 * `orderLimit` resources (the index alone).
 */
export type LoadResources = (
  accountId: string,
  limit: number,
  afterSeq?: number,
  orderLimit?: number,
) => Promise<{ records: ResourceRecord[]; newestEventId: number; creationOrder?: number[] }>;

export class InMemoryResourceReadModel implements ResourceReadModel, NotificationFollower {
  private readonly views: LRUCache<string, AccountResources>;
  private readonly fills = new Map<string, Fill>();
  /**
   * Accounts found too large to keep, read from storage until the mark runs out; then they are
   * read once more, so an account that shrank is kept again. Bounded like everything held.
   */
  private readonly tooLarge: LRUCache<string, true>;
  /** The most one account may take: a half of the budget, so that one account cannot push out all others. */
  readonly maxViewBytes: number;
  private readonly externalWrites: ExternalWrites | undefined;
  private readonly others: OtherProcesses | undefined;
  private readonly chunk: number;
  private readonly laterChunk: number;
  private readonly confirmMs: number;
  /** Several processes: while notifications may be missed (the listening connection is down), nothing is kept. */
  private blind = false;

  constructor(
    private readonly load: LoadResources,
    options: ReadModelOptions = {},
  ) {
    const { budget = RESOURCE_VIEWS_BUDGET, tooLargeRecheckMs = TOO_LARGE_RECHECK_MS } = options;
    this.externalWrites = options.externalWrites;
    this.others = options.others;
    this.chunk = options.chunk ?? LOAD_CHUNK;
    this.laterChunk = options.laterChunk ?? this.chunk;
    this.confirmMs = options.confirmMs ?? VIEW_CONFIRM_MS;
    // Half of what the cache counts: a view's real weight exceeds its counted one by an eighth at most.
    const counted = weighedMaxSize(budget);
    this.maxViewBytes = Math.floor(counted / 2);
    this.views = new LRUCache({ maxSize: counted, maxEntrySize: this.maxViewBytes, sizeCalculation: (view) => Math.max(1, view.weight) });
    this.tooLarge = new LRUCache({ max: TOO_LARGE_MARKS, ttl: tooLargeRecheckMs });
  }

  view(accountId: string): ResourceView | undefined | Promise<ResourceView | undefined> {
    this.forgetIfWrittenElsewhere();
    if (this.blind) return undefined;
    const view = this.views.get(accountId);
    if (view) return this.others ? this.current(accountId, view) : view;
    if (this.tooLarge.has(accountId)) return undefined;
    const fill = this.fills.get(accountId);
    if (fill) return fill.background ? undefined : fill.firstChunk;
    if (this.fills.size >= CONCURRENT_FILLS) return undefined;
    return this.startFill(accountId).firstChunk;
  }

  /** Several processes: the view unless it is behind what was heard of; confirmed against storage once in a while. */
  private current(accountId: string, view: AccountResources): AccountResources | undefined {
    if (view.behind) return undefined;
    if (!view.check.due(this.confirmMs)) return view;
    view.check.run(
      () => this.others!.newestId(accountId),
      (newest) => this.behind(accountId, view, newest),
      () => {
        if (this.views.peek(accountId) === view) this.views.delete(accountId);
      },
    );
    return view;
  }

  held(accountId: string): ResourceView | undefined {
    return this.views.peek(accountId);
  }

  private startFill(accountId: string): Fill {
    const fill = new Fill(this.others !== undefined);
    // Registered before the first read, so every event committed after what it reads is caught.
    this.fills.set(accountId, fill);
    let resolveFirst: (view: ResourceView | undefined) => void = () => {};
    fill.firstChunk = new Promise((resolve) => (resolveFirst = resolve));
    void this.runFill(accountId, fill, resolveFirst).then(
      (view) => resolveFirst(view),
      () => resolveFirst(undefined),
    );
    return fill;
  }

  private async runFill(accountId: string, fill: Fill, firstChunkRead: (view: undefined) => void): Promise<ResourceView | undefined> {
    try {
      // One more than what could fit: an account that long is known to be too large at once.
      const fitting = Math.floor(this.maxViewBytes / ENTRY_OVERHEAD);
      const first = await this.load(accountId, this.chunk, undefined, fitting + 1);
      if (first.creationOrder && first.creationOrder.length > fitting) {
        this.tooLarge.set(accountId, true);
        return undefined;
      }
      const view = new AccountResources(first.newestEventId);
      fill.readAt = first.newestEventId;
      // Unless a deletion was announced while the first chunk was read.
      if (!fill.events.some(isDeletion) && (!this.others || fill.unchangedSince(first.newestEventId))) fill.creationOrder = first.creationOrder;
      let records = first.records;
      let asked = this.chunk;
      while (!fill.abandoned) {
        for (const record of records) view.put(record);
        if (records.length < asked) break;
        if (view.weight > this.maxViewBytes) {
          this.tooLarge.set(accountId, true);
          return undefined;
        }
        if (!fill.background) {
          // More than one chunk: readers are answered by what is read so far and by storage (its
          // counts and indexes make that fast too) while the rest is read a chunk at a time,
          // letting requests through between.
          fill.background = true;
          if (fill.unchangedSince(first.newestEventId)) fill.readSoFar = view;
          firstChunkRead(undefined);
        }
        await new Promise((resolve) => setImmediate(resolve));
        asked = this.laterChunk;
        records = (await this.load(accountId, asked, records.at(-1)!.createdSeq)).records;
      }
      if (fill.abandoned) return undefined;
      if (view.weight > this.maxViewBytes) {
        this.tooLarge.set(accountId, true);
        return undefined;
      }
      // The reads stood at the newest event or later; the events since, in order, bring every
      // resource to its latest state whatever each read saw. A gap: an event was not announced
      // here; several processes read it from the log, one forgets what it read.
      let heardUpTo = fill.heardUpTo;
      for (const event of fill.events) {
        if (event.id <= view.lastEventId) continue;
        if (event.id !== view.lastEventId + 1) {
          if (!this.others) return undefined;
          heardUpTo = Math.max(heardUpTo, fill.events.at(-1)!.id);
          break;
        }
        view.apply(event, true);
      }
      setWeighed(this.views, accountId, view);
      if (this.others) this.behind(accountId, view, heardUpTo);
      return view.behind ? undefined : view;
    } finally {
      if (this.fills.get(accountId) === fill) this.fills.delete(accountId);
    }
  }

  /** Another process changed resources this one was not told of: nothing held can be trusted. */
  private forgetIfWrittenElsewhere(): void {
    if (this.externalWrites?.happened()) this.forgetAll();
  }

  private forgetAll(): void {
    this.views.clear();
    for (const fill of this.fills.values()) fill.abandoned = true;
    this.fills.clear();
  }

  reading(accountId: string): ReadingResources | undefined {
    return this.blind ? undefined : this.fills.get(accountId);
  }

  committed(accountId: string, events: readonly Event[]): void {
    this.fills.get(accountId)?.announced(events);
    const view = this.views.peek(accountId);
    if (!view) return;
    for (const event of events) {
      if (event.id <= view.lastEventId) continue;
      // A gap (an event this process has not been told of lies in between) or an event that does
      // not fit what is held: read the account again; several processes read the gap from the log.
      if (event.id !== view.lastEventId + 1 || view.behind) {
        if (!this.others) this.views.delete(accountId);
        else this.behind(accountId, view, events.at(-1)!.id);
        return;
      }
      if (!view.apply(event)) {
        this.views.delete(accountId);
        return;
      }
    }
    // Its new size, once it drifted; past the most one account may take, it is not kept, and the
    // account is read again when asked for.
    setWeighed(this.views, accountId, view);
  }

  // Several processes: the bus tells of every account's commits (NotificationFollower).

  heard(accountId: string, upTo: number): void {
    const view = this.views.peek(accountId);
    if (view) this.behind(accountId, view, upTo);
    this.fills.get(accountId)?.heard(upTo);
  }

  lost(): void {
    this.blind = true;
    this.forgetAll();
  }

  regained(): void {
    this.blind = false;
  }

  /** The account has events up to `upTo`: until the view holds them, storage answers, and they are read from the log. */
  private behind(accountId: string, view: AccountResources, upTo: number): void {
    if (upTo <= view.heardUpTo) return;
    view.heardUpTo = upTo;
    if (view.behind && !view.catchingUp) void this.catchUp(accountId, view);
  }

  private async catchUp(accountId: string, view: AccountResources): Promise<void> {
    view.catchingUp = true;
    const stillHeld = () => this.views.peek(accountId) === view;
    try {
      while (stillHeld() && view.behind) {
        const upTo = view.heardUpTo;
        if (upTo - view.lastEventId > CATCH_UP_MOST) break;
        const events = await this.others!.events(accountId, view.lastEventId, upTo);
        if (!stillHeld()) return;
        for (const event of events) {
          if (event.id <= view.lastEventId) continue;
          // Replaying: the fill's later chunks may have seen these already.
          if (event.id !== view.lastEventId + 1 || !view.apply(event, true)) break;
        }
        // The log lacks what was announced (pruned meanwhile), or it did not fit.
        if (view.lastEventId < upTo) break;
        setWeighed(this.views, accountId, view);
      }
      if (stillHeld() && view.behind) this.views.delete(accountId);
    } catch {
      if (stillHeld()) this.views.delete(accountId);
    } finally {
      view.catchingUp = false;
    }
  }
}
