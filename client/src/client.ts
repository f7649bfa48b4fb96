// DevdataClient: a typed method for every operation (generated from the OpenAPI document), paging
// as async iterators, and the live event stream.
import createClient, { type Client } from 'openapi-fetch';
import { type BatchAllOptions, BatchFailure, type BatchResponseOf, type BatchResultOf, batchesOf } from './batch.js';
import { deliveryPages, deliveryQuery, explainExpiredReplay, type WebhookDeliveryQuery, type WebhookReplayRange } from './deliveries.js';
import { DevdataError, explainExpiredCursor } from './errors.js';
import { Operations } from './generated/operations.js';
import { BATCH_MAX_OPERATIONS, HISTORY_MAX_BACKFILL_POINTS } from './generated/values.js';
import type { paths } from './generated/openapi.js';
import {
  HistoryBackfillFailure,
  type HistoryBackfillAllOptions,
  type HistoryBucketQuery,
  type HistoryBucketsOf,
  type HistoryPointInput,
  type HistoryPointsOf,
  type HistoryQuery,
  historyQuery,
  isoTime,
} from './history.js';
import type { CallOptions } from './operation-types.js';
import { EventStream, type EventStreamOptions } from './stream.js';
import { createTransport, type Credential, IDEMPOTENCY_KEY_HEADER, type RetryOptions } from './transport.js';
import type {
  ApiKey,
  App,
  AuditRecord,
  BatchOperation,
  DevdataEvent,
  EventPage,
  HistoryBackfillResult,
  HistoryBuckets,
  HistoryPage,
  HistoryPoint,
  Installation,
  Resource,
  ResourceType,
  Schedule,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookRecover,
  WebhookReplay,
  WebhookTestDelivery,
} from './types.js';

export interface DevdataClientOptions {
  /** The service's base address, e.g. `https://devdata.example.com` (no `/api/v1`). */
  baseUrl: string;
  /** An API key (`ddk_…`) or an OAuth access token (`dda_…`), or a function returning a current one. */
  apiKey?: Credential;
  retry?: RetryOptions;
  /** A fetch to use instead of the global one (tests, proxies, instrumentation). */
  fetch?: typeof fetch;
}

export interface EventQuery {
  /** Start after this event id (default 0: the oldest event retained). */
  after?: number;
  /** An exact event type, or a prefix ending in `.*` such as `custom.*`. */
  type?: string;
  /** Events per request, 1-1000 (default 100). */
  limit?: number;
}

export interface ResourceQuery {
  type?: ResourceType;
  /** Every tag must match. */
  tag?: string[];
  /** Resources per request, 1-500 (default 50). */
  limit?: number;
}

/** `"3"`: an If-Match (or If-None-Match) value for a resource version. */
export function ifMatch(version: number): string {
  return `"${version}"`;
}

function withoutHeader(headers: Record<string, string> | undefined, name: string): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).filter(([header]) => header.toLowerCase() !== name));
}

export class DevdataClient extends Operations {
  /**
   * The openapi-fetch client of the same API, for what the methods do not cover (another media
   * type, raw responses): `await devdata.api.GET('/api/v1/resources/{id}', { params: { path: { id } } })`.
   * Calls through it also throw a DevdataError for any error status.
   */
  readonly api: Client<paths>;
  readonly baseUrl: string;
  private readonly options: DevdataClientOptions;

