import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import { DomainError, conflict, insufficientScope, notFound } from '../../domain-errors.js';
import { newId } from '../../platform/ids.js';
import type { SecretBox } from '../../platform/secret-box.js';
import type { AuditService } from '../audit/service.js';
import { eventJson, type Event } from '../events/event.js';
import { matches, validateEvents } from './event-filter.js';
import type { UsageService } from '../usage/service.js';
import type { WebhookSender } from './sender.js';
import { authorizerOf, type Authorizer, type Credential, type CutOffReason } from '../../platform/credential.js';
import { newWebhookSecret } from './signing.js';
import type { EventReads } from '../events/read-side.js';
import { WebhookAttempts, type AttemptOptions } from './attempts.js';
import { QUEUE_CAP, HISTORY_KEPT, WebhookResends } from './resends.js';
import { checkWebhookUrl } from './url-policy.js';
import { cutOffEach, type StandingAuthority, type StandingObjects } from '../../standing-authority.js';
import {
  activeAuthorizers,
  countWebhooks,
  cutOffWebhook,
  deleteWebhook,
  findWebhook,
  insertWebhook,
  listWebhooks,
  queueingWebhooks,
  recordDrop,
  setWebhookSecret,
  updateWebhook,
  webhooksAuthorizedBy,
  type WebhookRow,
} from './store.js';
import { pendingDeliveries, pruneCompletedDeliveries, queueDeliveries, type DeliveryRow } from './delivery-store.js';
import type { CreateWebhook, Webhook, WebhookChanges, WebhookWithSecret } from './schemas.js';
import { changesWhatItDoes, toWebhook } from './views.js';
import { inTransaction, type OutcomeRecord } from '../../storage/transaction.js';

export const MAX_WEBHOOKS_PER_ACCOUNT = 20;

interface QueuedDeliveries {
  rows: DeliveryRow[];
  /** By webhook: how many were queued, and whether they end a gap. */
  added: Map<string, { count: number; clearGap: boolean }>;
}

