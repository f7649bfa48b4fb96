// Events: the live tail (pause, type filter), paging back through history with a notice when the
// history has expired, and publishing a custom event.
import { DevdataError, type DevdataEvent } from '@devdata/client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { FormActions } from '../components/forms';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { FieldError, fieldProps } from '../components/field-error';
import { JsonBlock, Time } from '../components/format';
import { LiveBadge } from '../components/live-badge';
import { Page, Section } from '../components/page';
import { RequiresScopes } from '../components/scope-gate';
import { useClient } from '../connection-context';
import { parseJsonObject } from '../errors';
import { useAction } from '../hooks';
import { followEvents, type LiveStatus } from '../live';
import { useShown } from '../router';
import { EventSubject, FindDeliveries, hasSubject, ShownEvent } from './event-detail';
import { summarizeEvent } from './event-summary';

const HISTORY_STEP = 50;
/** The tail keeps this many events on the page; older ones are dropped from view (not from the log). */
const KEPT = 500;
export const EVENT_TYPE_SUGGESTIONS = ['resource.*', 'resource.created', 'resource.updated', 'resource.deleted', 'schedule.executed', 'custom.*'];

export function EventsPage() {
  const shown = Number(useShown());
  return (
    <Page title="Events" intro="Every change of the account in order: resources, schedule runs and custom events.">
      <RequiresScopes needs={['events:read']} what="Reading events">
        {Number.isSafeInteger(shown) && shown > 0 && <ShownEvent key={shown} id={shown} />}
        <EventTail />
      </RequiresScopes>
      <PublishEvent />
    </Page>
  );
}

/** Newest first, each id once. */
function merge(current: DevdataEvent[], added: DevdataEvent[]): DevdataEvent[] {
  const byId = new Map(current.map((event) => [event.id, event]));
  for (const event of added) byId.set(event.id, event);
  return [...byId.values()].sort((a, b) => b.id - a.id).slice(0, KEPT);
}

function EventTail() {
  const client = useClient();
  const [typeInput, setTypeInput] = useState('');
  const [type, setType] = useState('');
  const [paused, setPaused] = useState(false);
  const [live, setLive] = useState<LiveStatus>({ state: 'connecting' });
  const [events, setEvents] = useState<DevdataEvent[]>([]);
  /** Events with ids above this are loaded (from history or the stream); undefined before the stream started. */
  const [floor, setFloor] = useState<number | undefined>(undefined);
  const [expiredBefore, setExpiredBefore] = useState<number | undefined>(undefined);
  const [resumeAfter, setResumeAfter] = useState<number | undefined>(undefined);
  /** The newest event shown (or the stream's start): where a paused tail resumes. */
  const lastSeen = useRef<number | undefined>(undefined);
  // Read by the stream's callbacks, which outlive the render that made them.
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const history = useAction();

  /** Reads the events in (after, upTo], going to the oldest retained when `after` has expired. */
  const readHistory = async (after: number, upTo: number): Promise<number> => {
    const read = (from: number) => client.listEvents({ query: { after: from, limit: Math.max(1, Math.min(1000, upTo - from)), type: type || undefined } });
    let from = after;
    let page: { data: Awaited<ReturnType<typeof read>>['data'] };
    try {
      page = await read(from);
    } catch (error) {
      if (!(error instanceof DevdataError && error.code === 'cursor_expired' && error.oldestCursor !== undefined)) throw error;
      from = error.oldestCursor;
      setExpiredBefore(from);
      page = from < upTo ? await read(from) : { data: [] };
    }
    setEvents((current) =>
      merge(
        current,
        page.data.filter((event) => event.id <= upTo),
      ),
    );
    return from;
  };

  // The stream: from now, or after the last event seen when resuming from a pause.
  useEffect(() => {
    if (paused) return;
    const controller = new AbortController();
    followEvents(client, {
      type: type || undefined,
      after: resumeAfter,
      signal: controller.signal,
      onEvent: (event) => {
        // Between the click and the stream's end an event may still come: it waits for the resume.
        if (pausedRef.current) return;
        lastSeen.current = event.id;
        setEvents((current) => merge(current, [event]));
      },
      onStatus: (status) => {
        setLive(status);
        if (status.state === 'stopped' && status.error instanceof DevdataError && status.error.code === 'cursor_expired')
          setExpiredBefore(status.error.oldestCursor);
      },
      onStart: (cursor) => {
        lastSeen.current = Math.max(lastSeen.current ?? 0, cursor);
        // The first start of this filter shows the latest history right away.
        if (resumeAfter !== undefined) return;
        const after = Math.max(0, cursor - HISTORY_STEP);
        void history.run(async () => setFloor(await readHistory(after, cursor)));
      },
    });
    return () => controller.abort();
  }, [client, type, paused, resumeAfter]);

  const applyFilter = (event: Event) => {
    event.preventDefault();
    setEvents([]);
    setFloor(undefined);
    setExpiredBefore(undefined);
    setResumeAfter(undefined);
    lastSeen.current = undefined;
    setType(typeInput.trim());
  };

  const togglePause = () => {
    if (paused) setResumeAfter(lastSeen.current);
    pausedRef.current = !paused;
    setPaused(!paused);
  };

  const loadOlder = () => {
    if (floor === undefined || floor === 0) return;
    const after = Math.max(0, floor - HISTORY_STEP);
    void history.run(async () => setFloor(await readHistory(after, floor)));
  };

  const goLiveFromNow = () => {
    setExpiredBefore(undefined);
    setResumeAfter(undefined);
    setEvents([]);
    setFloor(undefined);
    setPaused(false);
  };

  const streamExpired = live.state === 'stopped' && live.error instanceof DevdataError && live.error.code === 'cursor_expired';
  // A filter the API refuses stops the stream before any history is read: either may name `/type`.
  const filterError = history.error ?? (live.state === 'stopped' ? live.error : undefined);
  return (
    <Section title="Live tail" id="tail-title">
      <div class="toolbar">
        <LiveBadge status={live} paused={paused} />
        <button type="button" class="secondary" onClick={togglePause} aria-pressed={paused}>
          {paused ? 'Resume' : 'Pause'}
        </button>
      </div>
      <form class="filters" onSubmit={applyFilter} aria-label="Filter events">
        <div class="field">
          <label for="event-type-filter">Type</label>
          <input
            id="event-type-filter"
            list="event-type-suggestions"
            value={typeInput}
            placeholder="all types"
            onInput={(event) => setTypeInput(event.currentTarget.value)}
            {...fieldProps(filterError, '/type', 'event-type-filter', 'event-type-hint')}
          />
          <datalist id="event-type-suggestions">
            {EVENT_TYPE_SUGGESTIONS.map((suggestion) => (
              <option key={suggestion} value={suggestion} />
            ))}
          </datalist>
          <span class="hint" id="event-type-hint">
            An exact type or a prefix such as <code>custom.*</code>; empty for all.
          </span>
          <FieldError error={filterError} path="/type" id="event-type-filter" />
        </div>
        <div class="actions">
          <button type="submit" class="secondary">
            Apply filter
          </button>
        </div>
      </form>
      {(expiredBefore !== undefined || streamExpired) && (
        <Notice kind="warning">
          <p>
            <strong>Older events have expired.</strong> The service keeps a limited number of events per account; events up to #{expiredBefore ?? '?'} are no
            longer available{streamExpired ? ', including some this paused tail had not shown yet' : ''}.
          </p>
          {streamExpired && (
            <button type="button" onClick={goLiveFromNow}>
              Follow from now
            </button>
          )}
        </Notice>
      )}
      <ErrorNotice error={history.error} title="History could not be read" />
      {history.busy && <Busy label="Reading history" />}
      <DataList
        class="events"
        caption={`Events, newest first${type ? ` (type ${type})` : ''}`}
        rows={events}
        rowKey={(event) => event.id}
        rowAttributes={(event) => ({ 'data-event-id': String(event.id) })}
        empty={history.busy ? null : `No events yet${type ? ' of this type' : ''}. New ones appear here as they happen.`}
        columns={[
          { label: '#', cell: (event) => event.id },
          { label: 'Type', role: 'name', cell: (event) => <code>{event.type}</code> },
          { label: 'Time', role: 'value', cell: (event) => <Time value={event.createdAt} /> },
          { label: 'About', cell: (event) => (hasSubject(event) ? <EventSubject event={event} /> : <span class="muted">—</span>) },
          {
            label: 'Summary',
            cell: (event) => <EventDetails event={event} />,
          },
        ]}
      />
      <div class="pager">
        <button
          type="button"
          class="secondary"
          onClick={loadOlder}
          disabled={floor === undefined || floor === 0 || history.busy || (expiredBefore !== undefined && floor <= expiredBefore)}
        >
          Load older events
        </button>
        {floor !== undefined && <span class="muted">{floor === 0 ? 'The whole history is shown.' : `Shown from #${floor + 1}.`}</span>}
      </div>
    </Section>
  );
}

