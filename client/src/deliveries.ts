// The types of devdata's webhook tools (api-decisions §14): the query of a webhook's delivery
// history, its pages walked with `before`, and the range of a replay.
import { DevdataError } from './errors.js';
import type { CallOptions } from './operation-types.js';
import type { operations, WebhookDeliveryPage } from './types.js';

type DeliveryParameters = NonNullable<operations['listWebhookDeliveries']['parameters']['query']>;

export interface WebhookDeliveryQuery {
  /** Only the deliveries with this status: `pending`, `succeeded` or `failed`. */
  status?: DeliveryParameters['status'];
  /** At most this many, 1-500 (default: every delivery kept, the pending ones and the latest 500 completed). */
  limit?: DeliveryParameters['limit'];
  /** A delivery id: the page continues after it, with older ones (a page's last id). */
  before?: DeliveryParameters['before'];
}

/** The deliveries a page of devdata.webhookDeliveryPages holds unless `limit` says otherwise. */
export const DELIVERY_PAGE_SIZE = 100;

export interface WebhookReplayRange {
  /** A cursor (an event id): the retained events after it are sent again. */
  after: number;
  /** The last event sent again (default: the newest). */
  until?: number;
}

/** The query parameters the API takes, those not given left out (a stray field is not sent). */
export function deliveryQuery(query: WebhookDeliveryQuery): DeliveryParameters {
  const { status, limit, before } = query;
  return { ...(status !== undefined && { status }), ...(limit !== undefined && { limit }), ...(before !== undefined && { before }) };
}

/**
 * Pages of deliveries, newest first, from `query.before` (or the newest) to the oldest kept: each
 * next page asks for the deliveries before the last one of a full page. Deliveries queued while it
 * runs are newer than the first page, so none is seen twice. A webhook without deliveries gives
 * one empty page.
 */
export async function* deliveryPages(
  list: (query: DeliveryParameters, options: CallOptions | undefined) => Promise<WebhookDeliveryPage>,
  query: WebhookDeliveryQuery,
  options: CallOptions | undefined,
): AsyncGenerator<WebhookDeliveryPage> {
  const limit = query.limit ?? DELIVERY_PAGE_SIZE;
  let before = query.before;
  for (let first = true; ; first = false) {
    const page = await list(deliveryQuery({ ...query, limit, before }), options);
    // The page after a full last one is empty: not a page of its own.
    if (page.data.length > 0 || first) yield page;
    const last = page.data.at(-1);
    if (page.data.length < limit || last === undefined) return;
    before = last.id;
  }
}

/** A replay's 410: which cursor expired, and the oldest one a replay can start after. */
export function explainExpiredReplay(error: unknown, after: number): unknown {
  if (!(error instanceof DevdataError) || error.code !== 'cursor_expired') return error;
  const oldest = error.oldestCursor;
  const where =
    oldest === undefined
      ? 'it is older than the retained events.'
      : `the oldest cursor still retained is ${oldest}. Replay after ${oldest} to send the events still kept.`;
  return new DevdataError({
    status: error.status,
    code: error.code,
    message: `Cursor ${after} has expired: ${where}`,
    requestId: error.requestId,
    details: error.details,
    headers: error.headers,
    cause: error,
  });
}
