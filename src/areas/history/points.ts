// What the history of a resource is (api-decisions §13), apart from how it is stored: a point's
// state as its columns, the bucket lengths and limits, and how summaries of spans of points make
// the buckets a reader gets, with a boolean's time spent true carried across spans.
import { DAY_MS } from '../../platform/clock.js';
import type { ResourceState, ResourceType } from '../resources/service.js';

export { DAY_MS };
export const HOUR_MS = 3_600_000;

/** The bucket lengths a reader may ask for, in milliseconds. */
export const BUCKETS = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '1h': HOUR_MS, '6h': 6 * HOUR_MS, '1d': DAY_MS } as const;
export type BucketName = keyof typeof BUCKETS;
export const BUCKET_NAMES = Object.keys(BUCKETS) as BucketName[];

export const HISTORY_LIMITS = {
  /** Buckets one read may span. */
  buckets: 10_000,
  /** Points a page may hold, and how many it holds unless asked. */
  points: 10_000,
  defaultPoints: 1_000,
  /** Points one backfill may bring. */
  backfill: 10_000,
  /** Resources one read of several may name. */
  resources: 50,
  /** Buckets one read of several resources may hold in all (points: `points` in all). */
  manyBuckets: 50_000,
  /** The range read unless `from` says otherwise: the last day. */
  defaultRangeMs: DAY_MS,
} as const;

/** A point as stored: a number or a boolean (1/0) in `value`, a string in `text`. */
export interface StoredState {
  value: number | null;
  text: string | null;
}

export interface Point {
  /** Epoch milliseconds. */
  at: number;
  state: ResourceState;
}

export function storedState(state: ResourceState): StoredState {
  if (typeof state === 'boolean') return { value: state ? 1 : 0, text: null };
  if (typeof state === 'number') return { value: state, text: null };
  return { value: null, text: state };
}

export function isBooleanType(type: ResourceType): boolean {
  return type === 'binary_sensor' || type === 'switch';
}

/** The state a stored point holds, for a resource of `type`. */
export function stateOf(type: ResourceType, value: number | null, text: string | null): ResourceState {
  if (text !== null) return text;
  const number = Number(value);
  return isBooleanType(type) ? number !== 0 : number;
}

/**
 * The points of one span of time (a bucket, or an hour's aggregate) summed up. `trueMs`: time
 * spent true from the span's first point to its end (or to now, if sooner).
 */
export interface SpanSums {
  start: number;
  count: number;
  numericCount: number;
  min: number | null;
  max: number | null;
  sum: number | null;
  firstAt: number;
  lastAt: number;
  trueMs: number;
}

/** A span as buckets are made of it: where it ends, and its last state. */
export interface SpanSummary extends SpanSums {
  end: number;
  last: ResourceState;
}

/** A bucket as the API gives it. */
export interface Bucket {
  start: string;
  count: number;
  last: ResourceState;
  min?: number;
  max?: number;
  mean?: number;
  trueSeconds?: number;
}

/** The buckets a read asks for: their starts, the first holding `from`, the last starting before `to`. */
export function bucketStarts(from: number, to: number, size: number): { first: number; end: number; count: number } {
  const first = from - mod(from, size);
  const count = Math.max(0, Math.ceil((to - first) / size));
  return { first, end: first + count * size, count };
}

function mod(value: number, size: number): number {
  return ((value % size) + size) % size;
}

/**
 * The buckets of `size` from `first` to `end`, made of span summaries in time order (each span
 * lies within one bucket). Booleans: every bucket from the first known state on, with the time
 * spent true, the state `carried` in from before `first` (undefined when none is known), and no
 * time counted past `now`. Other types: the buckets that hold points.
 */
export function bucketsOf(
  type: ResourceType,
  spans: readonly SpanSummary[],
  range: { first: number; end: number; size: number; now: number },
  carried: ResourceState | undefined,
): Bucket[] {
  const { first, end, size, now } = range;
  const buckets: Bucket[] = [];
  const boolean = isBooleanType(type);
  let state = carried;
  let index = 0;
  for (let start = first; start < end; start += size) {
    const bucketEnd = start + size;
    let count = 0;
    let numericCount = 0;
    let min: number | null = null;
    let max: number | null = null;
    let sum = 0;
    let trueMs = 0;
    let covered = start;
    for (; index < spans.length && spans[index]!.start < bucketEnd; index++) {
      const span = spans[index]!;
      if (state === true) trueMs += Math.max(0, Math.min(span.firstAt, now) - Math.min(covered, now));
      trueMs += span.trueMs;
      count += span.count;
      numericCount += span.numericCount;
      if (span.min !== null) min = min === null ? span.min : Math.min(min, span.min);
      if (span.max !== null) max = max === null ? span.max : Math.max(max, span.max);
      if (span.sum !== null) sum += span.sum;
      state = span.last;
      // The span's own time true ran to its end; the gap before the next span starts there.
      covered = span.end;
    }
    if (boolean) {
      if (state === undefined) continue;
      if (state === true) trueMs += Math.max(0, Math.min(bucketEnd, now) - Math.min(covered, now));
      buckets.push({ start: new Date(start).toISOString(), count, last: state, trueSeconds: trueMs / 1000 });
      continue;
    }
    if (count === 0) continue;
    const bucket: Bucket = { start: new Date(start).toISOString(), count, last: state! };
    if (type === 'sensor' && numericCount > 0) {
      bucket.min = min!;
      bucket.max = max!;
      bucket.mean = sum / numericCount;
    }
    buckets.push(bucket);
  }
  return buckets;
}
