// The webhook outbox's deliveries: queued in the event's transaction, claimed by the dispatcher in
// turn, their attempts recorded, retried on request and pruned to the newest completed ones.
import { sql, type Selectable } from 'kysely';
import type { Authorizer } from '../../platform/credential.js';
import type { Executor, WebhookDeliveriesTable } from '../../storage/schema.js';
import type { Attempt, Delivery, DeliveryQuery } from './schemas.js';

/** What queued a delivery: an event's write, POST …/test, or a replay or recover. */
export type DeliveryOrigin = 'event' | 'test' | 'replay';

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
  origin: DeliveryOrigin;
  createdAt: string;
  completedAt: string | null;
}

/** A delivery claimed for an attempt, with what sending it needs of its webhook. */
export type ClaimedDelivery = DeliveryRow & { url: string; sealedSecret: string; authorizedBy: Authorizer };

/** A delivery as its history lists it: without the body it sends (up to 64 KiB). */
export type ListedDelivery = Omit<DeliveryRow, 'payload'>;

const LISTED_COLUMNS = [
  'id',
  'webhook_id',
  'account_id',
  'event_id',
  'event_type',
  'gap',
  'status',
  'attempts',
  'next_attempt_at',
  'origin',
  'created_at',
  'completed_at',
] as const;
const DELIVERY_COLUMNS = [...LISTED_COLUMNS, 'payload'] as const;

function toDelivery(row: Pick<Selectable<WebhookDeliveriesTable>, (typeof DELIVERY_COLUMNS)[number]>): DeliveryRow {
  return { ...toListed(row), payload: row.payload };
}

function toListed(row: Pick<Selectable<WebhookDeliveriesTable>, (typeof LISTED_COLUMNS)[number]>): ListedDelivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    accountId: row.account_id,
    eventId: Number(row.event_id),
    eventType: row.event_type,
    gap: row.gap,
    status: row.status as DeliveryRow['status'],
    // Attempts recorded before migration 0016 have no headers or body.
    attempts: (JSON.parse(row.attempts) as Array<Partial<Attempt>>).map((attempt) => ({ requestHeaders: {}, responseBody: null, ...attempt }) as Attempt),
    nextAttemptAt: row.next_attempt_at,
    origin: row.origin as DeliveryOrigin,
    createdAt: row.created_at,
    completedAt: row.completed_at,
  };
}

function deliveryValues(delivery: DeliveryRow) {
  return {
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
    origin: delivery.origin,
    created_at: delivery.createdAt,
    completed_at: null,
  };
}

/**
 * The outbox's deliveries of a write, 200 rows a statement, and each webhook's pending count (one
 * update for the webhooks that gained as many; a delivery after a gap clears it).
 */
export async function queueDeliveries(
  db: Executor,
  deliveries: readonly DeliveryRow[],
  added: ReadonlyMap<string, { count: number; clearGap: boolean }>,
): Promise<void> {
  for (let start = 0; start < deliveries.length; start += 200) {
    await db
      .insertInto('webhook_deliveries')
      .values(deliveries.slice(start, start + 200).map(deliveryValues))
      .execute();
  }
  const byChange = new Map<string, { count: number; clearGap: boolean; webhookIds: string[] }>();
  for (const [webhookId, change] of added) {
    const key = `${change.count} ${change.clearGap}`;
    const group = byChange.get(key) ?? { ...change, webhookIds: [] };
    group.webhookIds.push(webhookId);
    byChange.set(key, group);
  }
  for (const { count, clearGap, webhookIds } of byChange.values()) {
    await db
      .updateTable('webhooks')
      .set((eb) => ({ pending_count: eb('pending_count', '+', count), ...(clearGap ? { gap_from: null, gap_to: null, gap_dropped: 0 } : {}) }))
      .where('id', 'in', webhookIds)
      .execute();
  }
}

export async function findDelivery(db: Executor, webhookId: string, id: string): Promise<ListedDelivery | undefined> {
  const row = await db.selectFrom('webhook_deliveries').select(LISTED_COLUMNS).where('id', '=', id).where('webhook_id', '=', webhookId).executeTakeFirst();
  return row && toListed(row);
}

/**
 * A page of the webhook's deliveries, newest first (by when queued, then event and id), of one
 * status when asked, after the delivery `before` when given; undefined when `before` is not one of
 * its deliveries.
 */
