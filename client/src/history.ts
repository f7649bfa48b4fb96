// The types of devdata's history helpers (api-decisions §13): ranges given as a Date or an ISO
// string, the read of several resources typed by whether it asked for buckets, and what
// devdata.backfillHistoryAll reports: its progress over a long list of points, and the failure of
// one of its requests said in terms of the whole list.
import { DevdataError, type ErrorDetail } from './errors.js';
import type { CallOptions } from './operation-types.js';
import type { HistoryBucket, HistoryBucketLength, HistoryOfResource, HistoryPage, HistoryPoint, operations } from './types.js';

/** A moment: a Date, or an ISO 8601 string such as the API writes (`2026-01-31T12:00:00.000Z`). */
export type HistoryTime = Date | string;

export interface HistoryRange {
  /** Start of the range, inclusive (default: now minus 24 hours). */
  from?: HistoryTime;
  /** End of the range, exclusive (default: now). */
  to?: HistoryTime;
}

type PageParameters = NonNullable<operations['getResourceHistory']['parameters']['query']>;

export interface HistoryQuery extends HistoryRange {
  /** Points per page, 1-HISTORY_MAX_PAGE_POINTS (default 1,000). */
  limit?: PageParameters['limit'];
  /** `asc`, oldest first (default), or `desc`. */
  order?: PageParameters['order'];
  /** The previous page's `cursor`. */
  cursor?: string;
}

export interface HistoryBucketQuery extends HistoryRange {
  /** The bucket length, one of HISTORY_BUCKETS; buckets are aligned to the epoch (UTC). */
  bucket: HistoryBucketLength;
}

/** A point to backfill: a state the resource had at `at`. */
export interface HistoryPointInput {
  at: HistoryTime;
  state: HistoryPoint['state'];
}

/** devdata.historyOf: each resource's first page of points, in the order named. */
export interface HistoryPointsOf {
  data: Array<Pick<HistoryOfResource, 'resourceId'> & HistoryPage>;
}

/** devdata.historyBucketsOf: each resource's buckets, in the order named. */
export interface HistoryBucketsOf {
  bucket: HistoryBucketLength;
  data: Array<Pick<HistoryOfResource, 'resourceId'> & { data: HistoryBucket[] }>;
}

/** An ISO string as the API takes it; a string is passed as it is (the server says when it is not a time). */
export function isoTime(time: HistoryTime): string {
  return typeof time === 'string' ? time : time.toISOString();
}

/** A query's times as ISO strings, its fields left out when not given. */
export function historyQuery<Query extends HistoryRange>(query: Query): Omit<Query, 'from' | 'to'> & { from?: string; to?: string } {
  const { from, to, ...rest } = query;
  return { ...rest, ...(from !== undefined && { from: isoTime(from) }), ...(to !== undefined && { to: isoTime(to) }) };
}

export interface HistoryBackfillProgress {
  /** Points stored so far, of `total`. */
  done: number;
  total: number;
  /** Requests sent so far, of `requests`. */
  request: number;
  requests: number;
}

export interface HistoryBackfillAllOptions extends Omit<CallOptions, 'idempotencyKey'> {
  /** Points per request (default and most: the API's limit, HISTORY_MAX_BACKFILL_POINTS). */
  size?: number;
  /** Called after each request is stored. */
  onProgress?: (progress: HistoryBackfillProgress) => void;
}

/**
 * A request of devdata.backfillHistoryAll failed: none of its points were stored, those of the
 * requests before it were. `request` is its index (from 0), `pointIndex` the index in the whole
 * list of the first point the server named (undefined when it named none), `done` the points
 * stored before it; `details` are the server's, their `path` counted in the whole list.
 */
export class HistoryBackfillFailure extends DevdataError {
  override name = 'HistoryBackfillFailure';
  readonly request: number;
  readonly requests: number;
  readonly pointIndex: number | undefined;
  readonly done: number;

  constructor(cause: DevdataError, where: { request: number; requests: number; done: number }) {
    // The requests run in order, so the failing one starts right after the points done.
    const details = cause.details.map((detail) => inWholeList(detail, where.done));
    const indexes = details.flatMap((detail) => {
      const index = /^\/points\/(\d+)/.exec(detail.path)?.[1];
      return index === undefined ? [] : [Number(index)];
    });
    const pointIndex = indexes.length > 0 ? Math.min(...indexes) : undefined;
    const at = pointIndex === undefined ? '' : ` at point ${pointIndex}`;
    super({
      status: cause.status,
      code: cause.code,
      message: `Backfill request ${where.request + 1} of ${where.requests} failed${at}, after ${where.done} points were stored: ${cause.message}`,
      requestId: cause.requestId,
      details,
      headers: cause.headers,
      cause,
    });
    this.request = where.request;
    this.requests = where.requests;
    this.pointIndex = pointIndex;
    this.done = where.done;
  }
}

/** A detail of a refused backfill with the point's index in its path counted in the whole list. */
function inWholeList(detail: ErrorDetail, offset: number): ErrorDetail {
  return { ...detail, path: detail.path.replace(/^\/points\/(\d+)/, (_match, index: string) => `/points/${Number(index) + offset}`) };
}
