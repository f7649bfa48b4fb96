import type { Executor } from '../../storage/schema.js';

export interface UsageCounts {
  requests: number;
  errors: number;
  eventsCreated: number;
  webhookDeliveries: number;
}

export interface UsageDay extends UsageCounts {
  date: string;
}

/** Adds buffered counts to the stored day rows; additive, so several processes may flush into one row. */
export async function addUsage(db: Executor, accountId: string, day: string, counts: UsageCounts): Promise<void> {
  await db
    .insertInto('usage_daily')
    .values({
      account_id: accountId,
      day,
      requests: counts.requests,
      errors: counts.errors,
      events_created: counts.eventsCreated,
      webhook_deliveries: counts.webhookDeliveries,
    })
    .onConflict((oc) =>
      oc.columns(['account_id', 'day']).doUpdateSet((eb) => ({
        requests: eb('usage_daily.requests', '+', eb.ref('excluded.requests')),
        errors: eb('usage_daily.errors', '+', eb.ref('excluded.errors')),
        events_created: eb('usage_daily.events_created', '+', eb.ref('excluded.events_created')),
        webhook_deliveries: eb('usage_daily.webhook_deliveries', '+', eb.ref('excluded.webhook_deliveries')),
      })),
    )
    .execute();
}

export async function listUsage(db: Executor, accountId: string, fromDay: string): Promise<UsageDay[]> {
  const rows = await db.selectFrom('usage_daily').selectAll().where('account_id', '=', accountId).where('day', '>=', fromDay).orderBy('day').execute();
  return rows.map((row) => ({
    date: row.day,
    requests: Number(row.requests),
    errors: Number(row.errors),
    eventsCreated: Number(row.events_created),
    webhookDeliveries: Number(row.webhook_deliveries),
  }));
}
