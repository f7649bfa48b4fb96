// An account being read into memory in chunks: the events committed meanwhile wait here, and what
// is read so far helps storage answer until the whole account is held.
import type { Event } from '../events/event.js';
import { type AccountResources, isDeletion, isResourceChange } from './account-resources.js';
import type { ResourceQuery, ResourceRecord } from './store.js';
import type { ReadingResources, ResourceView } from './view.js';

/** Filters whose counts an account being read keeps: bounded, like everything held. */
const COUNTED_FILTERS = 1_000;

/** The key of a single filter's count (a type or one tag); undefined for several filters. */
function filterKey({ type, tags }: ResourceQuery): string | undefined {
  if (tags.length === 0) return type === undefined ? '' : `type:${type}`;
  return tags.length === 1 && type === undefined ? `tag:${tags[0]}` : undefined;
}

/** An account being read: the events committed meanwhile wait here, to be applied once it is read. */
export class Fill implements ReadingResources {
  readonly events: Event[] = [];
  /** Settles when the first chunk is read: the view when that was the whole account, else undefined. */
  firstChunk: Promise<ResourceView | undefined> = Promise.resolve(undefined);
  /** Past the first chunk: readers are answered by storage (and `readSoFar`) until the rest is read. */
  background = false;
  /** Set when what it read can no longer be trusted (another process wrote). */
  abandoned = false;
  /**
   * Every resource's `created_seq` in creation order, read with the first chunk: positions in the
   * whole account's list. Creations only add at the end; a deletion announced since moves them,
   * and this is dropped.
   */
  creationOrder?: number[];
  /** What is read so far, while no change of the account's resources was announced since the reading began. */
  readSoFar?: AccountResources;
  /** Counts of single filters storage gave, while nothing changed. */
  private readonly counts = new Map<string, number>();
  /** Several processes: the newest id heard of. */
  heardUpTo = 0;
  /** The newest event id as of the first chunk's read, once it is read. */
  readAt?: number;

  constructor(private readonly shared = false) {}

  /**
   * Several processes: another process may have committed anything up to `upTo`, so what was read
   * may have changed since (this process's own commits are announced before their notification).
   */
  heard(upTo: number): void {
    this.heardUpTo = Math.max(this.heardUpTo, upTo);
    if (this.readAt !== undefined && upTo > this.readAt) this.changed();
  }

  /** Whether what the first chunk read still stands: nothing was announced, or heard of, since. */
  unchangedSince(readAt: number): boolean {
    return this.shared ? this.events.length === 0 && this.heardUpTo <= readAt : !this.events.some(isResourceChange);
  }

  private changed(): void {
    this.creationOrder = undefined;
    this.readSoFar = undefined;
    this.counts.clear();
  }

  /** After commit: the account's new events. */
  announced(events: readonly Event[]): void {
    this.events.push(...events);
    // Several processes: another's commits may lie before these, unseen.
    if (this.shared) this.changed();
    if (this.creationOrder && events.some(isDeletion)) this.creationOrder = undefined;
    if (this.readSoFar && events.some(isResourceChange)) {
      this.readSoFar = undefined;
      this.counts.clear();
    }
  }

  get(id: string): ResourceRecord | undefined {
    return this.readSoFar?.get(id);
  }

  pageWithin(query: ResourceQuery): Buffer[] | undefined {
    return this.readSoFar?.pageWithin(query);
  }

  creationSeqAt(offset: number): number | undefined {
    return this.creationOrder?.[offset];
  }

  total(query: ResourceQuery): number | undefined {
    if (!this.readSoFar) return undefined;
    const key = filterKey(query);
    // Nothing changed since the order was read, so its length is the account's size.
    if (key === '') return this.creationOrder?.length;
    return key === undefined ? undefined : this.counts.get(key);
  }

  counted(query: ResourceQuery, total: number): void {
    const key = filterKey(query);
    if (this.readSoFar && key && this.counts.size < COUNTED_FILTERS) this.counts.set(key, total);
  }
}
