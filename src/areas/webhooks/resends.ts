// Sending again and on request (api-decisions §8, §14): the delivery history a page at a time, a
// retry of one delivery, a test delivery, a replay of a range of the retained event log, and a
// recover of the deliveries that failed since a time. Each queues new deliveries in the outbox
// the dispatcher already drains, up to the queue's cap.
import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import { CUT_OFF_REASONS } from '../../platform/credential.js';
import { DomainError, conflict, invalidField, notFound } from '../../domain-errors.js';
import { newId } from '../../platform/ids.js';
import { inTransaction, type OutcomeRecord } from '../../storage/transaction.js';
import type { EventReads } from '../events/read-side.js';
import { matches } from './event-filter.js';
import { failedDeliveriesSince, findDelivery, listDeliveries, queueDeliveries, requeueDelivery, type DeliveryRow } from './delivery-store.js';
import { findWebhook, lockWebhook, type WebhookRow } from './store.js';
import type { Delivery, DeliveryPage, DeliveryQuery, ReplayRange, ReplayResult } from './schemas.js';
import { toDelivery } from './views.js';

export const QUEUE_CAP = 1000;
export const HISTORY_KEPT = 500;
/** A replay reads the log this many events at a time (up to 64 KiB each). */
const REPLAY_READ = 200;

