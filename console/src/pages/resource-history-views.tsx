// What the history page shows of a range: a chart of buckets (a sensor's numbers, a switch's time
// on) or the list of points (text), each with its CSV, each taking in the states that arrive live.
import type { Resource } from '@devdata/client';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { formatState, Time } from '../components/format';
import { BandChart, OnOffChart } from '../components/history-chart';
import { useClient } from '../connection-context';
import { useLoad } from '../hooks';
import {
  alignedStart,
  type BucketLength,
  bucketFor,
  bucketsCsv,
  download,
  formatNumber,
  type HistoryBucket,
  type HistoryPoint,
  type HistoryWindow,
  type LiveChange,
  numericSummary,
  onOffSummary,
  pointsCsv,
  withTail,
} from '../history';

/** Points on a page of the list. */
const PAGE_SIZE = 50;

const iso = (ms: number) => new Date(ms).toISOString();

function fileName(resource: Resource, what: string): string {
  const name = resource.name.replace(/[^\p{L}\p{N}]+/gu, '-').replace(/^-+|-+$/g, '') || resource.id;
  return `${name}-${what}.csv`;
}

/** Calls `take` with each live change that arrived after the view was shown. */
function useChanges(change: LiveChange | undefined, take: (change: LiveChange) => void): void {
  const seen = useRef(change?.seq);
  const latest = useRef(take);
  latest.current = take;
  useEffect(() => {
    if (!change || change.seq === seen.current) return;
    seen.current = change.seq;
    latest.current(change);
  }, [change]);
}

function DownloadCsv({ onClick }: { onClick: () => void }) {
  return (
    <button type="button" class="secondary" onClick={onClick}>
      Download CSV
    </button>
  );
}

export function BucketsView({
  resource,
  span: initial,
  lengths,
  change,
  what,
}: {
  resource: Resource;
  span: HistoryWindow;
  lengths: BucketLength[];
  change: LiveChange | undefined;
  what: string;
}) {
  const client = useClient();
  const length = useMemo(() => bucketFor(initial, lengths), [initial, lengths]) as BucketLength;
  const lengthMs = length.seconds * 1000;
  const [span, setSpan] = useState(initial);
  const [liveError, setLiveError] = useState<unknown>(undefined);
  const read = useLoad(
    (signal) =>
      client
        .getResourceHistory({ path: { id: resource.id }, query: { from: iso(initial.fromMs), to: iso(initial.toMs), bucket: length.name } }, { signal })
        .then((answer) => ('bucket' in answer ? answer.data : [])),
    [client, resource.id, initial, length],
  );
  // The end read so far, and the newest read asked for: a slower answer to an older one is dropped.
  const readTo = useRef(initial.toMs);
  const asked = useRef(0);

  useChanges(change, (point) => {
    const at = Date.parse(point.at);
    const toMs = span.follows ? Math.max(Date.now(), at + 1) : span.toMs;
    if (at < span.fromMs || at >= toMs) return;
    // From the bucket the last read ended in: a switch's buckets between it and the new state carry its state.
    const fromMs = alignedStart(Math.min(at, readTo.current - 1), lengthMs);
    const request = ++asked.current;
    client.getResourceHistory({ path: { id: resource.id }, query: { from: iso(fromMs), to: iso(toMs), bucket: length.name } }).then(
      (answer) => {
        if (request !== asked.current || !('bucket' in answer)) return;
        readTo.current = toMs;
        setLiveError(undefined);
        setSpan((current) => ({ ...current, toMs }));
        read.update((current) => (current ? withTail(current, answer.data, fromMs) : current));
      },
      (error: unknown) => setLiveError(error),
    );
  });

  const buckets = read.data;
  const onOff = resource.type === 'binary_sensor' || resource.type === 'switch';
  const csv = () => buckets && download(fileName(resource, `history-${length.name}`), bucketsCsv(buckets, onOff));
  return (
    <div class="history" data-bucket={length.name}>
      {read.loading && <Busy label="Loading the history" />}
      <ErrorNotice error={read.error} title="The history could not be read" />
      <ErrorNotice error={liveError} title="The newest states could not be read" />
      {buckets &&
        (buckets.length === 0 ? (
          <p class="empty history-empty">No states recorded in this range.</p>
        ) : onOff ? (
          <OnOffView buckets={buckets} length={length} span={span} what={what} onCsv={csv} />
        ) : buckets.some((bucket) => bucket.mean !== undefined) ? (
          <NumericView buckets={buckets} length={length} span={span} what={what} onCsv={csv} />
        ) : (
          <>
            <Notice kind="info">
              <p>The states in this range are text: here they are one by one.</p>
            </Notice>
            <PointsView resource={resource} span={span} change={change} what={what} />
          </>
        ))}
    </div>
  );
}

