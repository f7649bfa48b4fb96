// The rate-limit counter kept in the database, so several processes share one allowance.
import type { Kysely } from 'kysely';
import type { RateLimitCounter } from '../platform/rate-limit.js';
import type { Database } from './schema.js';

const SWEEP_EVERY_MS = 60_000;
/** Longer than the longest window in use (signup attempts: one hour). */
const KEEP_MS = 2 * 60 * 60_000;

export class StoredRateLimitCounter implements RateLimitCounter {
  private lastSweep = 0;

  constructor(private readonly db: Kysely<Database>) {}

  async hit(key: string, windowStart: number, increment: boolean): Promise<number> {
    if (windowStart - this.lastSweep >= SWEEP_EVERY_MS) {
      // Now and then, windows that ended long ago (longer than any limiter's window) are dropped.
      this.lastSweep = windowStart;
      await this.db.deleteFrom('rate_limit_windows').where('window_start', '<', windowStart - KEEP_MS).execute();
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