export class WebhookResends {
  private queuedListener: (() => void) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly events: Pick<EventReads, 'checkCursor' | 'readJson'>,
  ) {}

  /** Told when deliveries were queued here, so the dispatcher looks at once. */
  onQueued(listener: () => void): void {
    this.queuedListener = listener;
  }

  async deliveries(accountId: string, id: string, query: DeliveryQuery): Promise<DeliveryPage> {
    await this.require(this.db, accountId, id);
    const page = await listDeliveries(this.db, id, { ...query, limit: query.limit ?? QUEUE_CAP + HISTORY_KEPT, completedKept: HISTORY_KEPT });
    if (!page) throw invalidField('/before', 'is not a delivery of this webhook');
    return { data: page.map(toDelivery) };
  }

  async retry(accountId: string, id: string, deliveryId: string, outcome?: OutcomeRecord): Promise<Delivery> {
    const delivery = await inTransaction(
      this.db,
      async (trx) => {
        const webhook = await this.lockedForQueueing(trx, accountId, id);
        const delivery = await findDelivery(trx, id, deliveryId);
        if (!delivery) throw notFound('Delivery');
        if (delivery.status !== 'pending' && webhook.pendingCount >= QUEUE_CAP) throw conflict(`The webhook's queue is full (${QUEUE_CAP} pending)`);
        if (!(await requeueDelivery(trx, delivery, this.clock.now().toISOString()))) throw conflict('The delivery is already pending');
        return toDelivery((await findDelivery(trx, id, deliveryId))!);
      },
      outcome,
    );
    this.queuedListener?.();
    return delivery;
  }

  /** A `webhook.test` delivery (event id 0, not in the log), sent even while the webhook is disabled. */
  async test(accountId: string, id: string, outcome?: OutcomeRecord): Promise<{ deliveryId: string }> {
    const result = await inTransaction(
      this.db,
      async (trx) => {
        const webhook = await this.lockedForQueueing(trx, accountId, id);
        if (webhook.pendingCount >= QUEUE_CAP) throw conflict(`The webhook's queue is full (${QUEUE_CAP} pending)`);
        const createdAt = this.clock.now().toISOString();
        const payload = JSON.stringify({ id: 0, type: 'webhook.test', data: { webhookId: id }, createdAt });
        const delivery = this.newDelivery(webhook, { eventId: 0, eventType: 'webhook.test', payload }, 'test', createdAt);
        await queueDeliveries(trx, [delivery], new Map([[id, { count: 1, clearGap: false }]]));
        return { deliveryId: delivery.id };
      },
      outcome,
    );
    this.queuedListener?.();
    return result;
  }

  /**
   * A new delivery of every retained event in (after, until] that the webhook subscribes to, while
   * the queue has room; the rest counted as skipped. 410 when `after` is older than the retained log.
   */
  async replay(accountId: string, id: string, range: ReplayRange, outcome?: OutcomeRecord): Promise<ReplayResult> {
    const webhook = await this.require(this.db, accountId, id);
    if (range.until !== undefined && range.until < range.after) throw invalidField('/until', 'must not be less than after');
    const newest = await this.events.checkCursor(accountId, range.after).catch((error: unknown) => {
      if (!(error instanceof DomainError) || error.code !== 'cursor_expired') throw error;
      throw new DomainError('cursor_expired', `Events after ${range.after} are no longer retained: replay from a later cursor`, error.details);
    });
    const upTo = Math.min(range.until ?? newest, newest);
    // Only as many events as the queue has room for are kept (the others are counted): the log
    // may hold 10,000 events of up to 64 KiB each.
    const keep = Math.max(0, QUEUE_CAP - webhook.pendingCount);
    const kept: Array<{ id: number; type: string; json: Buffer }> = [];
    let matching = 0;
    for (let after = range.after; after < upTo; ) {
      const read = await this.events.readJson(accountId, { after, upTo, limit: REPLAY_READ });
      if (read.length === 0) break;
      for (const event of read) {
        if (!matches(webhook.events, event.type)) continue;
        matching++;
        if (kept.length < keep) kept.push(event);
      }
      after = read.at(-1)!.id;
    }
    const result = await inTransaction(
      this.db,
      async (trx) => {
        const locked = await this.lockedForQueueing(trx, accountId, id);
        const room = Math.max(0, QUEUE_CAP - locked.pendingCount);
        const createdAt = this.clock.now().toISOString();
        const deliveries = kept
          .slice(0, room)
          .map((event) => this.newDelivery(locked, { eventId: event.id, eventType: event.type, payload: event.json.toString() }, 'replay', createdAt));
        await queueDeliveries(trx, deliveries, new Map([[id, { count: deliveries.length, clearGap: false }]]));
        return { queued: deliveries.length, skipped: matching - deliveries.length };
      },
      outcome,
    );
    if (result.queued > 0) this.queuedListener?.();
    return result;
  }

  /** A new delivery of every delivery that ended failed at or after `since`, oldest first, while the queue has room. */
  async recover(accountId: string, id: string, since: string, outcome?: OutcomeRecord): Promise<{ queued: number }> {
    const sinceIso = new Date(since).toISOString();
    const result = await inTransaction(
      this.db,
      async (trx) => {
        const webhook = await this.lockedForQueueing(trx, accountId, id);
        const failed = await failedDeliveriesSince(trx, id, sinceIso, Math.max(0, QUEUE_CAP - webhook.pendingCount));
        const createdAt = this.clock.now().toISOString();
        const deliveries = failed.map((delivery) => this.newDelivery(webhook, delivery, 'replay', createdAt));
        await queueDeliveries(trx, deliveries, new Map([[id, { count: deliveries.length, clearGap: false }]]));
        return { queued: deliveries.length };
      },
      outcome,
    );
    if (result.queued > 0) this.queuedListener?.();
    return result;
  }

  private newDelivery(
    webhook: WebhookRow,
    sent: Pick<DeliveryRow, 'eventId' | 'eventType' | 'payload'>,
    origin: DeliveryRow['origin'],
    createdAt: string,
  ): DeliveryRow {
    return {
      id: newId('dlv'),
      webhookId: webhook.id,
      accountId: webhook.accountId,
      eventId: sent.eventId,
      eventType: sent.eventType,
      payload: sent.payload,
      gap: null,
      status: 'pending',
      attempts: [],
      nextAttemptAt: createdAt,
      origin,
      createdAt,
      completedAt: null,
    };
  }

  /**
   * The webhook, its row locked until the transaction ends (so two requests cannot both fill the
   * last room in its queue); 409 when its credential ended (nothing may be sent on its authority).
   */
  private async lockedForQueueing(exec: Executor, accountId: string, id: string): Promise<WebhookRow> {
    const webhook = await lockWebhook(exec, accountId, id);
    if (!webhook) throw notFound('Webhook');
    if ((CUT_OFF_REASONS as readonly string[]).includes(webhook.disabledReason ?? '')) {
      throw conflict(`The webhook was disabled (${webhook.disabledReason}): enable it again first`);
    }
    return webhook;
  }

  private async require(exec: Executor, accountId: string, id: string): Promise<WebhookRow> {
    const row = await findWebhook(exec, accountId, id);
    if (!row) throw notFound('Webhook');
    return row;
  }
}
