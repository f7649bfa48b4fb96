import type { Authorizer } from '../../platform/credential.js';
import { RECEIVER_DISABLED_REASONS, type WebhookDisabledReason } from './schemas.js';
import type { ExpressionBuilder, Selectable } from 'kysely';
import { prepare } from '../../storage/prepared.js';
import type { Database, Executor, WebhooksTable } from '../../storage/schema.js';
import { nextCreatedSeq } from '../../storage/creation-order.js';

export interface WebhookRow {
  id: string;
  accountId: string;
  name: string;
  url: string;
  events: string[];
  enabled: boolean;
  disabledReason: WebhookDisabledReason | null;
  sealedSecret: string;
  authorizedBy: Authorizer;
  pendingCount: number;
  gap: { from: number; to: number; dropped: number } | null;
  /** The first failed attempt since the last success, and the deliveries that ended failed since. */
  failingSince: string | null;
  failedDeliveries: number;
  /** Before this time its receiver asked for no requests. */
  heldUntil: string | null;
  createdAt: string;
  updatedAt: string;
}

function toWebhook(row: Selectable<WebhooksTable>): WebhookRow {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    enabled: Number(row.enabled) === 1,
    disabledReason: row.disabled_reason as WebhookDisabledReason | null,
    sealedSecret: row.secret,
    authorizedBy: { kind: row.authorized_by_kind as Authorizer['kind'], id: row.authorized_by_id },
    pendingCount: Number(row.pending_count),
    gap: row.gap_from === null ? null : { from: Number(row.gap_from), to: Number(row.gap_to), dropped: Number(row.gap_dropped) },
    failingSince: row.failing_since,
    failedDeliveries: Number(row.failed_deliveries),
    heldUntil: row.held_until,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Not cut off for its credential: enabled, paused by its owner, or disabled for its receiver's
 * answers, which still queues (api-decisions §8: a disabled webhook's events queue) and still
 * depends on its credential.
 */
function notCutOff(eb: ExpressionBuilder<Database, 'webhooks'>) {
  return eb.or([eb('disabled_reason', 'is', null), eb('disabled_reason', 'in', RECEIVER_DISABLED_REASONS)]);
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

/** The webhook, its row locked for the rest of the transaction on PostgreSQL (SQLite's one writer holds it already). */
export async function lockWebhook(db: Executor, accountId: string, id: string): Promise<WebhookRow | undefined> {
  // An update that changes nothing takes the row's lock on PostgreSQL and returns the row on both.
  const row = await db
    .updateTable('webhooks')
    .set((eb) => ({ pending_count: eb.ref('pending_count') }))
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirst();
  return row && toWebhook(row);
}

export async function listWebhooks(db: Executor, accountId: string): Promise<WebhookRow[]> {
  const rows = await db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).orderBy('created_seq').orderBy('id').execute();
  return rows.map(toWebhook);
}

const queueingWebhookRows = prepare((db, p: { accountId: string }) =>
  db.selectFrom('webhooks').selectAll().where('account_id', '=', p.accountId).where(notCutOff),
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
      failing_since: row.failingSince,
      failed_deliveries: row.failedDeliveries,
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
  const rows = await db.selectFrom('webhooks').selectAll().where('authorized_by_id', 'in', credentialIds).where(notCutOff).execute();
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
    .where(notCutOff)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).where('status', '=', 'pending').execute();
  return true;
}

/**
 * Disables a webhook on its receiver's account (410 Gone, or failing too long), its queue kept for
 * when it is enabled again; false when it was disabled for a reason already.
 */
export async function disableWebhook(db: Executor, id: string, reason: WebhookDisabledReason, nowIso: string): Promise<boolean> {
  const result = await db
    .updateTable('webhooks')
    .set({ enabled: 0, disabled_reason: reason, updated_at: nowIso })
    .where('id', '=', id)
    .where('disabled_reason', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Holds the webhook's deliveries back until `untilIso` (or later, when held longer already).
 * Returns whether a hold starts (none was in force at `nowIso`), which is audited.
 */
export async function holdWebhook(db: Executor, id: string, untilIso: string, nowIso: string): Promise<boolean> {
  const before = await db.selectFrom('webhooks').select('held_until').where('id', '=', id).executeTakeFirst();
  const heldUntil = before?.held_until ?? null;
  if (heldUntil === null || heldUntil < untilIso) await db.updateTable('webhooks').set({ held_until: untilIso }).where('id', '=', id).execute();
  return heldUntil === null || heldUntil <= nowIso;
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

/** The credentials that authorize webhooks not yet cut off. */
export async function activeAuthorizers(db: Executor): Promise<Authorizer[]> {
  const rows = await db.selectFrom('webhooks').select(['authorized_by_kind', 'authorized_by_id']).distinct().where(notCutOff).execute();
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
