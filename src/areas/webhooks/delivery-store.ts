// The webhook outbox's deliveries: queued in the event's transaction, claimed by the dispatcher in
// turn, their attempts recorded, retried on request and pruned to the newest completed ones.
import { sql, type Selectable } from 'kysely';
import type { Authorizer } from '../../platform/credential.js';
import type { Executor, WebhookDeliveriesTable } from '../../storage/schema.js';
import type { Attempt, Delivery } from './schemas.js';

export interface DeliveryRow {
  id: string;
  webhookId: string;
  accountId: string;
  eventId: number;
  eventType: string;
  payload: string;
  gap: string | null;
  status: Delivery['status'];
  attempts: Attempt[];
  nextAttemptAt: string | null;
  createdAt: string;
  completedAt: string | null;
}

/** A delivery claimed for an attempt, with what sending it needs of its webhook. */
export type ClaimedDelivery = DeliveryRow & { url: string; sealedSecret: string; authorizedBy: Authorizer };

const DELIVERY_COLUMNS = [
  'id',
  'webhook_id',
  'account_id',
  'event_id',
  'event_type',
  'payload',
  'gap',
  'status',
  'attempts',
  'next_attempt_at',
  'created_at',
  'completed_at',
] as const;

function toDelivery(row: Pick<Selectable<WebhookDeliveriesTable>, (typeof DELIVERY_COLUMNS)[number]>): DeliveryRow {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    accountId: row.account_id,
    eventId: Number(row.event_id),
    eventType: row.event_type,
    payload: row.payload,
    gap: row.gap,
    status: row.status as DeliveryRow['status'],
    attempts: JSON.parse(row.attempts) as Attempt[],
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
    completedAt: row.completed_at,
  };
}

export async function insertDelivery(db: Executor, delivery: DeliveryRow, clearGap: boolean): Promise<void> {
  await db
    .insertInto('webhook_deliveries')
    .values({
      id: delivery.id,
      webhook_id: delivery.webhookId,
      account_id: delivery.accountId,
      event_id: delivery.eventId,
      event_type: delivery.eventType,
      payload: delivery.payload,
      gap: delivery.gap,
      status: delivery.status,
      attempts: JSON.stringify(delivery.attempts),
      next_attempt_at: delivery.nextAttemptAt,
      claimed_until: null,
      created_at: delivery.createdAt,
      completed_at: null,
    })
    .execute();
  await db
    .updateTable('webhooks')
    .set((eb) => ({
      pending_count: eb('pending_count', '+', 1),
      ...(clearGap ? { gap_from: null, gap_to: null, gap_dropped: 0 } : {}),
    }))
    .where('id', '=', delivery.webhookId)
    .execute();
}

export async function findDelivery(db: Executor, webhookId: string, id: string): Promise<DeliveryRow | undefined> {
  const row = await db.selectFrom('webhook_deliveries').select(DELIVERY_COLUMNS).where('id', '=', id).where('webhook_id', '=', webhookId).executeTakeFirst();
  return row && toDelivery(row);
}

/** Every pending delivery and the newest `completedKept` completed ones, newest first. */
export async function listDeliveries(db: Executor, webhookId: string, completedKept: number): Promise<DeliveryRow[]> {
  const newestFirst = (completed: boolean) =>
    db
      .selectFrom('webhook_deliveries')
      .select(DELIVERY_COLUMNS)
      .where('webhook_id', '=', webhookId)
      .where('status', completed ? '!=' : '=', 'pending')
      .orderBy('created_at', 'desc')
      .orderBy('event_id', 'desc');
  const [pending, completed] = await Promise.all([newestFirst(false).execute(), newestFirst(true).limit(completedKept).execute()]);
  return [...pending, ...completed].map(toDelivery).sort((a, b) => (a.createdAt === b.createdAt ? b.eventId - a.eventId : a.createdAt < b.createdAt ? 1 : -1));
}

/**
 * The oldest `count` due, unclaimed deliveries of enabled webhooks other than `excluded`, in the
 * order they fell due (the due index makes this cheap when nothing is excluded).
 */
export async function dueDeliveries(
  db: Executor,
  nowIso: string,
  count: number,
  excluded: readonly string[],
): Promise<Array<{ id: string; webhookId: string }>> {
  let query = db
    .selectFrom('webhook_deliveries')
    .innerJoin('webhooks', 'webhooks.id', 'webhook_deliveries.webhook_id')
    .select(['webhook_deliveries.id', 'webhook_deliveries.webhook_id'])
    .where('webhook_deliveries.status', '=', 'pending')
    .where('webhook_deliveries.next_attempt_at', '<=', nowIso)
    .where((eb) => eb.or([eb('webhook_deliveries.claimed_until', 'is', null), eb('webhook_deliveries.claimed_until', '<', nowIso)]))
    .where('webhooks.enabled', '=', 1);
  if (excluded.length > 0) query = query.where('webhook_deliveries.webhook_id', 'not in', excluded);
  const rows = await query.orderBy('webhook_deliveries.next_attempt_at').limit(count).execute();
  return rows.map((row) => ({ id: row.id, webhookId: row.webhook_id }));
}

