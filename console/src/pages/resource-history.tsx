// A resource's history page (/console/resources/history?show=<id>): its states over a range as a
// chart of buckets (sensors, switches) or a list of points (text), growing live as states arrive.
import type { DevdataEvent, Resource } from '@devdata/client';
import { useState } from 'preact/hooks';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { formatState, Time } from '../components/format';
import { LiveBadge } from '../components/live-badge';
import { Page, Section } from '../components/page';
import { publicClient } from '../connection';
import { useClient, useConnection } from '../connection-context';
import { isStatus } from '../errors';
import { useLoad } from '../hooks';
import { type BucketLength, type LiveChange, RANGES, type RangeChoice, windowOf } from '../history';
import { useLiveEvents } from '../live';
import { Link, useShown } from '../router';
import { scopeReason } from '../scopes';
import { BucketsView, PointsView } from './resource-history-views';

export function ResourceHistoryPage() {
  return (
    <Page
      title="Resource history"
      intro="A resource's states over time: a sensor's lowest, highest and mean value, how long a switch was on, a text's every state. New states appear live."
      needs={['resources:read']}
      what="Reading a resource's history"
    >
      <HistoryOfShown />
    </Page>
  );
}

function HistoryOfShown() {
  const id = useShown();
  if (!id)
    return (
      <Notice kind="info">
        <p>
          Open a resource's history from the <Link to="resources">resources page</Link>.
        </p>
      </Notice>
    );
  return <ResourceHistory key={id} id={id} />;
}

function ResourceHistory({ id }: { id: string }) {
  const client = useClient();
  const { key } = useConnection();
  const canFollow = scopeReason(key?.credential, ['events:read']) === undefined;
  // The history is read once the stream has started, so no state falls between the two.
  const { live, started: streamStarted } = useLiveEvents(client, 'resource.*', canFollow, apply);
  const [change, setChange] = useState<LiveChange | undefined>(undefined);
  const [deleted, setDeleted] = useState(false);
  const [range, setRange] = useState<RangeChoice>({ id: '24h' });
  const resource = useLoad(
    (signal) => (streamStarted ? client.getResource({ path: { id } }, { signal }) : Promise.resolve(undefined)),
    [client, id, streamStarted],
  );
  const capabilities = useLoad((signal) => publicClient.getCapabilities(undefined, { signal }), []);
  const lengths = (capabilities.data?.features.history as { buckets?: BucketLength[] } | undefined)?.buckets;

  function apply(event: DevdataEvent): void {
    if (event.type !== 'resource.updated' && event.type !== 'resource.deleted') return;
    const updated = event.data.resource as Resource;
    if (updated.id !== id) return;
    if (event.type === 'resource.deleted') {
      setDeleted(true);
      return;
    }
    resource.update((current) => (current && current.version >= updated.version ? current : updated));
    // Any update: one that sends the state it already had records a point too, and its event's
    // `changed` does not name the state.
    setChange({ at: updated.updatedAt, state: updated.state, seq: event.id });
  }

  const shown = resource.data;
  if (isStatus(resource.error, 404) || deleted)
    return (
      <Notice kind="warning">
        <p>
          The resource <code>{id}</code> does not exist (any more); its history went with it. <Link to="resources">Back to all resources</Link>
        </p>
      </Notice>
    );
  return (
    <>
      <div class="toolbar">
        {canFollow ? <LiveBadge status={live} /> : <span class="reason">Live updates need the events:read scope, which the connected key does not have.</span>}
        <Link to="resources" show={id}>
          Back to the resource
        </Link>
      </div>
      {(resource.loading || !streamStarted) && <Busy label={streamStarted ? 'Reading the resource' : 'Connecting to the live stream'} />}
      <ErrorNotice error={resource.error} title="The resource could not be read" />
      <ErrorNotice error={capabilities.error} title="The service's history settings could not be read" />
      {shown && (
        <Section title={shown.name} id="history-resource-title">
          <dl class="facts" data-history-resource-id={shown.id}>
            <dt>State</dt>
            <dd class="state">{formatState(shown.state)}</dd>
            <dt>Type</dt>
            <dd>{shown.type}</dd>
            <dt>Updated</dt>
            <dd>
              <Time value={shown.updatedAt} />
            </dd>
          </dl>
          <RangePicker range={range} onChange={setRange} />
          {lengths && <HistoryOf key={JSON.stringify(range)} resource={shown} range={range} lengths={lengths} change={change} />}
        </Section>
      )}
    </>
  );
}

/** Buckets for sensors and switches, points for text; read again when the range changes. */
function HistoryOf({ resource, range, lengths, change }: { resource: Resource; range: RangeChoice; lengths: BucketLength[]; change: LiveChange | undefined }) {
  // The range's bounds are fixed when it is chosen; live states move its end on.
  const [span] = useState(() => windowOf(range, Date.now()));
  const name = `${resource.name} (${range.id === 'custom' ? 'custom range' : RANGES.find((entry) => entry.id === range.id)?.label.toLowerCase()})`;
  if (resource.type === 'text') return <PointsView resource={resource} span={span} change={change} what={name} />;
  return <BucketsView resource={resource} span={span} lengths={lengths} change={change} what={name} />;
}

const localInput = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

function RangePicker({ range, onChange }: { range: RangeChoice; onChange: (range: RangeChoice) => void }) {
  const [choice, setChoice] = useState<RangeChoice['id']>(range.id);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const pick = (id: RangeChoice['id']) => {
    setChoice(id);
    if (id !== 'custom') {
      onChange({ id });
      return;
    }
    // A custom range starts as the range shown, to be narrowed or moved.
    const shown = windowOf(range, Date.now());
    setFrom(localInput(shown.fromMs));
    setTo(localInput(shown.toMs));
  };
  const applyCustom = (event: Event) => {
    event.preventDefault();
    // datetime-local values are the browser's local time, which Date reads them as.
    const fromMs = new Date(from).getTime();
    const toMs = new Date(to).getTime();
    if (!(fromMs < toMs)) {
      setProblem('The start must be before the end.');
      return;
    }
    setProblem(undefined);
    onChange({ id: 'custom', fromMs, toMs });
  };
  return (
    <form class="filters history-range" aria-label="History range" onSubmit={applyCustom}>
      <div class="field">
        <label for="history-range">Range</label>
        <select id="history-range" value={choice} onChange={(event) => pick(event.currentTarget.value as RangeChoice['id'])}>
          {RANGES.map((entry) => (
            <option key={entry.id} value={entry.id}>
              {entry.label}
            </option>
          ))}
          <option value="custom">Custom…</option>
        </select>
      </div>
      {choice === 'custom' && (
        <>
          <div class="field">
            <label for="history-from">From</label>
            <input id="history-from" type="datetime-local" value={from} required onInput={(event) => setFrom(event.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="history-to">To</label>
            <input
              id="history-to"
              type="datetime-local"
              value={to}
              required
              onInput={(event) => setTo(event.currentTarget.value)}
              aria-invalid={problem ? true : undefined}
              aria-describedby={problem ? 'history-to-error' : undefined}
            />
            {problem && (
              <p class="field-problem" id="history-to-error">
                {problem}
              </p>
            )}
          </div>
          <div class="actions">
            <button type="submit" class="secondary">
              Show range
            </button>
          </div>
        </>
      )}
    </form>
  );
}
