// A webhook's and a delivery's API shapes, from their stored rows.
import type { ListedDelivery } from './delivery-store.js';
import type { Delivery, Webhook, WebhookChanges } from './schemas.js';
import type { WebhookRow } from './store.js';

/** `now` (ISO): a hold that ended by then is not shown. */
export function toWebhook(row: WebhookRow, now: string): Webhook {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    disabledReason: row.disabledReason,
    failingSince: row.failingSince,
    heldUntil: row.heldUntil !== null && row.heldUntil > now ? row.heldUntil : null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export function toDelivery(row: ListedDelivery): Delivery {
  return {
    id: row.id,
    eventId: row.eventId,
    eventType: row.eventType,
    status: row.status,
    test: row.origin === 'test',
    replay: row.origin === 'replay',
    attempts: row.attempts,
    createdAt: row.createdAt,
    completedAt: row.completedAt,
    nextAttemptAt: row.status === 'pending' ? row.nextAttemptAt : null,
  };
}

/** A change of where, what or whether a webhook delivers (a rename or a new secret is not). */
export function changesWhatItDoes(input: WebhookChanges): boolean {
  return input.url !== undefined || input.events !== undefined || input.enabled !== undefined;
}
