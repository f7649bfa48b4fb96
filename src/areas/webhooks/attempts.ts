// The delivery side of webhooks: claiming due deliveries in turn, one attempt at a time, and what a
// receiver's answer tells (api-decisions §14): 410 Gone disables the webhook, 429 or 503 with
// Retry-After holds its deliveries back (at most an hour), and a webhook none of whose deliveries
// succeeded for WEBHOOK_DISABLE_AFTER_HOURS (with at least MIN_FAILED_TO_DISABLE failed) is disabled.
import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import type { SecretBox } from '../../platform/secret-box.js';
import type { AuditService } from '../audit/service.js';
import type { UsageService } from '../usage/service.js';
import type { StandingAuthority } from '../../standing-authority.js';
import { inTransaction } from '../../storage/transaction.js';
import type { WebhookSender } from './sender.js';
import { IN_FLIGHT_PER_WEBHOOK, takeInTurn } from './fair-claim.js';
import { deliveryHeaders } from './signing.js';
import { claimDeliveries, deferPending, dueDeliveries, recordAttempt, type ClaimedDelivery, type FailingState } from './delivery-store.js';
import { disableWebhook, holdWebhook } from './store.js';
import type { Attempt, WebhookDisabledReason } from './schemas.js';

export const MAX_ATTEMPTS = 5;
/** The longest a receiver's Retry-After holds its deliveries back. */
export const MAX_RETRY_AFTER_SECONDS = 3600;
/** A failing webhook is disabled only once this many of its deliveries ended failed. */
export const MIN_FAILED_TO_DISABLE = 5;
/** How often, at most, the claim looks past webhooks at their share for others' due deliveries. */
const WIDE_LOOK_INTERVAL_MS = 100;

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed';

export interface AttemptOptions {
  retrySchedule: number[];
  leaseMs: number;
  /** WEBHOOK_DISABLE_AFTER_HOURS in ms; 0 never disables. */
  disableAfterMs: number;
}