export class WebhooksService implements StandingObjects {
  /** Set when the outbox gained deliveries, so a commit wakes the dispatcher only when there is work. */
  private queuedSinceCheck = false;
  /** Claiming and making attempts (the dispatcher's side). */
  readonly attempts: WebhookAttempts;
  /** The history, retries, tests, replays and recovers. */
  readonly resends: WebhookResends;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    /** Re-checks authorizers before a delivery is sent (src/standing-authority.ts). */
    authority: Pick<StandingAuthority, 'ended'>,
    usage: UsageService,
    private readonly secrets: SecretBox,
    sender: WebhookSender,
    events: Pick<EventReads, 'checkCursor' | 'readJson'>,
    private readonly options: AttemptOptions & { allowPrivateTargets: boolean },
  ) {
    this.attempts = new WebhookAttempts(db, clock, audit, authority, usage, secrets, sender, options);
    this.resends = new WebhookResends(db, clock, events);
  }

  /** The URL rules of url-policy.ts, with this deployment's allowance for private targets. */
  checkUrl(raw: string): Promise<string> {
    return checkWebhookUrl(raw, this.options.allowPrivateTargets);
  }

  async create(caller: Credential, input: CreateWebhook, outcome?: OutcomeRecord): Promise<WebhookWithSecret> {
    validateEvents(input.events);
    const url = await this.checkUrl(input.url);
    const secret = newWebhookSecret();
    const now = this.clock.now().toISOString();
    const row: WebhookRow = {
      id: newId('wh'),
      accountId: caller.accountId,
      name: input.name.trim(),
      url,
      events: [...new Set(input.events)],
      enabled: input.enabled ?? true,
      disabledReason: null,
      sealedSecret: this.secrets.seal(secret),
      authorizedBy: authorizerOf(caller),
      pendingCount: 0,
      gap: null,
      failingSince: null,
      failedDeliveries: 0,
      heldUntil: null,
      createdAt: now,
      updatedAt: now,
    };
    return inTransaction(
      this.db,
      async (trx) => {
        if ((await countWebhooks(trx, caller.accountId)) >= MAX_WEBHOOKS_PER_ACCOUNT) {
          throw conflict(`An account may have at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks`);
        }
        await insertWebhook(trx, row);
        await this.audit.recordFor(
          trx,
          caller,
          'webhook.created',
          { type: 'webhook', id: row.id },
          { name: row.name, url, events: row.events, enabled: row.enabled },
        );
        return { ...toWebhook(row, now), secret };
      },
      outcome,
    );
  }

  async list(accountId: string): Promise<Webhook[]> {
    const now = this.clock.now().toISOString();
    return (await listWebhooks(this.db, accountId)).map((row) => toWebhook(row, now));
  }

  async get(accountId: string, id: string): Promise<Webhook> {
    return toWebhook(await this.require(this.db, accountId, id), this.clock.now().toISOString());
  }

  private async require(exec: Executor, accountId: string, id: string): Promise<WebhookRow> {
    const row = await findWebhook(exec, accountId, id);
    if (!row) throw notFound('Webhook');
    return row;
  }

  /** Pausing needs only webhooks:manage; every other change (an edit) and enabling also events:read. */
  async update(caller: Credential, id: string, input: WebhookChanges, outcome?: OutcomeRecord): Promise<Webhook> {
    if (input.name === undefined && input.url === undefined && input.events === undefined && input.enabled === undefined) {
      throw new DomainError('invalid_request', 'Send at least one of name, url, events, enabled');
    }
    if (input.events !== undefined) validateEvents(input.events);
    const needsRead = (webhook: WebhookRow) =>
      input.name !== undefined || input.url !== undefined || input.events !== undefined || (input.enabled === true && !webhook.enabled);
    const checkScope = (webhook: WebhookRow) => {
      if (needsRead(webhook) && !caller.scopes.includes('events:read')) throw insufficientScope(['webhooks:manage', 'events:read']);
    };
    // Checked before the address is resolved (a 404 or 403 needs no DNS), and again on the row
    // read in the transaction that writes it.
    checkScope(await this.require(this.db, caller.accountId, id));
    const url = input.url !== undefined ? await this.checkUrl(input.url) : undefined;
    return inTransaction(
      this.db,
      async (trx) => {
        const current = await this.require(trx, caller.accountId, id);
        checkScope(current);
        const enabling = input.enabled === true && !current.enabled;
        const updated: WebhookRow = {
          ...current,
          name: input.name?.trim() ?? current.name,
          url: url ?? current.url,
          events: input.events !== undefined ? [...new Set(input.events)] : current.events,
          enabled: input.enabled ?? current.enabled,
          // Enabling lifts a cut-off. Whoever changes what the webhook does (where it delivers, what,
          // whether) becomes the credential it depends on (docs/decisions.md, "Standing authority").
          disabledReason: enabling ? null : current.disabledReason,
          // Enabled again, a webhook the service disabled for failing starts a new count.
          failingSince: enabling ? null : current.failingSince,
          failedDeliveries: enabling ? 0 : current.failedDeliveries,
          authorizedBy: changesWhatItDoes(input) ? authorizerOf(caller) : current.authorizedBy,
          updatedAt: this.clock.now().toISOString(),
        };
        await updateWebhook(trx, updated);
        const changed = (['name', 'url', 'events', 'enabled'] as const).filter((field) => input[field] !== undefined);
        await this.audit.recordFor(trx, caller, 'webhook.updated', { type: 'webhook', id }, { changed, enabled: updated.enabled });
        return toWebhook(updated, updated.updatedAt);
      },
      outcome,
    );
  }

  async delete(caller: Credential, id: string, outcome?: OutcomeRecord): Promise<void> {
    await inTransaction(
      this.db,
      async (trx) => {
        await this.require(trx, caller.accountId, id);
        await deleteWebhook(trx, id);
        await this.audit.recordFor(trx, caller, 'webhook.deleted', { type: 'webhook', id });
      },
      outcome,
    );
  }

  async rotateSecret(caller: Credential, id: string, outcome?: OutcomeRecord): Promise<WebhookWithSecret> {
    const secret = newWebhookSecret();
    return inTransaction(
      this.db,
      async (trx) => {
        const current = await this.require(trx, caller.accountId, id);
        const next = { ...current, sealedSecret: this.secrets.seal(secret), updatedAt: this.clock.now().toISOString() };
        await setWebhookSecret(trx, id, next.sealedSecret, next.updatedAt);
        await this.audit.recordFor(trx, caller, 'webhook.secret_rotated', { type: 'webhook', id });
        return { ...toWebhook(next, next.updatedAt), secret };
      },
      outcome,
    );
  }

  /**
   * The outbox: inside the event's own transaction, a delivery is stored for every webhook whose
   * filter matches, up to the queue cap; past it the event is dropped and the gap recorded.
   */
  async enqueue(exec: Executor, accountId: string, events: readonly Event[]): Promise<void> {
    const hooks = await queueingWebhooks(exec, accountId);
    if (hooks.length === 0) return;
    const now = this.clock.now().toISOString();
    const nextAttemptAt = new Date(Date.parse(now) + this.options.retrySchedule[0]! * 1000).toISOString();
    // Written together (one insert, an update per distinct count): a drop writes what came before it first.
    const queued: QueuedDeliveries = { rows: [], added: new Map() };
    for (const hook of hooks) {
      for (const event of events) {
        if (!matches(hook.events, event.type)) continue;
        if (hook.pendingCount >= QUEUE_CAP) {
          await this.flush(exec, queued);
          await this.dropForFullQueue(exec, hook, event);
          continue;
        }
        const gap = hook.gap;
        if (gap) {
          const data = { webhookId: hook.id, fromEventId: gap.from, toEventId: gap.to, dropped: gap.dropped };
          const target = { type: 'webhook', id: hook.id };
          await this.audit.record(exec, { accountId, type: 'webhook.queue_resumed', actor: { kind: 'system' }, target, data: { webhookId: hook.id } });
          await this.audit.record(exec, { accountId, type: 'webhook.event_gap', actor: { kind: 'system' }, target, data });
        }
        queued.rows.push({
          id: newId('dlv'),
          webhookId: hook.id,
          accountId,
          eventId: event.id,
          eventType: event.type,
          payload: eventJson(event),
          gap: gap ? `${gap.from}-${gap.to}` : null,
          status: 'pending',
          attempts: [],
          nextAttemptAt,
          origin: 'event',
          createdAt: now,
          completedAt: null,
        });
        const added = queued.added.get(hook.id) ?? { count: 0, clearGap: false };
        queued.added.set(hook.id, { count: added.count + 1, clearGap: added.clearGap || gap !== null });
        hook.pendingCount++;
        hook.gap = null;
      }
    }
    await this.flush(exec, queued);
  }

  private async flush(exec: Executor, queued: QueuedDeliveries): Promise<void> {
    if (queued.rows.length === 0) return;
    await queueDeliveries(exec, queued.rows, queued.added);
    queued.rows = [];
    queued.added = new Map();
    this.queuedSinceCheck = true;
  }

  private async dropForFullQueue(exec: Executor, hook: WebhookRow, event: Event): Promise<void> {
    const first = hook.gap === null;
    await recordDrop(exec, hook.id, event.id, first);
    if (first) {
      await this.audit.record(exec, {
        accountId: hook.accountId,
        type: 'webhook.queue_full',
        actor: { kind: 'system' },
        target: { type: 'webhook', id: hook.id },
        data: { webhookId: hook.id, pending: hook.pendingCount, firstDroppedEventId: event.id },
      });
      hook.gap = { from: event.id, to: event.id, dropped: 1 };
    } else if (hook.gap) {
      hook.gap = { ...hook.gap, to: event.id, dropped: hook.gap.dropped + 1 };
    }
  }

  /** Whether deliveries were queued since the last call. */
  takeQueuedFlag(): boolean {
    const queued = this.queuedSinceCheck;
    this.queuedSinceCheck = false;
    return queued;
  }

  /** Disables webhooks whose authorizing credential ended, clearing their queues. */
  async cutOffAuthorizedBy(exec: Executor, credentialIds: readonly string[], reason: CutOffReason): Promise<number> {
    const now = this.clock.now().toISOString();
    const stopped = await cutOffEach(exec, this.audit, await webhooksAuthorizedBy(exec, credentialIds), {
      type: 'webhook.disabled',
      target: 'webhook',
      cutOff: (hook) => cutOffWebhook(exec, hook.id, reason, now),
      data: (hook) => ({ reason, credential: hook.authorizedBy }),
    });
    return stopped.length;
  }

  /** The credentials that enabled webhooks depend on, for the sweep of expiries. */
  activeAuthorizers(exec: Executor): Promise<Authorizer[]> {
    return activeAuthorizers(exec);
  }

  /** Deliveries waiting to be made, in every account. */
  queueDepth(): Promise<number> {
    return pendingDeliveries(this.db);
  }

  /** Keeps the latest completed deliveries of each webhook. */
  async housekeeping(): Promise<void> {
    await pruneCompletedDeliveries(this.db, HISTORY_KEPT);
  }
}
