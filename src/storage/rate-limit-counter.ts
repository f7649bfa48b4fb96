// The rate-limit counter kept in the database, so several processes share one allowance.
import type { Kysely } from 'kysely';
import type { RateLimitCounter } from '../platform/rate-limit.js';
import type { Database } from './schema.js';

const SWEEP_EVERY_MS = 60_000;
/** Longer than the longest window in use (signup attempts: one hour). */
const KEEP_MS = 2 * 60 * 60_000;

/** Counts every hit in storage, one upsert each: exact across processes. */
export class StoredRateLimitCounter implements RateLimitCounter {
  private lastSweep = 0;

  constructor(private readonly db: Kysely<Database>) {}

  async hit(key: string, windowStart: number, increment: boolean): Promise<number> {
    if (windowStart - this.lastSweep >= SWEEP_EVERY_MS) {
      // Now and then, windows that ended long ago (longer than any limiter's window) are dropped.
      this.lastSweep = windowStart;
      await this.db
        .deleteFrom('rate_limit_windows')
        .where('window_start', '<', windowStart - KEEP_MS)
        .execute();
    }
    if (!increment) {
      const row = await this.db
        .selectFrom('rate_limit_windows')
        .select('count')
        .where('key', '=', key)
        .where('window_start', '=', windowStart)
        .executeTakeFirst();
      return row ? Number(row.count) : 0;
    }
    // One atomic upsert: concurrent processes never lose a hit.
    const row = await this.db
      .insertInto('rate_limit_windows')
      .values({ key, window_start: windowStart, count: 1 })
      .onConflict((oc) => oc.columns(['key', 'window_start']).doUpdateSet((eb) => ({ count: eb('rate_limit_windows.count', '+', 1) })))
      .returning('count')
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }
}

/** A key with a smaller allowance is counted hit by hit (exact; at most this many writes a window). */
export const BATCH_FROM_LIMIT = 1000;
/** How often the counts made in memory are merged into storage. */
export const MERGE_EVERY_MS = 100;

interface Tally {
  windowStart: number;
  /** The shared count as of this process's last read or merge (its own merged hits included). */
  known: number;
  /** Hits counted here and not yet merged, and those in the merge under way. */
  pending: number;
  merging: number;
  /** The window's first hit, counted in storage to learn what other processes have counted. */
  first: Promise<number> | undefined;
}

/**
 * Several processes at high rates: a key with a large allowance is counted in memory and merged
 * into storage every MERGE_EVERY_MS in one statement, so a request does not wait for a write.
 * The allowance may be overshot by what the other processes admit for the key between two of
 * their merges (decisions: "Rate limits on PostgreSQL"). A key past its allowance is refused here
 * without a write. Small allowances (the default 600 a minute) stay exact.
 */
export class BatchedRateLimitCounter implements RateLimitCounter {
  private readonly exact: StoredRateLimitCounter;
  private readonly tallies = new Map<string, Tally>();
  private newestWindow = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly mergeEveryMs = MERGE_EVERY_MS,
  ) {
    this.exact = new StoredRateLimitCounter(db);
  }

  hit(key: string, windowStart: number, increment: boolean, limit: number): number | Promise<number> {
    if (!increment || limit < BATCH_FROM_LIMIT) return this.exact.hit(key, windowStart, increment);
    if (windowStart > this.newestWindow) this.newestWindow = windowStart;
    const tally = this.tallies.get(key);
    if (!tally || tally.windowStart !== windowStart) {
      const fresh: Tally = { windowStart, known: 0, pending: 0, merging: 0, first: undefined };
      this.tallies.set(key, fresh);
      fresh.first = this.exact.hit(key, windowStart, true).then(
        (count) => {
          fresh.known = Math.max(fresh.known, count);
          fresh.first = undefined;
          return count;
        },
        (error: unknown) => {
          if (this.tallies.get(key) === fresh) this.tallies.delete(key);
          throw error;
        },
      );
      return fresh.first;
    }
    const counted = tally;
    if (counted.first) return counted.first.then(() => this.countHere(counted, limit));
    return this.countHere(counted, limit);
  }

  private countHere(tally: Tally, limit: number): number {
    const count = tally.known + tally.merging + tally.pending + 1;
    // Past the allowance the exact count no longer matters: refused without a write.
    if (count > limit) return count;
    tally.pending++;
    this.scheduleMerge();
    return count;
  }

  private scheduleMerge(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.merge();
    }, this.mergeEveryMs);
    // Counts not merged when the process exits are lost: the allowance errs on the lenient side.
    this.timer.unref();
  }

  /** Adds the pending counts to storage in one statement and learns the shared totals. */
  async merge(): Promise<void> {
    const batch: Array<{ key: string; tally: Tally; by: number }> = [];
    for (const [key, tally] of this.tallies) {
      if (tally.pending > 0) {
        batch.push({ key, tally, by: tally.pending });
        tally.merging += tally.pending;
        tally.pending = 0;
      } else if (tally.windowStart < this.newestWindow && tally.merging === 0 && !tally.first) {
        this.tallies.delete(key);
      }
    }
    if (batch.length === 0) return;
    try {
      const rows = await this.db
        .insertInto('rate_limit_windows')
        .values(batch.map(({ key, tally, by }) => ({ key, window_start: tally.windowStart, count: by })))
        .onConflict((oc) => oc.columns(['key', 'window_start']).doUpdateSet((eb) => ({ count: eb('rate_limit_windows.count', '+', eb.ref('excluded.count')) })))
        .returning(['key', 'count'])
        .execute();
      const totals = new Map(rows.map((row) => [row.key, Number(row.count)]));
      for (const { key, tally, by } of batch) {
        tally.merging -= by;
        tally.known = Math.max(tally.known, totals.get(key) ?? 0);
      }
    } catch {
      // Storage trouble: the counts wait for the next merge.
      for (const { tally, by } of batch) {
        tally.merging -= by;
        tally.pending += by;
      }
      this.scheduleMerge();
    }
  }
}
