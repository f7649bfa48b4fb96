// devdata-client resources history: a resource's points in a range (every page), or its buckets,
// as a table, CSV or the API's JSON.
import { csvLine } from '../csv.js';
import { HISTORY_BUCKETS, HISTORY_MAX_PAGE_POINTS } from '../generated/values.js';
import type { HistoryBucket, HistoryBucketLength, HistoryPoint } from '../types.js';
import { type CommandInput, UsageError } from './command.js';
import { write } from './export.js';
import { type Output, print, printTable, stateCell } from './output.js';
import { duration } from './progress.js';
import { stringValue, timeValue } from './values.js';

/** The range read unless --since says otherwise: the API's default too. */
const DEFAULT_SINCE = '24h';

const POINT_COLUMNS = ['at', 'state'];
const BUCKET_COLUMNS = ['start', 'count', 'last', 'min', 'max', 'mean', 'trueSeconds'] as const;

function bucketValue(values: CommandInput['values']): HistoryBucketLength | undefined {
  const bucket = stringValue(values, 'bucket');
  if (bucket !== undefined && !(HISTORY_BUCKETS as readonly string[]).includes(bucket))
    throw new UsageError(`--bucket must be one of ${HISTORY_BUCKETS.join(', ')}, not "${bucket}"`);
  return bucket as HistoryBucketLength | undefined;
}

/** A cell of CSV: the value as JSON writes it (true, 21.5, text), empty when absent. */
function csvValue(value: string | number | boolean | undefined): string {
  return value === undefined ? '' : String(value);
}

/** A mean as a person reads it: at most three decimals. */
function rounded(value: number | undefined): string {
  return value === undefined ? '-' : String(Math.round(value * 1000) / 1000);
}

function printPoints(output: Output, points: HistoryPoint[]): void {
  if (points.length === 0) {
    output.err('No points.');
    return;
  }
  printTable(
    output,
    ['TIME', 'STATE'],
    points.map((point) => [point.at, stateCell(point.state)]),
  );
}

/** On/off resources' buckets say the time spent on; the others' the numbers' min, max and mean. */
function printBuckets(output: Output, buckets: HistoryBucket[]): void {
  if (buckets.length === 0) {
    output.err('No buckets.');
    return;
  }
  if (buckets.some((bucket) => bucket.trueSeconds !== undefined)) {
    printTable(
      output,
      ['START', 'COUNT', 'TIME ON', 'LAST'],
      buckets.map((bucket) => [
        bucket.start,
        String(bucket.count),
        bucket.trueSeconds === undefined ? '-' : duration(bucket.trueSeconds),
        stateCell(bucket.last),
      ]),
    );
    return;
  }
  printTable(
    output,
    ['START', 'COUNT', 'MIN', 'MAX', 'MEAN', 'LAST'],
    buckets.map((bucket) => [bucket.start, String(bucket.count), rounded(bucket.min), rounded(bucket.max), rounded(bucket.mean), stateCell(bucket.last)]),
  );
}

export async function showHistory({ values, positionals, client }: CommandInput, output: Output): Promise<void> {
  const id = positionals[0]!;
  const csv = values.csv === true;
  if (csv && output.json) throw new UsageError('--csv and --json exclude each other');
  // One moment for both, so that --since 2h --until 1h is exactly an hour.
  const now = Date.now();
  const from = timeValue({ since: stringValue(values, 'since') ?? DEFAULT_SINCE }, 'since', now)!;
  const to = timeValue(values, 'until', now);
  if (to !== undefined && from >= to) throw new UsageError(`--since (${from}) must be before --until (${to})`);
  const bucket = bucketValue(values);
  const range = { from, ...(to !== undefined && { to }) };
  const devdata = client();

  if (bucket !== undefined) {
    const buckets = await devdata.historyBuckets(id, { ...range, bucket });
    if (csv) {
      const rows = buckets.data.map((row) => csvLine(BUCKET_COLUMNS.map((column) => csvValue(row[column]))));
      return write(process.stdout, csvLine(BUCKET_COLUMNS) + rows.join(''));
    }
    return print(output, buckets, () => printBuckets(output, buckets.data));
  }

  const points = devdata.iterateHistory(id, { ...range, limit: HISTORY_MAX_PAGE_POINTS });
  if (csv) {
    // Written a page at a time as the pages come (CRLF records, like resources export): a long
    // range needs no more memory than a page.
    let lines = csvLine(POINT_COLUMNS);
    let count = 0;
    for await (const point of points) {
      lines += csvLine([point.at, csvValue(point.state)]);
      if (++count % HISTORY_MAX_PAGE_POINTS === 0) {
        await write(process.stdout, lines);
        lines = '';
      }
    }
    return write(process.stdout, lines);
  }
  const all: HistoryPoint[] = [];
  for await (const point of points) all.push(point);
  print(output, { data: all }, () => printPoints(output, all));
}
