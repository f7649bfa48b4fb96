// What the history page shows of a resource's states: the range's bounds, the bucket length that
// draws it in a few hundred buckets, the buckets' numbers as the chart and its summary read them,
// a live change merged in, and the CSV of what is shown.
import { csvLine, type components } from '@devdata/client';

export type HistoryBucket = components['schemas']['HistoryBucket'];
export type HistoryPoint = components['schemas']['HistoryPoint'];

/** An update the live stream brought (its time and state), numbered so that the same state twice is two changes. */
export interface LiveChange extends HistoryPoint {
  seq: number;
}
export type BucketName = components['schemas']['HistoryBuckets']['bucket'];

/** A bucket length the service offers (its capabilities' `history.buckets`). */
export interface BucketLength {
  name: BucketName;
  seconds: number;
}

const HOUR_MS = 3_600_000;

export const RANGES = [
  { id: '1h', label: 'Last hour', ms: HOUR_MS },
  { id: '24h', label: 'Last 24 hours', ms: 24 * HOUR_MS },
  { id: '7d', label: 'Last 7 days', ms: 7 * 24 * HOUR_MS },
  { id: '30d', label: 'Last 30 days', ms: 30 * 24 * HOUR_MS },
] as const;

export type RangeChoice = { id: (typeof RANGES)[number]['id'] } | { id: 'custom'; fromMs: number; toMs: number };

/** What one read covers: from ≤ t < to, in epoch milliseconds; `follows`: it moves on with the clock (not a custom range). */
export interface HistoryWindow {
  fromMs: number;
  toMs: number;
  follows: boolean;
}

export function windowOf(range: RangeChoice, nowMs: number): HistoryWindow {
  if (range.id === 'custom') return { fromMs: range.fromMs, toMs: range.toMs, follows: false };
  const span = RANGES.find((entry) => entry.id === range.id)?.ms ?? HOUR_MS;
  return { fromMs: nowMs - span, toMs: nowMs, follows: true };
}

/** Buckets on a chart at most: a shape to read at any width, drawn at once. */
export const MOST_BUCKETS = 500;

/** The buckets of `lengthMs` a read of the window gets (aligned to the epoch, as the service aligns them). */
export function bucketCount(span: HistoryWindow, lengthMs: number): number {
  return Math.floor((span.toMs - 1) / lengthMs) - Math.floor(span.fromMs / lengthMs) + 1;
}

/** The shortest length giving at most MOST_BUCKETS buckets (1 h → 1m, 24 h → 5m, 7 d → 1h, 30 d → 6h), else the longest. */
export function bucketFor(span: HistoryWindow, lengths: readonly BucketLength[]): BucketLength | undefined {
  const sorted = [...lengths].sort((a, b) => a.seconds - b.seconds);
  return sorted.find((length) => bucketCount(span, length.seconds * 1000) <= MOST_BUCKETS) ?? sorted.at(-1);
}

export function alignedStart(atMs: number, lengthMs: number): number {
  return Math.floor(atMs / lengthMs) * lengthMs;
}

/** The buckets shown, those from `fromMs` on replaced by a fresh read of them. */
export function withTail(buckets: readonly HistoryBucket[], fresh: readonly HistoryBucket[], fromMs: number): HistoryBucket[] {
  return [...buckets.filter((bucket) => Date.parse(bucket.start) < fromMs), ...fresh];
}

/** Seconds of the bucket that have passed by `nowMs` (the last one is still filling). */
function elapsedSeconds(bucket: HistoryBucket, length: BucketLength, nowMs: number): number {
  return Math.max(1, Math.min(length.seconds, (nowMs - Date.parse(bucket.start)) / 1000));
}

/** A boolean bucket's share of time on, 0-100. */
export function percentOn(bucket: HistoryBucket, length: BucketLength, nowMs: number): number {
  return Math.min(100, (100 * (bucket.trueSeconds ?? 0)) / elapsedSeconds(bucket, length, nowMs));
}

export interface NumericSummary {
  buckets: number;
  readings: number;
  lowest: number;
  highest: number;
  latest: HistoryBucket['last'];
}

/** The sensor's numbers over the buckets with numeric points; undefined when there are none. */
export function numericSummary(buckets: readonly HistoryBucket[]): NumericSummary | undefined {
  const numeric = buckets.filter((bucket) => bucket.mean !== undefined);
  const last = buckets.at(-1);
  if (numeric.length === 0 || !last) return undefined;
  return {
    buckets: numeric.length,
    readings: numeric.reduce((sum, bucket) => sum + bucket.count, 0),
    lowest: Math.min(...numeric.map((bucket) => bucket.min ?? Number.POSITIVE_INFINITY)),
    highest: Math.max(...numeric.map((bucket) => bucket.max ?? Number.NEGATIVE_INFINITY)),
    latest: last.last,
  };
}

/** Share of the time recorded (from the first known state on) spent on, 0-100, and the latest state. */
export function onOffSummary(buckets: readonly HistoryBucket[], length: BucketLength, nowMs: number): { percentOn: number; latest: boolean } | undefined {
  const last = buckets.at(-1);
  if (!last) return undefined;
  const seconds = buckets.reduce((sum, bucket) => sum + elapsedSeconds(bucket, length, nowMs), 0);
  const on = buckets.reduce((sum, bucket) => sum + (bucket.trueSeconds ?? 0), 0);
  return { percentOn: Math.min(100, (100 * on) / seconds), latest: last.last === true };
}

/** A number as the summaries write it: at most three decimals. */
export function formatNumber(value: number): string {
  return String(Math.round(value * 1000) / 1000);
}

function cell(value: HistoryBucket['last'] | undefined): string {
  return value === undefined ? '' : String(value);
}

export function bucketsCsv(buckets: readonly HistoryBucket[], onOff: boolean): string {
  if (onOff)
    return (
      csvLine(['start', 'count', 'last', 'trueSeconds']) +
      buckets.map((bucket) => csvLine([bucket.start, String(bucket.count), cell(bucket.last), cell(bucket.trueSeconds)])).join('')
    );
  return (
    csvLine(['start', 'count', 'last', 'min', 'max', 'mean']) +
    buckets.map((bucket) => csvLine([bucket.start, String(bucket.count), cell(bucket.last), cell(bucket.min), cell(bucket.max), cell(bucket.mean)])).join('')
  );
}

export function pointsCsv(points: readonly HistoryPoint[]): string {
  return csvLine(['at', 'state']) + points.map((point) => csvLine([point.at, String(point.state)])).join('');
}

/** Offers `text` as a file to save, made in the browser. */
export function download(fileName: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  link.click();
  // The click has started the download; the address is no longer needed after it.
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
