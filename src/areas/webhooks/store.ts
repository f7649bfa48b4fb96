import type { Authorizer, CutOffReason } from '../../platform/credential.js';
import { sql, type Selectable } from 'kysely';
import { prepare } from '../../storage/prepared.js';
import type { Executor, WebhookDeliveriesTable, WebhooksTable } from '../../storage/schema.js';
import { nextCreatedSeq } from '../../storage/creation-order.js';
import type { Attempt, Delivery } from './schemas.js';

export interface WebhookRow {
  id: string;
  accountId: string;
  name: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabledReason: CutOffReason | null;
  sealedSecret: string;
  authorizedBy: Authorizer;
  pendingCount: number;
  gap: { from: number; to: number; dropped: number } | null;
  createdAt: string;
  updatedAt: string;
}

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

function toWebhook(row: Selectable<WebhooksTable>): WebhookRow {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    enabled: Number(row.enabled) === 1,
    disabledReason: row.disabled_reason as CutOffReason | null,
    sealedSecret: row.secret,
    authorizedBy: { kind: row.authorized_by_kind as Authorizer['kind'], id: row.authorized_by_id },
    pendingCount: Number(row.pending_count),
    gap: row.gap_from === null ? null : { from: Number(row.gap_from), to: Number(row.gap_to), dropped: Number(row.gap_dropped) },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

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

export async function insertWebhook(db: Executor, row: WebhookRow): Promise<void> {
  await db
    .insertInto('webhooks')
    .values({
      id: row.id,
      account_id: row.accountId,
      name: row.name,
      url: row.url,
      events: JSON.stringify(row.events),
      enabled: row.enabled ? 1 : 0,
      disabled_reason: row.disabledReason,
      secret: row.sealedSecret,
      authorized_by_kind: row.authorizedBy.kind,
      authorized_by_id: row.authorizedBy.id,
      created_at: row.createdAt,
      updated_at: row.updatedAt,
      created_seq: nextCreatedSeq('webhooks', row.accountId),
    })
    .execute();
  await changeWebhookCount(db, row.accountId, 1);
}

/** The account's webhook count (migration 0011), kept in the transaction that creates or deletes one. */
async function changeWebhookCount(db: Executor, accountId: string, delta: number): Promise<void> {
  await db
    .updateTable('accounts')
    .set((eb) => ({ webhook_count: eb('webhook_count', '+', delta) }))
    .where('id', '=', accountId)
    .execute();
}

export async function countWebhooks(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function findWebhook(db: Executor, accountId: string, id: string): Promise<WebhookRow | undefined> {
  const row = await db.selectFrom('webhooks').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return row && toWebhook(row);
}

export async function listWebhooks(db: Executor, accountId: string): Promise<WebhookRow[]> {
  const rows = await db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).orderBy('created_seq').orderBy('id').execute();
  return rows.map(toWebhook);
}

const queueingWebhookRows = prepare((db, p: { accountId: string }) =>
  db.selectFrom('webhooks').selectAll().where('account_id', '=', p.accountId).where('disabled_reason', 'is', null),
);

/** The account's webhooks that take new events: enabled, or paused by their owner (not cut off). */
export async function queueingWebhooks(db: Executor, accountId: string): Promise<WebhookRow[]> {
  const rows = await queueingWebhookRows.rows(db, { accountId });
  return rows.map(toWebhook);
}

/** Writes a webhook's settings (not its secret: rotation alone changes that, see setWebhookSecret). */
export async function updateWebhook(db: Executor, row: WebhookRow): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({
      name: row.name,
      url: row.url,
      events: JSON.stringify(row.events),
      enabled: row.enabled ? 1 : 0,
      disabled_reason: row.disabledReason,
      authorized_by_kind: row.authorizedBy.kind,
      authorized_by_id: row.authorizedBy.id,
      updated_at: row.updatedAt,
    })
    .where('id', '=', row.id)
    .execute();
}

export async function setWebhookSecret(db: Executor, id: string, sealedSecret: string, nowIso: string): Promise<void> {
  await db.updateTable('webhooks').set({ secret: sealedSecret, updated_at: nowIso }).where('id', '=', id).execute();
}

export async function deleteWebhook(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
  const deleted = await db.deleteFrom('webhooks').where('id', '=', id).returning('account_id').executeTakeFirst();
  if (deleted) await changeWebhookCount(db, deleted.account_id, -1);
}

export async function webhooksAuthorizedBy(db: Executor, credentialIds: readonly string[]): Promise<WebhookRow[]> {
  if (credentialIds.length === 0) return [];
  const rows = await db.selectFrom('webhooks').selectAll().where('authorized_by_id', 'in', credentialIds).where('disabled_reason', 'is', null).execute();
  return rows.map(toWebhook);
}

/**
 * Disables a webhook for a reason and clears its queue; false when another transaction cut it off
 * first (its update waits for that one's row lock, then finds the reason set), so each cut-off is
 * audited once even when several processes find the same ended credential.
 */
export async function cutOffWebhook(db: Executor, id: string, reason: string, nowIso: string): Promise<boolean> {
  const result = await db
    .updateTable('webhooks')
    .set({ enabled: 0, disabled_reason: reason, pending_count: 0, gap_from: null, gap_to: null, gap_dropped: 0, updated_at: nowIso })
    .where('id', '=', id)
    .where('disabled_reason', 'is', null)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).where('status', '=', 'pending').execute();
  return true;
}

export async function recordDrop(db: Executor, id: string, eventId: number, first: boolean): Promise<void> {
  await db
    .updateTable('webhooks')
    .set((eb) => ({
      gap_from: first ? eventId : eb.ref('gap_from'),
      gap_to: eventId,
      gap_dropped: first ? 1 : eb('gap_dropped', '+', 1),
    }))
    .where('id', '=', id)
    .execute();
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

/** The credentials that authorize webhooks not yet cut off. */
export async function activeAuthorizers(db: Executor): Promise<Authorizer[]> {
  const rows = await db.selectFrom('webhooks').select(['authorized_by_kind', 'authorized_by_id']).distinct().where('disabled_reason', 'is', null).execute();
  return rows.map((row) => ({ kind: row.authorized_by_kind as Authorizer['kind'], id: row.authorized_by_id }));
}

/** Every webhook's stored (sealed) signing secret, for a check of the key or a change of it. */
export async function storedSecrets(db: Executor): Promise<Array<{ id: string; secret: string }>> {
  return db.selectFrom('webhooks').select(['id', 'secret']).orderBy('id').execute();
}

/** Replaces a stored secret by the same secret sealed again, unless it changed meanwhile; updated_at stays. */
export async function resealSecret(db: Executor, id: string, from: string, to: string): Promise<void> {
  await db.updateTable('webhooks').set({ secret: to }).where('id', '=', id).where('secret', '=', from).execute();
}

/** Deliveries waiting to be made (the outbox's depth), from each webhook's pending count. */
export async function pendingDeliveries(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('pending_count'), eb.lit(0)).as('pending'))
    .executeTakeFirstOrThrow();
  return Number(row.pending);
}
