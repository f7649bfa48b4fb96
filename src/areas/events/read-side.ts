// The events' read side: a page of the log as prepared JSON (from the newest events in memory, the
// older ones kept in chunks, or storage), the reads a stream catches up with, and the cursor rules
// (410 once a cursor falls out of the retained window). The service (service.ts) writes.
import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { DomainError } from '../../domain-errors.js';
import { type JsonParts, ownCopy } from '../../platform/json-body.js';
import type { TypeFilter } from '../../platform/type-filter.js';
import type { EventBus } from './bus.js';
import { oldestRetainedCursor, type Event } from './event.js';
import type { LoadEvents, OlderEvents } from './older.js';
import type { RecentEvent, RecentEvents } from './recent.js';
import { listEvents, listEventsJson, newestEventId } from './store.js';

export class EventReads {
  private readonly older: OlderEvents;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly retention: number,
    /** Events as they commit, in every process: what streams follow. */
    readonly bus: EventBus,
    private readonly recent: RecentEvents,
    olderEvents: (load: LoadEvents) => OlderEvents,
  ) {
    // Kept in memory, each event's JSON is copied into a buffer of its own (no shared pool slab).
    this.older = olderEvents(async (accountId, from, upTo) =>
      (await listEventsJson(this.db, accountId, { after: from - 1, upTo, limit: upTo - from + 1 })).map((event) => ({ ...event, json: ownCopy(event.json) })),
    );
  }

  /** The oldest cursor still served: fixed by the retention rule, not by when rows are deleted. */
  oldestCursor(newest: number): number {
    return oldestRetainedCursor(newest, this.retention);
  }

  /** Throws 410 when `after` lies before the retained window of a log whose newest id is `newest`. */
  private checkCursorAgainst(after: number, newest: number): void {
    const oldest = this.oldestCursor(newest);
    if (after < oldest) {
      throw new DomainError('cursor_expired', `Cursor ${after} is older than the retained events; reload a snapshot and resume from its cursor`, [
        { path: '/after', message: `must be at least ${oldest}`, oldestCursor: oldest },
      ]);
    }
  }

  /** Throws 410 when `after` lies before the retained window; returns the newest id. */
  async checkCursor(accountId: string, after: number): Promise<number> {
    const newest = await newestEventId(this.db, accountId);
    this.checkCursorAgainst(after, newest);
    return newest;
  }

  /**
   * After the events past `after` up to `newest` were read from storage: retention may have deleted
   * some of them meanwhile, when the window moved past `after` since it was checked. Retention
   * deletes the oldest ids first, so a read that begins at `after + 1` hid nothing; otherwise (a
   * deletion, or a type filter) the newest id is read again, and returned if `after` is now out of
   * the window (retention deletes only below the window of a committed id).
   */
  async expiredDuringRead(accountId: string, after: number, newest: number, firstId: number | undefined): Promise<number | undefined> {
    if (after >= newest || firstId === after + 1) return undefined;
    const newestNow = await this.newestId(accountId);
    return after < this.oldestCursor(newestNow) ? newestNow : undefined;
  }

  /** An EventPage (`data`, `cursor`, `hasMore`, `oldestCursor`) as JSON parts (UTF-8), from the recent events in memory or storage. */
  async pageJson(accountId: string, query: { after: number; limit: number; type?: TypeFilter }): Promise<JsonParts> {
    // One more than the page, to know whether there are more.
    let rows: RecentEvent[];
    let newest: number;
    const recent = this.recent.after(accountId, query.after, query.limit + 1, query.type);
    if (recent) {
      ({ newest, events: rows } = recent);
      this.checkCursorAgainst(query.after, newest);
    } else {
      // The newest id is known (from memory, else storage) before the events are read: an event
      // committed in between is then either in the page or after the cursor, never skipped.
      const known = this.recent.newest(accountId);
      if (known === undefined) newest = await this.checkCursor(accountId, query.after);
      else {
        newest = known;
        this.checkCursorAgainst(query.after, newest);
      }
      const page = await this.older.after(accountId, query.after, query.limit + 1, query.type, newest);
      rows = page.events;
      if (page.continueAfter !== undefined) {
        const rest = { after: page.continueAfter, limit: query.limit + 1 - rows.length, type: query.type, upTo: newest };
        rows = rows.concat(await listEventsJson(this.db, accountId, rest));
      }
      const newestNow = await this.expiredDuringRead(accountId, query.after, newest, rows[0]?.id);
      if (newestNow !== undefined) this.checkCursorAgainst(query.after, newestNow);
    }
    const data = rows.slice(0, query.limit);
    const last = data.at(-1);
    const cursor = last ? last.id : Math.max(newest, query.after);
    const oldestCursor = this.oldestCursor(Math.max(newest, last?.id ?? 0));
    return {
      head: '{"data":[',
      items: data.map((row) => row.json),
      tail: `],"cursor":${cursor},"hasMore":${rows.length > query.limit},"oldestCursor":${oldestCursor}}`,
    };
  }

  /** Events after `after` (up to `upTo`), for streams catching up. */
  read(accountId: string, query: { after: number; limit: number; type?: TypeFilter; upTo?: number }): Promise<Event[]> {
    return listEvents(this.db, accountId, query);
  }

  /** The same events as their API JSON, exactly as stored (a replay's payloads). */
  readJson(accountId: string, query: { after: number; limit: number; upTo?: number }): Promise<Array<{ id: number; type: string; json: Buffer }>> {
    return listEventsJson(this.db, accountId, query);
  }

  newestId(accountId: string, exec: Executor = this.db): Promise<number> {
    return newestEventId(exec, accountId);
  }
}