/**
 * Claims these deliveries until `leaseUntil`, those still due and unclaimed. The claim is one
 * conditional UPDATE: when processes race for a row, the loser's condition no longer holds, so
 * each attempt is made by one process (a crashed claimer's lease simply runs out).
 */
export async function claimDeliveries(db: Executor, ids: readonly string[], nowIso: string, leaseUntil: string): Promise<ClaimedDelivery[]> {
  if (ids.length === 0) return [];
  const claimed = await db
    .updateTable('webhook_deliveries')
    .set({ claimed_until: leaseUntil })
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', nowIso)]))
    .returning(DELIVERY_COLUMNS)
    .execute();
  if (claimed.length === 0) return [];
  const hooks = await db
    .selectFrom('webhooks')
    .select(['id', 'url', 'secret', 'authorized_by_kind', 'authorized_by_id'])
    .where('id', 'in', [...new Set(claimed.map((row) => row.webhook_id))])
    .execute();
  const byId = new Map(hooks.map((hook) => [hook.id, hook]));
  return claimed.flatMap((row) => {
    const hook = byId.get(row.webhook_id);
    return hook
      ? [
          {
            ...toDelivery(row),
            url: hook.url,
            sealedSecret: hook.secret,
            authorizedBy: { kind: hook.authorized_by_kind as Authorizer['kind'], id: hook.authorized_by_id },
          },
        ]
      : [];
  });
}

/** Records an attempt; a completed delivery leaves the webhook's pending count. */
export async function recordAttempt(
  db: Executor,
  delivery: { id: string; webhookId: string },
  update: { status: DeliveryRow['status']; attempts: Attempt[]; nextAttemptAt: string | null; completedAt: string | null },
): Promise<void> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({
      status: update.status,
      attempts: JSON.stringify(update.attempts),
      next_attempt_at: update.nextAttemptAt,
      completed_at: update.completedAt,
      claimed_until: null,
    })
    .where('id', '=', delivery.id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  if (update.status !== 'pending' && Number(result.numUpdatedRows) > 0) {
    await db
      .updateTable('webhooks')
      .set((eb) => ({ pending_count: sql<number>`case when ${eb.ref('pending_count')} > 0 then ${eb.ref('pending_count')} - 1 else 0 end` }))
      .where('id', '=', delivery.webhookId)
      .execute();
  }
}

/** Puts a completed delivery back in the queue (manual retry). */
export async function requeueDelivery(db: Executor, delivery: { id: string; webhookId: string }, nowIso: string): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', next_attempt_at: nowIso, completed_at: null, claimed_until: null, attempts: '[]' })
    .where('id', '=', delivery.id)
    .where('status', '!=', 'pending')
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  await db
    .updateTable('webhooks')
    .set((eb) => ({ pending_count: eb('pending_count', '+', 1) }))
    .where('id', '=', delivery.webhookId)
    .execute();
  return true;
}

/** Keeps the newest `keep` completed deliveries of each webhook. */
export async function pruneCompletedDeliveries(db: Executor, keep: number): Promise<number> {
  const crowded = await db
    .selectFrom('webhook_deliveries')
    .select(['webhook_id', (eb) => eb.fn.countAll<number>().as('count')])
    .where('status', '!=', 'pending')
    .groupBy('webhook_id')
    .having((eb) => eb.fn.countAll(), '>', keep)
    .execute();
  let deleted = 0;
  for (const { webhook_id: webhookId } of crowded) {
    const newest = db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('webhook_id', '=', webhookId)
      .where('status', '!=', 'pending')
      .orderBy('completed_at', 'desc')
      .orderBy('id', 'desc')
      .limit(keep);
    const result = await db
      .deleteFrom('webhook_deliveries')
      .where('webhook_id', '=', webhookId)
      .where('status', '!=', 'pending')
      .where('id', 'not in', newest)
      .executeTakeFirst();
    deleted += Number(result.numDeletedRows);
  }
  return deleted;
}

/** Deliveries waiting to be made (the outbox's depth), from each webhook's pending count. */
export async function pendingDeliveries(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('pending_count'), eb.lit(0)).as('pending'))
    .executeTakeFirstOrThrow();
  return Number(row.pending);
}
