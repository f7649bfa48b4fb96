// Events older than the recent ones in memory, kept in chunks of consecutive ids with their API
// JSON once read, so that a client catching up from an older cursor is answered from memory too:
// reading and splicing 100 stored events cost many times the bytes' own cost (bench/HISTORY.md,
// "Catching up from an older cursor").
// Events never change once committed and ids are dense, so a chunk whose last id is committed is
// complete and stays right for good (retention only deletes ids below every cursor still served).
// Several processes (PostgreSQL) keep them too: the newest id a page is read up to is one this
// process committed or read from storage, so every id up to it is committed (an id is taken under
// the account's lock in the transaction that writes its event).
import { LRUCache } from 'lru-cache';
import { matchesTypeFilter, type TypeFilter } from '../../platform/type-filter.js';
import type { RecentEvent } from './recent.js';

/** Consecutive event ids a chunk holds: ids `index * CHUNK + 1` to `(index + 1) * CHUNK`. */
export const EVENT_CHUNK = 100;
/** The most event JSON held in chunks for all accounts together, in bytes. */
export const OLDER_EVENTS_BUDGET = 32 * 1024 * 1024;
/** Chunks one request may read from storage; past them the rest of its page comes from storage directly. */
const LOADS_PER_REQUEST = 4;
/** Roughly what an entry costs besides its JSON. */
const ENTRY_OVERHEAD = 64;

export interface EventEntry extends RecentEvent {
  type: string;
}

/** Reads the account's events with ids from `from` to `upTo`, oldest first. */
export type LoadEvents = (accountId: string, from: number, upTo: number) => Promise<EventEntry[]>;

export interface OlderPage {
  events: RecentEvent[];
  /** Where the page stopped short of `limit` before reaching `newest` (too many chunks to read): storage goes on from here. */
  continueAfter: number | undefined;
}

export interface OlderEvents {
  /** Up to `limit` events with `after` < id ≤ `newest` (of the type, if given), from chunks, read and kept as needed. */
  after(accountId: string, after: number, limit: number, type: TypeFilter | undefined, newest: number): Promise<OlderPage>;
}

interface ChunkKey {
  accountId: string;
  index: number;
}

export class InMemoryOlderEvents implements OlderEvents {
  private readonly chunks: LRUCache<string, EventEntry[], ChunkKey>;

  constructor(
    private readonly load: LoadEvents,
    budget = OLDER_EVENTS_BUDGET,
  ) {
    this.chunks = new LRUCache<string, EventEntry[], ChunkKey>({
      maxSize: budget,
      sizeCalculation: (entries) => entries.reduce((sum, entry) => sum + entry.json.length + ENTRY_OVERHEAD, ENTRY_OVERHEAD),
      // Concurrent requests for one chunk share one read.
      fetchMethod: (_key, _stale, { context }) => this.load(context.accountId, context.index * EVENT_CHUNK + 1, (context.index + 1) * EVENT_CHUNK),
    });
  }

  after(accountId: string, after: number, limit: number, type: TypeFilter | undefined, newest: number): Promise<OlderPage> {
    return this.collect(accountId, after, limit, type, newest);
  }

  private async collect(accountId: string, after: number, limit: number, type: TypeFilter | undefined, newest: number): Promise<OlderPage> {
    const events: RecentEvent[] = [];
    let next = after + 1;
    let loads = 0;
    while (next <= newest && events.length < limit) {
      const index = Math.floor((next - 1) / EVENT_CHUNK);
      const last = (index + 1) * EVENT_CHUNK;
      const key = `${accountId}\u0000${index}`;
      let entries = this.chunks.get(key);
      if (!entries) {
        if (loads === LOADS_PER_REQUEST) return { events, continueAfter: next - 1 };
        loads++;
        // Only a chunk whose every id is committed is complete; the one at the head is read, not kept.
        entries =
          last <= newest ? await this.chunks.fetch(key, { context: { accountId, index } }) : await this.load(accountId, index * EVENT_CHUNK + 1, newest);
      }
      for (const entry of entries ?? []) {
        if (entry.id < next || entry.id > newest || !matchesTypeFilter(entry.type, type)) continue;
        events.push(entry);
        if (events.length === limit) break;
      }
      next = last + 1;
    }
    return { events, continueAfter: undefined };
  }
}