export class WebhookAttempts {
  private lastWideLook = 0;
  private attemptListener: ((outcome: AttemptOutcome, seconds: number) => void) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    /** Re-checks authorizers before a delivery is sent (src/standing-authority.ts). */
    private readonly authority: Pick<StandingAuthority, 'ended'>,
    private readonly usage: UsageService,
    private readonly secrets: SecretBox,
    private readonly sender: WebhookSender,
    private readonly options: AttemptOptions,
  ) {}

  /**
   * Claims due deliveries, oldest first, each webhook in turn and at most IN_FLIGHT_PER_WEBHOOK
   * of one webhook counting `busy` (attempts under way by webhook id). The oldest due deliveries
   * are one cheap indexed read; when they all belong to webhooks at their share, a wider read
   * skips those webhooks (at most every WIDE_LOOK_INTERVAL_MS: it reads past their backlog), so
   * a receiver that hangs with a backlog never holds up the others. Deliveries whose authorizing
   * credential has meanwhile ended are cut off, not sent.
   */
  async claimDue(limit: number, busy: ReadonlyMap<string, number>): Promise<ClaimedDelivery[]> {
    const now = this.clock.now();
    const nowIso = now.toISOString();
    const taken = new Map(busy);
    const window = limit;
    const oldest = await dueDeliveries(this.db, nowIso, window, []);
    const ids = takeInTurn(oldest, limit, taken);
    const crowdedOut = ids.length < limit && oldest.length === window && oldest.some((row) => (taken.get(row.webhookId) ?? 0) >= IN_FLIGHT_PER_WEBHOOK);
    if (crowdedOut && now.getTime() - this.lastWideLook >= WIDE_LOOK_INTERVAL_MS) {
      this.lastWideLook = now.getTime();
      const full = [...taken].filter(([, count]) => count >= IN_FLIGHT_PER_WEBHOOK).map(([id]) => id);
      const chosen = new Set(ids);
      const others = (await dueDeliveries(this.db, nowIso, window, full)).filter((row) => !chosen.has(row.id));
      ids.push(...takeInTurn(others, limit - ids.length, taken));
    }
    const claimed = await claimDeliveries(this.db, ids, nowIso, new Date(now.getTime() + this.options.leaseMs).toISOString());
    const ended = await this.authority.ended(claimed.map((delivery) => delivery.authorizedBy));
    return ended.size === 0 ? claimed : claimed.filter((delivery) => !ended.has(delivery.authorizedBy.id));
  }

  /** One attempt of a claimed delivery: sign the stored body, send, record the outcome and what the answer tells. */
  async attempt(delivery: ClaimedDelivery): Promise<void> {
    const secret = this.secrets.open(delivery.sealedSecret);
    const timestamp = Math.floor(this.clock.now().getTime() / 1000);
    const headers = deliveryHeaders(secret, timestamp, { ...delivery, replay: delivery.origin === 'replay' });
    const at = this.clock.now().toISOString();
    const result = await this.sender.send(delivery.url, delivery.payload, headers);
    const { retryAfterSeconds, ...answer } = result;
    const attempts: Attempt[] = [...delivery.attempts, { attempt: delivery.attempts.length + 1, at, ...answer, requestHeaders: headers }];
    const succeeded = result.error === null;
    const gone = result.responseStatus === 410;
    const finished = succeeded || gone || attempts.length >= MAX_ATTEMPTS;
    const done = this.clock.now();
    let nextAttempt = finished ? null : done.getTime() + (this.options.retrySchedule[attempts.length] ?? 0) * 1000;
    const heldUntil = retryAfterSeconds === null ? null : done.getTime() + Math.min(retryAfterSeconds, MAX_RETRY_AFTER_SECONDS) * 1000;
    if (nextAttempt !== null && heldUntil !== null) nextAttempt = Math.max(nextAttempt, heldUntil);
    const status = succeeded ? 'succeeded' : finished ? 'failed' : 'pending';
    await inTransaction(this.db, async (trx) => {
      const failing = await recordAttempt(trx, delivery, {
        status,
        attempts,
        nextAttemptAt: nextAttempt === null ? null : new Date(nextAttempt).toISOString(),
        completedAt: finished ? done.toISOString() : null,
        succeeded,
        at,
      });
      if (!failing) return;
      // The receiver asked for no requests before then: its other deliveries wait too.
      if (heldUntil !== null) await this.hold(trx, delivery, new Date(heldUntil).toISOString(), { responseStatus: result.responseStatus, retryAfterSeconds });
      const reason = gone ? 'receiver_gone' : succeeded ? undefined : this.failingTooLong(failing, done.getTime());
      if (reason) await this.disable(trx, delivery, reason, gone ? { deliveryId: delivery.id, responseStatus: 410 } : { ...failing });
    });
    this.usage.count(delivery.accountId, { webhookDeliveries: 1 });
    this.attemptListener?.(succeeded ? 'succeeded' : finished ? 'failed' : 'retrying', result.durationMs / 1000);
  }

  private async hold(exec: Executor, delivery: ClaimedDelivery, untilIso: string, data: Record<string, unknown>): Promise<void> {
    const nowIso = this.clock.now().toISOString();
    await deferPending(exec, delivery.webhookId, untilIso, nowIso);
    if (!(await holdWebhook(exec, delivery.webhookId, untilIso, nowIso))) return;
    await this.audit.record(exec, {
      accountId: delivery.accountId,
      type: 'webhook.deferred',
      actor: { kind: 'system' },
      target: { type: 'webhook', id: delivery.webhookId },
      data: { webhookId: delivery.webhookId, deliveryId: delivery.id, ...data, heldUntil: untilIso },
    });
  }

  private failingTooLong(failing: FailingState, now: number): 'failing' | undefined {
    const { disableAfterMs } = this.options;
    if (disableAfterMs <= 0 || failing.failingSince === null || failing.failedDeliveries < MIN_FAILED_TO_DISABLE) return undefined;
    return now - Date.parse(failing.failingSince) >= disableAfterMs ? 'failing' : undefined;
  }

  private async disable(exec: Executor, delivery: ClaimedDelivery, reason: WebhookDisabledReason, data: Record<string, unknown>): Promise<void> {
    if (!(await disableWebhook(exec, delivery.webhookId, reason, this.clock.now().toISOString()))) return;
    await this.audit.record(exec, {
      accountId: delivery.accountId,
      type: 'webhook.disabled',
      actor: { kind: 'system' },
      target: { type: 'webhook', id: delivery.webhookId },
      data: { reason, ...data },
    });
  }

  /** Told of every attempt made, with its outcome and duration (the operator's metrics). */
  onAttempt(listener: (outcome: AttemptOutcome, seconds: number) => void): void {
    this.attemptListener = listener;
  }
}
