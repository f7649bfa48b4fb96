// Helpers shared by the schedule tests: events of an account, and waiting for a condition.
import { expect } from 'vitest';
import type { TestApp, TestResponse } from '../support/app.js';
import { until } from '../support/wait.js';

export interface EventBody {
  id: number;
  type: string;
  data: Record<string, any>;
  createdAt: string;
}

/** Every event of the account (through the API), oldest first. */
export async function allEvents(app: TestApp, key: string, type?: string): Promise<EventBody[]> {
  const events: EventBody[] = [];
  let after = 0;
  for (;;) {
    const query = new URLSearchParams({ after: String(after), limit: '1000', ...(type ? { type } : {}) });
    const page: TestResponse = await app.request({ url: `/api/v1/events?${query}`, key });
    expect(page.status, page.body).toBe(200);
    events.push(...page.json.data);
    if (!page.json.hasMore) return events;
    after = page.json.cursor;
  }
}

/** Waits until the account has `count` schedule.executed events and returns them. */
export async function executedEvents(app: TestApp, key: string, count: number): Promise<EventBody[]> {
  let executed: EventBody[] = [];
  await until(
    async () => {
      executed = await allEvents(app, key, 'schedule.executed');
      return executed.length >= count;
    },
    `${count} schedule.executed event(s)`,
    60_000,
  );
  return executed;
}

/**
 * Waits for a whole look for due runs by the app's scheduler that began after this call, so after
 * anything the test did before it (a move of the ManualClock, a run it waited for). The status
 * body only tells when the last successful look ended (real time): a look that ends after now may
 * have begun before, on the clock as it was then. Looks never overlap, so the second one to end
 * after now is one that began after now.
 */
export async function schedulerPassed(app: TestApp): Promise<void> {
  const since = new Date().toISOString();
  let firstEnded: string | undefined;
  await until(
    async () => {
      const status = await app.request({ url: '/api/v1/status' });
      const lastRunAt = status.json?.workers?.scheduler?.lastRunAt as string | null | undefined;
      if (typeof lastRunAt !== 'string' || lastRunAt <= since) return false;
      firstEnded ??= lastRunAt;
      return lastRunAt > firstEnded;
    },
    'the scheduler to look for due runs again, from start to end',
    60_000,
  );
}