interface ChartViewProps {
  buckets: HistoryBucket[];
  length: BucketLength;
  span: HistoryWindow;
  what: string;
  onCsv: () => void;
}

function NumericView({ buckets, length, span, what, onCsv }: ChartViewProps) {
  const summary = numericSummary(buckets);
  return (
    <BandChart
      buckets={buckets}
      span={span}
      label={`Chart of ${what}: the lowest to highest value and the mean per ${length.name} bucket. Download CSV gives its numbers.`}
    >
      {summary && (
        <p class="history-summary">
          {summary.readings} reading{summary.readings === 1 ? '' : 's'} in {summary.buckets} bucket{summary.buckets === 1 ? '' : 's'} of {length.name}: lowest{' '}
          <strong>{formatNumber(summary.lowest)}</strong>, highest <strong>{formatNumber(summary.highest)}</strong>, latest{' '}
          <strong class="history-latest">{formatState(summary.latest)}</strong>.
        </p>
      )}
      <DownloadCsv onClick={onCsv} />
    </BandChart>
  );
}

function OnOffView({ buckets, length, span, what, onCsv }: ChartViewProps) {
  const summary = onOffSummary(buckets, length, Date.now());
  const changes = buckets.reduce((sum, bucket) => sum + bucket.count, 0);
  return (
    <OnOffChart
      buckets={buckets}
      length={length}
      span={span}
      label={`Chart of ${what}: the share of each ${length.name} bucket spent on. Download CSV gives its numbers.`}
    >
      {summary && (
        <p class="history-summary">
          On <strong>{Math.round(summary.percentOn * 10) / 10} %</strong> of the time recorded, {changes} state{changes === 1 ? '' : 's'} recorded in{' '}
          {buckets.length} bucket
          {buckets.length === 1 ? '' : 's'} of {length.name}; latest <strong class="history-latest">{summary.latest ? 'on' : 'off'}</strong>.
        </p>
      )}
      <DownloadCsv onClick={onCsv} />
    </OnOffChart>
  );
}

export function PointsView({
  resource,
  span: initial,
  change,
  what,
}: {
  resource: Resource;
  span: HistoryWindow;
  change: LiveChange | undefined;
  what: string;
}) {
  const client = useClient();
  // The cursors of the pages before the one shown, newest first; none: the newest page.
  const [cursors, setCursors] = useState<string[]>([]);
  const [span, setSpan] = useState(initial);
  const spanRef = useRef(span);
  spanRef.current = span;
  const cursor = cursors.at(-1);
  const read = useLoad(
    (signal) =>
      client
        .getResourceHistory(
          {
            path: { id: resource.id },
            query: { from: iso(spanRef.current.fromMs), to: iso(spanRef.current.toMs), order: 'desc', limit: PAGE_SIZE, cursor },
          },
          { signal },
        )
        .then((answer) => ('bucket' in answer ? { data: [] as HistoryPoint[], cursor: null, hasMore: false } : answer)),
    [client, resource.id, cursors],
  );

  useChanges(change, (point) => {
    const at = Date.parse(point.at);
    const toMs = span.follows ? Math.max(Date.now(), at + 1) : span.toMs;
    if (at < span.fromMs || at >= toMs) return;
    setSpan((current) => ({ ...current, toMs }));
    // The newest page is read again (what the update recorded, if anything); the others when shown.
    if (cursors.length === 0) read.reload();
  });

  const page = read.data;
  return (
    <div class="history history-points">
      {read.loading && <Busy label="Loading the states" />}
      <ErrorNotice error={read.error} title="The states could not be read" />
      {page && (
        <>
          <DataList
            class="history-list"
            caption={`States of ${what}, newest first`}
            rows={page.data}
            rowKey={(point) => point.at}
            rowAttributes={(point) => ({ 'data-at': point.at })}
            empty="No states recorded in this range."
            columns={[
              { label: 'Time', role: 'name', cell: (point) => <Time value={point.at} /> },
              { label: 'State', role: 'value', class: 'state', cell: (point) => formatState(point.state) },
            ]}
          />
          <nav class="pager" aria-label="Pages of states">
            <button type="button" class="secondary" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
              Newer states
            </button>
            <button
              type="button"
              class="secondary"
              disabled={!page.hasMore || !page.cursor}
              onClick={() => page.cursor && setCursors([...cursors, page.cursor])}
            >
              Older states
            </button>
            <DownloadCsv onClick={() => download(fileName(resource, 'states'), pointsCsv(page.data))} />
          </nav>
        </>
      )}
    </div>
  );
}
