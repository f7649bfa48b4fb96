import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import { addDays, DAY_MS, type Clock } from '../../platform/clock.js';
import { addUsage, listUsage, type UsageCounts, type UsageDay } from './store.js';

export type { UsageCounts, UsageDay };

export interface UsageReport {
  data: UsageDay[];
  totals: UsageCounts;
}

const zero = (): UsageCounts => ({ requests: 0, errors: 0, eventsCreated: 0, webhookDeliveries: 0 });

function addInto(target: UsageCounts, counts: Partial<UsageCounts>): void {
  target.requests += counts.requests ?? 0;
  target.errors += counts.errors ?? 0;
  target.eventsCreated += counts.eventsCreated ?? 0;
  target.webhookDeliveries += counts.webhookDeliveries ?? 0;
}

/**
 * Per-account daily counters. Requests are counted in memory and written in one batch every few
 * seconds (and on shutdown), so counting adds no storage write to a request.
 */
export class UsageService {
  /** Counts not yet written, by `accountId|day`. */
  private pending = new Map<string, UsageCounts>();
  /** The UTC day counting last happened in: its number since the epoch and its `YYYY-MM-DD`. */
  private dayNumber = -1;
  private day = '';

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  count(accountId: string, counts: Partial<UsageCounts>): void {
    // Every request is counted: the day's name is made once a day, not once a request.
    const dayNumber = Math.floor(this.clock.now().getTime() / DAY_MS);
    if (dayNumber !== this.dayNumber) {
      this.dayNumber = dayNumber;
      this.day = new Date(dayNumber * DAY_MS).toISOString().slice(0, 10);
    }
    addInto(this.pendingEntry(`${accountId}|${this.day}`), counts);
  }

  private pendingEntry(key: string): UsageCounts {
    let entry = this.pending.get(key);
    if (!entry) {
      entry = zero();
      this.pending.set(key, entry);
    }
    return entry;
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.db.transaction().execute(async (trx) => {
        for (const [key, counts] of batch) {
          const [accountId = '', day = ''] = key.split('|');
          await addUsage(trx, accountId, day, counts);
        }
      });
    } catch (error) {
      // Keep the counts for the next flush rather than losing them to a passing storage fault.
      for (const [key, counts] of batch) addInto(this.pendingEntry(key), counts);
      throw error;
    }
  }

  /** The last `days` UTC days, oldest first, one entry per day (zero where nothing happened). */
  async report(accountId: string, days: number): Promise<UsageReport> {
    await this.flush();
    const today = this.clock.now();
    const first = addDays(today, -(days - 1))
      .toISOString()
      .slice(0, 10);
    const stored = new Map((await listUsage(this.db, accountId, first)).map((day) => [day.date, day]));
    const data: UsageDay[] = [];
    const totals = zero();
    for (let offset = days - 1; offset >= 0; offset--) {
      const date = addDays(today, -offset).toISOString().slice(0, 10);
      const day = stored.get(date) ?? { date, ...zero() };
      data.push(day);
      addInto(totals, day);
    }
    return { data, totals };
  }
}