export async function listDeliveries(
  db: Executor,
  webhookId: string,
  query: DeliveryQuery & { limit: number; completedKept: number },
): Promise<ListedDelivery[] | undefined> {
  // Completed deliveries past the newest `completedKept` are gone, whenever housekeeping deletes them.
  const kept = newestCompleted(db, webhookId, query.completedKept);
  let select = db
    .selectFrom('webhook_deliveries')
    .select(LISTED_COLUMNS)
    .where('webhook_id', '=', webhookId)
    .where((eb) => eb.or([eb('status', '=', 'pending'), eb('id', 'in', kept)]));
  if (query.status !== undefined) select = select.where('status', '=', query.status);
  if (query.eventId !== undefined) select = select.where('event_id', '=', query.eventId);
  if (query.before !== undefined) {
    const edge = await db
      .selectFrom('webhook_deliveries')
      .select(['created_at', 'event_id', 'id'])
      .where('id', '=', query.before)
      .where('webhook_id', '=', webhookId)
      .executeTakeFirst();
    if (!edge) return undefined;
    const { created_at: createdAt, event_id: eventId, id } = edge;
    select = select.where((eb) =>
      eb.or([
        eb('created_at', '<', createdAt),
        eb.and([eb('created_at', '=', createdAt), eb('event_id', '<', eventId)]),
        eb.and([eb('created_at', '=', createdAt), eb('event_id', '=', eventId), eb('id', '<', id)]),
      ]),
    );
  }
  const rows = await select.orderBy('created_at', 'desc').orderBy('event_id', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
  return rows.map(toListed);
}

/** The webhook's deliveries that ended failed at or after `sinceIso`, oldest first, at most `limit`. */
export async function failedDeliveriesSince(db: Executor, webhookId: string, sinceIso: string, limit: number): Promise<DeliveryRow[]> {
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(DELIVERY_COLUMNS)
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'failed')
    .where('completed_at', '>=', sinceIso)
    .orderBy('completed_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map(toDelivery);
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
    // A test is sent even while its webhook is disabled.
    .where((eb) => eb.or([eb('webhooks.enabled', '=', 1), eb('webhook_deliveries.origin', '=', 'test')]));
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

/** Since when a webhook has failed, and how many of its deliveries ended failed since then. */
export interface FailingState {
  failingSince: string | null;
  failedDeliveries: number;
}

/**
 * Records an attempt, and on the webhook: a completed delivery leaves its pending count; a success
 * ends its failing spell, a failure starts one (at the attempt's time) or continues it, and a
 * delivery that ended failed counts. Returns the webhook's failing state after it, or undefined
 * when the delivery was no longer pending (another process recorded it, or it was cut off).
 */
export async function recordAttempt(
  db: Executor,
  delivery: { id: string; webhookId: string },
  update: { status: DeliveryRow['status']; attempts: Attempt[]; nextAttemptAt: string | null; completedAt: string | null; succeeded: boolean; at: string },
): Promise<FailingState | undefined> {
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
  if (Number(result.numUpdatedRows) === 0) return undefined;
  const completed = update.status !== 'pending';
  const row = await db
    .updateTable('webhooks')
    .set((eb) => ({
      ...(completed ? { pending_count: sql<number>`case when ${eb.ref('pending_count')} > 0 then ${eb.ref('pending_count')} - 1 else 0 end` } : {}),
      ...(update.succeeded
        ? { failing_since: null, failed_deliveries: 0 }
        : {
            failing_since: eb.fn.coalesce('failing_since', eb.val(update.at)),
            ...(update.status === 'failed' ? { failed_deliveries: eb('failed_deliveries', '+', 1) } : {}),
          }),
    }))
    .where('id', '=', delivery.webhookId)
    .returning(['failing_since', 'failed_deliveries'])
    .executeTakeFirst();
  return row && { failingSince: row.failing_since, failedDeliveries: Number(row.failed_deliveries) };
}

/** Moves the webhook's pending, unclaimed deliveries due before `untilIso` to it (a receiver's Retry-After). */
export async function deferPending(db: Executor, webhookId: string, untilIso: string, nowIso: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: untilIso })
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<', untilIso)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', nowIso)]))
    .execute();
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

/** The ids of the webhook's newest `keep` completed deliveries, the ones kept (a subquery). */
function newestCompleted(db: Executor, webhookId: string, keep: number) {
  return db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('webhook_id', '=', webhookId)
    .where('status', '!=', 'pending')
    .orderBy('completed_at', 'desc')
    .orderBy('id', 'desc')
    .limit(keep);
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
    const newest = newestCompleted(db, webhookId, keep);
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