function PublishEvent() {
  const client = useClient();
  const [name, setName] = useState('');
  const [data, setData] = useState('{\n  "message": "hello"\n}');
  const [published, setPublished] = useState<DevdataEvent | undefined>(undefined);
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    setPublished(undefined);
    const created = await action.run(() => client.publishEvent({ body: { type: `custom.${name.trim()}`, data: parseJsonObject(data, 'Data') } }));
    if (created) setPublished(created);
  };
  return (
    <Section title="Publish a custom event" id="publish-title">
      <form class="form" onSubmit={submit}>
        <div class="field">
          <label for="publish-type">Type</label>
          <div class="prefixed">
            <span aria-hidden="true">custom.</span>
            <input
              id="publish-type"
              required
              pattern="[A-Za-z0-9_.:\-]{1,100}"
              value={name}
              placeholder="deploy.finished"
              onInput={(event) => setName(event.currentTarget.value)}
              {...fieldProps(action.error, '/type', 'publish-type', 'publish-type-hint')}
            />
          </div>
          <span class="hint" id="publish-type-hint">
            Published as <code>custom.{name || '…'}</code>: letters, digits and <code>_ . : -</code>.
          </span>
          <FieldError error={action.error} path="/type" id="publish-type" />
        </div>
        <div class="field">
          <label for="publish-data">Data (JSON object)</label>
          <textarea
            id="publish-data"
            rows={4}
            spellcheck={false}
            value={data}
            onInput={(event) => setData(event.currentTarget.value)}
            {...fieldProps(action.error, '/data', 'publish-data')}
          />
          <FieldError error={action.error} path="/data" id="publish-data" />
        </div>
        <ErrorNotice error={action.error} title="The event was not published" />
        {published && (
          <Notice kind="success">
            Published event #{published.id} (<code>{published.type}</code>).
          </Notice>
        )}
        <FormActions busy={action.busy} label="Publish event" busyLabel="Publishing…" needs={['events:write']} />
      </form>
    </Section>
  );
}

/** An event's summary, opening to its webhook deliveries and its JSON. */
function EventDetails({ event }: { event: DevdataEvent }) {
  const [deliveries, setDeliveries] = useState(false);
  return (
    <details>
      <summary>{summarizeEvent(event)}</summary>
      <FindDeliveries eventId={event.id} open={deliveries} onOpen={() => setDeliveries(true)} />
      <JsonBlock value={event} label={`Event ${event.id} as JSON`} />
    </details>
  );
}
