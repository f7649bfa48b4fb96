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
  await until(async () => {
    executed = await allEvents(app, key, 'schedule.executed');
    return executed.length >= count;
  }, `${count} schedule.executed event(s)`);
  return executed;
}

/** Waits until the app's scheduler has looked for due runs again, after now (real time). */
export async function schedulerPassed(app: TestApp): Promise<void> {
  const since = new Date().toISOString();
  await until(async () => {
    const status = await app.request({ url: '/api/v1/status' });
    const lastRunAt = status.json?.workers?.scheduler?.lastRunAt as string | null | undefined;
    return typeof lastRunAt === 'string' && lastRunAt > since;
  }, 'the scheduler to look for due runs again');
}