  constructor(options: DevdataClientOptions) {
    super();
    this.options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      fetch: createTransport({ apiRoot: `${this.baseUrl}/api/v1/`, credential: options.apiKey, retry: options.retry, fetch: options.fetch }),
    });
  }

  protected async call(
    method: string,
    path: string,
    input: object | undefined,
    options: CallOptions | undefined,
    parseAs: 'json' | 'arrayBuffer',
  ): Promise<unknown> {
    const { body, ...params } = (input ?? {}) as { body?: unknown };
    const key = options?.idempotencyKey;
    // The option wins over a header of the same name, whatever its case.
    const headers = key === undefined ? options?.headers : { ...withoutHeader(options?.headers, IDEMPOTENCY_KEY_HEADER), [IDEMPOTENCY_KEY_HEADER]: key };
    const init = { params, body, parseAs, signal: options?.signal, headers };
    const result = await this.api.request(method as 'get', path as '/api/v1', init as never);
    // Errors were thrown by the transport; what is left is data, nothing (204) or not modified (304).
    return (result as { data?: unknown }).data;
  }

  /** Pages of the event log from `after` until the newest event; each page's `cursor` is the next `after`. */
  async *eventPages(query: EventQuery = {}, options?: CallOptions): AsyncGenerator<EventPage> {
    let after = query.after ?? 0;
    for (;;) {
      const page = await this.listEvents({ query: { ...query, after } }, options).catch((error: unknown) => {
        throw explainExpiredCursor(error, after);
      });
      yield page;
      if (!page.hasMore) return;
      after = page.cursor;
    }
  }

  /** Every event after `after` (oldest first), up to the newest one when iteration began. */
  async *iterateEvents(query: EventQuery = {}, options?: CallOptions): AsyncGenerator<DevdataEvent> {
    for await (const page of this.eventPages(query, options)) yield* page.data;
  }

  /** Every resource matching the filters, in creation order, a page at a time. */
  async *iterateResources(query: ResourceQuery = {}, options?: CallOptions): AsyncGenerator<Resource> {
    let offset = 0;
    for (;;) {
      const page = await this.listResources({ query: { ...query, offset } }, options);
      yield* page.data;
      if (!page.hasMore || page.data.length === 0) return;
      offset += page.data.length;
    }
  }

  /** The audit history after `after`, oldest first. */
  async *iterateAuditRecords(query: EventQuery = {}, options?: CallOptions): AsyncGenerator<AuditRecord> {
    let after = query.after ?? 0;
    for (;;) {
      const page = await this.listAuditRecords({ query: { ...query, after } }, options);
      yield* page.data;
      if (!page.hasMore) return;
      after = page.cursor;
    }
  }

  // The other lists come whole in one response; these iterate them like the paged ones.
  async *iterateApiKeys(options?: CallOptions): AsyncGenerator<ApiKey> {
    yield* (await this.listApiKeys(undefined, options)).data;
  }

  async *iterateWebhooks(options?: CallOptions): AsyncGenerator<Webhook> {
    yield* (await this.listWebhooks(undefined, options)).data;
  }

  /**
   * A page of a webhook's deliveries, newest first, each attempt with the headers sent and the start
   * of the answer: `await devdata.webhookDeliveries(id, { status: 'failed', limit: 50 })`. Without
   * `limit`, every delivery kept; a full page may have more: pass its last id as `before`.
   */
  async webhookDeliveries(webhookId: string, query: WebhookDeliveryQuery = {}, options?: CallOptions): Promise<WebhookDeliveryPage> {
    return this.listWebhookDeliveries({ path: { id: webhookId }, query: deliveryQuery(query) }, options);
  }

  /** Pages of a webhook's deliveries (`limit` each, default 100), newest first, down to the oldest kept. */
  webhookDeliveryPages(webhookId: string, query: WebhookDeliveryQuery = {}, options?: CallOptions): AsyncGenerator<WebhookDeliveryPage> {
    return deliveryPages((page, callOptions) => this.webhookDeliveries(webhookId, page, callOptions), query, options);
  }

  /** Every delivery of a webhook kept (of `status`, when given), newest first, a page at a time. */
  async *iterateWebhookDeliveries(webhookId: string, query: WebhookDeliveryQuery = {}, options?: CallOptions): AsyncGenerator<WebhookDelivery> {
    for await (const page of this.webhookDeliveryPages(webhookId, query, options)) yield* page.data;
  }

  /**
   * Sends the webhook a `webhook.test` delivery (event id 0, not an event of the log), even while it
   * is disabled; its outcome is among the deliveries, `test: true`, under the id returned.
   */
  async sendWebhookTest(webhookId: string, options?: CallOptions): Promise<WebhookTestDelivery> {
    return this.testWebhook({ path: { id: webhookId } }, options);
  }

  /**
   * Delivers again, as new deliveries with `X-Service-Replay: true`, every retained event in
   * (after, until] the webhook subscribes to; `skipped` counts those beyond its queue's room. Needs
   * events:read too; a cursor older than the retained log throws a 410 `cursor_expired`.
   */
  async replayWebhookEvents(webhookId: string, range: WebhookReplayRange, options?: CallOptions): Promise<WebhookReplay> {
    const body = { after: range.after, ...(range.until !== undefined && { until: range.until }) };
    return this.replayWebhook({ path: { id: webhookId }, body }, options).catch((error: unknown) => {
      throw explainExpiredReplay(error, range.after);
    });
  }

  /** Sends again, as new deliveries, every delivery of the webhook that ended failed at or after `since`. */
  async recoverWebhookDeliveries(webhookId: string, since: Date | string, options?: CallOptions): Promise<WebhookRecover> {
    return this.recoverWebhook({ path: { id: webhookId }, body: { since: isoTime(since) } }, options);
  }

  async *iterateApps(options?: CallOptions): AsyncGenerator<App> {
    yield* (await this.listApps(undefined, options)).data;
  }

  async *iterateSchedules(options?: CallOptions): AsyncGenerator<Schedule> {
    yield* (await this.listSchedules(undefined, options)).data;
  }

  async *iterateInstallations(options?: CallOptions): AsyncGenerator<Installation> {
    yield* (await this.listInstallations(undefined, options)).data;
  }

  /**
   * Up to BATCH_MAX_OPERATIONS (1,000) writes in one request, all or nothing (`POST /api/v1/batch`):
   * `const { results } = await devdata.batch([{ op: 'create', … }, { op: 'delete', id }])`, each
   * result typed by its operation (`results[0].resource`). A refusal names the failing operation
   * in `error.details[0].index`; nothing was written then.
   */
  async batch<Operations extends readonly BatchOperation[] | []>(operations: Operations, options?: CallOptions): Promise<BatchResponseOf<Operations>> {
    return (await this.call('post', '/api/v1/batch', { body: { operations } }, options, 'json')) as BatchResponseOf<Operations>;
  }

  /**
   * A list of any length written as consecutive batches of `size`, in order, each with its own
   * Idempotency-Key (so each is retried safely), reporting `onProgress` after each. A failing batch
   * throws a BatchFailure that says which batch and operation failed and how many were written.
   */
  async batchAll<Operations extends readonly BatchOperation[]>(
    operations: Operations,
    options: BatchAllOptions = {},
  ): Promise<{ results: Array<BatchResultOf<Operations[number]>>; cursor: number | undefined }> {
    const { size = BATCH_MAX_OPERATIONS, onProgress, ...callOptions } = options;
    if (size > BATCH_MAX_OPERATIONS) throw new RangeError(`a batch holds at most ${BATCH_MAX_OPERATIONS} operations, not ${size}`);
    const batches = batchesOf(operations, size);
    const results: Array<BatchResultOf<Operations[number]>> = [];
    let cursor: number | undefined;
    for (const [index, batch] of batches.entries()) {
      try {
        const response = await this.batch(batch, callOptions);
        results.push(...(response.results as Array<BatchResultOf<Operations[number]>>));
        cursor = response.cursor;
      } catch (error) {
        if (!(error instanceof DevdataError) || error.code === 'aborted') throw error;
        throw new BatchFailure(error, { batch: index, batches: batches.length, done: results.length });
      }
      onProgress?.({ done: results.length, total: operations.length, batch: index + 1, batches: batches.length });
    }
    return { results, cursor };
  }

  /**
   * A page of a resource's points with from ≤ at < to (default: the last 24 hours), oldest first
   * unless `order: 'desc'`: `await devdata.history(id, { from: new Date(Date.now() - 3_600_000) })`.
   * Pass the page's `cursor` for the next one while `hasMore`, or let iterateHistory do it.
   */
  async history(id: string, query: HistoryQuery = {}, options?: CallOptions): Promise<HistoryPage> {
    return (await this.getResourceHistory({ path: { id }, query: historyQuery(query) }, options)) as HistoryPage;
  }

  /** Every point of a resource in the range, a page (of `limit`) at a time. */
  async *iterateHistory(id: string, query: Omit<HistoryQuery, 'cursor'> = {}, options?: CallOptions): AsyncGenerator<HistoryPoint> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.history(id, { ...query, ...(cursor !== undefined && { cursor }) }, options);
      yield* page.data;
      if (!page.hasMore || page.cursor === null) return;
      cursor = page.cursor;
    }
  }

  /** A resource's history as buckets for a chart: `await devdata.historyBuckets(id, { bucket: '5m' })` (the last day, 288 buckets). */
  async historyBuckets(id: string, query: HistoryBucketQuery, options?: CallOptions): Promise<HistoryBuckets> {
    return (await this.getResourceHistory({ path: { id }, query: historyQuery(query) }, options)) as HistoryBuckets;
  }

  /** Several resources' (1-50) first page of points each, in the order named. */
  async historyOf(ids: readonly string[], query: Omit<HistoryQuery, 'cursor'> = {}, options?: CallOptions): Promise<HistoryPointsOf> {
    return (await this.getHistory({ query: { resource: [...ids], ...historyQuery(query) } }, options)) as HistoryPointsOf;
  }

  /** Several resources' (1-50) buckets, in the order named (a dashboard's charts in one request). */
  async historyBucketsOf(ids: readonly string[], query: HistoryBucketQuery, options?: CallOptions): Promise<HistoryBucketsOf> {
    return (await this.getHistory({ query: { resource: [...ids], ...historyQuery(query) } }, options)) as HistoryBucketsOf;
  }

  /**
   * Up to HISTORY_MAX_BACKFILL_POINTS (10,000) states a resource had earlier (readings a device kept
   * while offline), all or nothing, without events: `await devdata.backfillHistory(id, [{ at, state }])`.
   * A point at a time already stored replaces it. Pass `idempotencyKey` to make a repeat take effect once.
   */
  async backfillHistory(id: string, points: readonly HistoryPointInput[], options?: CallOptions): Promise<HistoryBackfillResult> {
    const body = { points: points.map((point) => ({ at: isoTime(point.at), state: point.state })) };
    return this.backfillResourceHistory({ path: { id }, body }, options);
  }

  /**
   * A list of points of any length backfilled as consecutive requests of `size`, in order, each
   * with its own Idempotency-Key, reporting `onProgress` after each. A failing request throws a
   * HistoryBackfillFailure that says which request and point failed and how many were stored.
   */
  async backfillHistoryAll(id: string, points: readonly HistoryPointInput[], options: HistoryBackfillAllOptions = {}): Promise<HistoryBackfillResult> {
    const { size = HISTORY_MAX_BACKFILL_POINTS, onProgress, ...callOptions } = options;
    if (size > HISTORY_MAX_BACKFILL_POINTS) throw new RangeError(`a backfill holds at most ${HISTORY_MAX_BACKFILL_POINTS} points, not ${size}`);
    const requests = batchesOf(points, size);
    const total = { inserted: 0, replaced: 0 };
    let done = 0;
    for (const [index, request] of requests.entries()) {
      try {
        const result = await this.backfillHistory(id, request, callOptions);
        total.inserted += result.inserted;
        total.replaced += result.replaced;
      } catch (error) {
        if (!(error instanceof DevdataError) || error.code === 'aborted') throw error;
        throw new HistoryBackfillFailure(error, { request: index, requests: requests.length, done });
      }
      done += request.length;
      onProgress?.({ done, total: points.length, request: index + 1, requests: requests.length });
    }
    return total;
  }

  /**
   * Follows the event log live (`GET /api/v1/events/stream`): `for await (const event of devdata.streamEvents({ after }))`.
   * Reconnects after any disconnect with Last-Event-ID; ends when `signal` fires or the loop breaks.
   */
  streamEvents(options: EventStreamOptions = {}): EventStream {
    return new EventStream({ baseUrl: this.baseUrl, credential: this.options.apiKey, fetch: this.options.fetch ?? globalThis.fetch.bind(globalThis) }, options);
  }
}
