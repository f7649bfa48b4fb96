// The types of devdata.batch (POST /api/v1/batch) with each result typed by its operation, and what
// devdata.batchAll reports: its progress over a long list, and the failure of one of its batches
// said in terms of the whole list.
import { DevdataError, type ErrorDetail } from './errors.js';
import { BATCH_MAX_OPERATIONS } from './generated/values.js';
import type { CallOptions } from './operation-types.js';
import type { BatchOperation, BatchResult } from './types.js';

/** Splits operations into batches of at most `size` (default 1000, the API's limit: BATCH_MAX_OPERATIONS). */
export function batchesOf<T>(items: readonly T[], size: number = BATCH_MAX_OPERATIONS): T[][] {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`a batch holds at least one item, not ${size}`);
  const batches: T[][] = [];
  for (let start = 0; start < items.length; start += size) batches.push(items.slice(start, start + size));
  return batches;
}

/** The result of an operation: `BatchCreated` for a create, `BatchUpdated` for an update, … */
export type BatchResultOf<Operation extends BatchOperation> = Extract<BatchResult, { op: Operation['op'] }>;

/** A batch's response, each result typed by the operation at its index. */
export interface BatchResponseOf<Operations extends readonly BatchOperation[]> {
  results: { -readonly [Index in keyof Operations]: BatchResultOf<Operations[Index]> };
  /** The id of the last event the batch wrote (one event per operation, consecutive ids). */
  cursor: number;
}

export interface BatchProgress {
  /** Operations written so far, of `total`. */
  done: number;
  total: number;
  /** Batches written so far, of `batches`. */
  batch: number;
  batches: number;
}

export interface BatchAllOptions extends Omit<CallOptions, 'idempotencyKey'> {
  /** Operations per batch (default and most: the API's limit, BATCH_MAX_OPERATIONS). */
  size?: number;
  /** Called after each batch is written. */
  onProgress?: (progress: BatchProgress) => void;
}

/**
 * A batch of devdata.batchAll failed: nothing of it was written, the batches before it were.
 * `batch` is its index (from 0), `operationIndex` the index in the whole list of the first
 * operation the server named (undefined when no response came), `done` the operations written
 * before it; `details` are the server's, their `index` and `path` counted in the whole list.
 */
export class BatchFailure extends DevdataError {
  override name = 'BatchFailure';
  readonly batch: number;
  readonly batches: number;
  readonly operationIndex: number | undefined;
  readonly done: number;

  constructor(cause: DevdataError, where: { batch: number; batches: number; done: number }) {
    // The batches run in order, so the failing one starts right after the operations done.
    const details = cause.details.map((detail) => inWholeList(detail, where.done));
    const indexes = details.flatMap((detail) => (typeof detail.index === 'number' ? [detail.index] : []));
    const operationIndex = indexes.length > 0 ? Math.min(...indexes) : undefined;
    const at = operationIndex === undefined ? '' : ` at operation ${operationIndex}`;
    super({
      status: cause.status,
      code: cause.code,
      message: `Batch ${where.batch + 1} of ${where.batches} failed${at}, after ${where.done} operations were written: ${cause.message}`,
      requestId: cause.requestId,
      details,
      headers: cause.headers,
      cause,
    });
    this.batch = where.batch;
    this.batches = where.batches;
    this.operationIndex = operationIndex;
    this.done = where.done;
  }
}

/** A detail of a batch's refusal with its operation's index (and the index in its path) counted in the whole list. */
function inWholeList(detail: ErrorDetail, offset: number): ErrorDetail {
  if (typeof detail.index !== 'number') return detail;
  const index = detail.index + offset;
  return { ...detail, index, path: detail.path.replace(/^\/operations\/\d+/, `/operations/${index}`) };
}
