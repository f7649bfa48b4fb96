// History's housekeeping, run by the `history` task (workers/background.ts) in small steps with a
// turn of the event loop between them, each run bounded in time so that no request waits long
// behind it (the lessons of events' retention: bench/HISTORY.md, "Long runs"), once the points
// live writes staged are moved into their series (staged.ts):
//   1. PostgreSQL: the day partitions of the days ahead made, and those past retention dropped;
//   2. hourly aggregates built for the hours that ended (a margin after, for late writers);
//   3. hours a backfill made stale built again;
//   4. a share of the series passed over: their points past HISTORY_RETENTION_DAYS and aggregates
//      past HISTORY_ROLLUP_DAYS deleted (a pass over all series takes several runs);
//   5. the history of deleted resources removed.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import { inTransaction } from '../../storage/transaction.js';
import { isPostgres } from '../../storage/postgres-writes.js';
import { dropHistoryPartitionsBefore, ensureHistoryPartitions } from '../../storage/history-partitions.js';
import { DAY_MS, HOUR_MS } from './points.js';
import {
  deleteHoursBefore,
  deletePointsBefore,
  firstPointAt,
  lockSeries,
  oldestUnrolled,
  rebuildHours,
  removeRetired,
  retiredSeries,
  rollHours,
  seriesAfter,
  seriesToRoll,
  skipEmptyHours,
  staleBatch,
} from './housekeeping-store.js';
import type { HistoryOptions } from './service.js';
import type { StagedPoints } from './staged.js';

/** How long after an hour ends its aggregate is built: writers on other machines may run a little late. */
export const ROLLUP_MARGIN_MS = 5 * 60_000;
/**
 * The most hours one step aggregates (or rebuilds) for a series: at 1 Hz, 14,400 points read by
 * one statement, a few milliseconds on SQLite, whose statements hold the event loop while they run.
 */
const HOURS_PER_STEP = 4;
/** Series a run looks at in each step. */
const SERIES_PER_STEP = 50;
/** How long one run works before it leaves the rest to the next. */
const RUN_BUDGET_MS = 2000;

export interface HousekeepingReport {
  hoursBuilt: number;
  staleRebuilt: number;
  rowsDeleted: number;
  partitionsDropped: number;
  /** Whether the run caught up: every ended hour aggregated, no stale hour, no retired series left. */
  done: boolean;
  /** Whether this run ended a pass over every series deleting what expired (a pass takes several runs). */
  sweptAll: boolean;
}

export class HistoryHousekeeping {
  /** Where the pass over all series (step 4) goes on from. */
  private passAfter = 0;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly options: HistoryOptions,
    private readonly staged: StagedPoints,
  ) {}

  /** One run: the steps in order until each has nothing left or the run's time is up. */
  async run(signal?: AbortSignal, budgetMs = RUN_BUDGET_MS): Promise<HousekeepingReport> {
    const started = performance.now();
    const report: HousekeepingReport = { hoursBuilt: 0, staleRebuilt: 0, rowsDeleted: 0, partitionsDropped: 0, done: false, sweptAll: false };
    // The points of live writes into their series first: the hours are aggregated from them.
    await this.staged.settle();
    const timeLeft = () => !signal?.aborted && performance.now() - started < budgetMs;
    const now = this.clock.now().getTime();
    const rawCut = now - this.options.retentionDays * DAY_MS;
    const rollupCut = now - this.options.rollupDays * DAY_MS;
    if (isPostgres(this.db)) {
      await ensureHistoryPartitions(this.db, now);
      const unrolled = await oldestUnrolled(this.db);
      // A day's partition goes once every series aggregated it: its points are then in the hours.
      report.partitionsDropped = await dropHistoryPartitionsBefore(this.db, Math.min(rawCut, unrolled ?? rawCut));
    }
    const rollBefore = now - ROLLUP_MARGIN_MS - ((now - ROLLUP_MARGIN_MS) % HOUR_MS);
    let more = true;
    while (more && timeLeft()) {
      more = false;
      for (const key of await seriesToRoll(this.db, rollBefore, SERIES_PER_STEP)) {
        report.hoursBuilt += await this.roll(key, rollBefore, now);
        more = true;
        await nextTurn();
        if (!timeLeft()) return report;
      }
    }
    more = true;
    while (more && timeLeft()) {
      const stale = await staleBatch(this.db, SERIES_PER_STEP);
      more = stale.size > 0;
      for (const [key, hours] of stale) {
        for (let start = 0; start < hours.length; start += HOURS_PER_STEP) {
          const part = hours.slice(start, start + HOURS_PER_STEP);
          await inTransaction(this.db, async (trx) => {
            if (await lockSeries(trx, key)) await rebuildHours(trx, key, part, now);
            else await trx.deleteFrom('history_stale').where('series', '=', key).execute();
          });
          report.staleRebuilt += part.length;
          await nextTurn();
          if (!timeLeft()) return report;
        }
      }
    }
    if (!timeLeft()) return report;
    for (const series of await seriesAfter(this.db, this.passAfter, SERIES_PER_STEP)) {
      // Points go only once their hours are aggregated.
      report.rowsDeleted += await this.deleteAll((db) => deletePointsBefore(db, series.key, Math.min(rawCut, series.rolledUntil)), timeLeft);
      report.rowsDeleted += await this.deleteAll((db) => deleteHoursBefore(db, series.key, rollupCut), timeLeft);
      if (!timeLeft()) return report;
      this.passAfter = series.key;
    }
    if ((await seriesAfter(this.db, this.passAfter, 1)).length === 0) {
      this.passAfter = 0;
      report.sweptAll = true;
    }
    for (let key = await retiredSeries(this.db); key !== undefined && timeLeft(); key = await retiredSeries(this.db)) {
      report.rowsDeleted += await this.deleteAll((db) => removeRetired(db, key), timeLeft);
      await nextTurn();
    }
    report.done = timeLeft();
    return report;
  }

  /** Aggregates a series' hours up to `before`, a day's worth per transaction. Returns hours built. */
  private async roll(key: number, before: number, now: number): Promise<number> {
    return inTransaction(this.db, async (trx) => {
      const series = await lockSeries(trx, key);
      if (!series || series.rolledUntil >= before) return 0;
      // Hours without a point are passed over at once: a quiet resource costs a statement, not one per hour.
      const next = await firstPointAt(trx, key, series.rolledUntil, before);
      if (next === undefined) {
        await skipEmptyHours(trx, key, before);
        return 0;
      }
      const from = next - (next % HOUR_MS);
      return rollHours(trx, key, from, Math.min(before, from + HOURS_PER_STEP * HOUR_MS), now);
    });
  }

  /** Runs a bounded delete until it deletes nothing or time is up, a turn between statements. */
  private async deleteAll(remove: (db: Kysely<Database>) => Promise<number>, timeLeft: () => boolean): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await remove(this.db);
      total += deleted;
      if (deleted === 0 || !timeLeft()) return total;
      await nextTurn();
    }
  }
}
