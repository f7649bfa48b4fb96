// Schedules: at a time or by cron (read out in words, with the next runs), setting a state or
// publishing an event; run now, pause, and the outcomes of recent runs.
import type { DevdataEvent, Resource, Schedule, ScheduleAction } from '@devdata/client';
import { useEffect, useState } from 'preact/hooks';
import { ConfirmDialog } from '../components/dialog';
import { FormActions } from '../components/forms';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { formatState, formatTime, Time } from '../components/format';
import { Page, Section } from '../components/page';
import { GuardedButton } from '../components/scope-gate';
import { defaultState, StateInput, type StateValue } from '../components/state-input';
import { useClient, useConnection } from '../connection-context';
import { readCron, knownTimezones } from '../cron';
import { parseJsonObject } from '../errors';
import { useAction, useLoad } from '../hooks';
import { followEvents } from '../live';
import { scopeReason, type Scope } from '../scopes';

/** Outcomes are looked for among this many of the newest events, then followed live. */
const OUTCOME_WINDOW = 1000;

export function SchedulesPage() {
  return (
    <Page
      title="Schedules"
      intro="Set a resource's state or publish an event at a time, or again and again by cron."
      needs={['schedules:manage']}
      what="Managing schedules"
    >
      <SchedulesView />
    </Page>
  );
}

function actionScope(action: ScheduleAction): Scope {
  return action.type === 'set_state' ? 'resources:write' : 'events:write';
}

function describeAction(action: ScheduleAction): string {
  return action.type === 'set_state' ? `set ${action.resourceId} to ${formatState(action.state)}` : `publish ${action.eventType}`;
}

/** Paused by the user, or stopped by the service when the credential it acted on ended (enabling it again resumes it). */
function scheduleStatus(schedule: Schedule): string {
  if (schedule.disabledReason) return `stopped by the service: ${schedule.disabledReason.replace('_', ' ')}`;
  return schedule.enabled ? 'enabled' : 'paused';
}

function CronWords({ cron, timezone }: { cron: string; timezone: string }) {
  const reading = readCron(cron, timezone, 3);
  return 'error' in reading ? <span class="reason">{reading.error}</span> : <span>{reading.description}</span>;
}

function SchedulesView() {
  const client = useClient();
  const schedules = useLoad((signal) => client.listSchedules(undefined, { signal }), [client]);
  const [creating, setCreating] = useState(false);
  return (
    <>
      <div class="toolbar">
        <button type="button" onClick={() => setCreating(true)} disabled={creating}>
          New schedule
        </button>
      </div>
      {creating && <CreateSchedule onDone={() => setCreating(false)} onCreated={schedules.reload} />}
      {schedules.loading && <Busy label="Loading schedules" />}
      <ErrorNotice error={schedules.error} title="The schedules could not be read" />
      {schedules.data?.data.length === 0 && <p class="empty">No schedules yet.</p>}
      {schedules.data?.data.map((schedule) => (
        <ScheduleCard key={schedule.id} schedule={schedule} onChanged={schedules.reload} />
      ))}
      <RecentOutcomes />
    </>
  );
}

function ScheduleCard({ schedule, onChanged }: { schedule: Schedule; onChanged: () => void }) {
  const client = useClient();
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [execution, setExecution] = useState<{ outcome: string; error?: string; eventId: number; executedAt: string } | undefined>(undefined);
  const action = useAction();
  const titleId = `schedule-${schedule.id}-title`;
  const run = async () => {
    setExecution(undefined);
    const result = await action.run(() => client.runSchedule({ path: { id: schedule.id } }));
    if (result) {
      setExecution(result);
      onChanged();
    }
  };
  const setEnabled = async (enabled: boolean) => {
    if (await action.run(() => client.updateSchedule({ path: { id: schedule.id }, body: { enabled } }))) onChanged();
  };
  const remove = async () => {
    const removed = await action.run(() => client.deleteSchedule({ path: { id: schedule.id } }).then(() => true));
    setConfirmDelete(false);
    if (removed) onChanged();
  };
  return (
    <section class="card" aria-labelledby={titleId} data-schedule-id={schedule.id}>
      <div class="card-head">
        <h2 id={titleId}>{schedule.name}</h2>
        <span class={schedule.enabled && !schedule.disabledReason ? 'pill pill-ok' : 'pill pill-off'}>{scheduleStatus(schedule)}</span>
      </div>
      <dl class="facts">
        <dt>When</dt>
        <dd>
          {schedule.cron !== null ? (
            <>
              <code>{schedule.cron}</code> · <CronWords cron={schedule.cron} timezone={schedule.timezone} />
            </>
          ) : (
            <>
              once, at <Time value={schedule.at} />
            </>
          )}
        </dd>
        <dt>Does</dt>
        <dd>{describeAction(schedule.action)}</dd>
        <dt>Next run</dt>
        <dd>
          <Time value={schedule.nextRunAt} empty="none" />
        </dd>
        <dt>Last run</dt>
        <dd>
          <Time value={schedule.lastRunAt} empty="never" />
        </dd>
      </dl>
      <div class="actions">
        <GuardedButton needs={['schedules:manage', actionScope(schedule.action)]} type="button" busy={action.busy} onClick={run}>
          Run now<span class="visually-hidden"> {schedule.name}</span>
        </GuardedButton>
        {schedule.enabled && !schedule.disabledReason ? (
          <button type="button" class="secondary" disabled={action.busy} onClick={() => setEnabled(false)}>
            Pause<span class="visually-hidden"> {schedule.name}</span>
          </button>
        ) : (
          <GuardedButton
            needs={['schedules:manage', actionScope(schedule.action)]}
            type="button"
            class="secondary"
            busy={action.busy}
            onClick={() => setEnabled(true)}
          >
            Enable<span class="visually-hidden"> {schedule.name}</span>
          </GuardedButton>
        )}
        <button type="button" class="danger-outline" onClick={() => setConfirmDelete(true)}>
          Delete<span class="visually-hidden"> {schedule.name}</span>
        </button>
      </div>
      {schedule.disabledReason && <p class="hint">Enabling it again makes the connected key the credential it runs on.</p>}
      {action.busy && <Busy label="Working" />}
      <ErrorNotice error={action.error} title="That did not work" />
      {execution && (
        <Notice kind={execution.outcome === 'succeeded' ? 'success' : 'warning'}>
          <p>
            Ran at {formatTime(execution.executedAt)}: <strong>{execution.outcome}</strong>
            {execution.error ? ` (${execution.error})` : ''}, event #{execution.eventId}.
          </p>
        </Notice>
      )}
      {confirmDelete && (
        <ConfirmDialog
          title={`Delete ${schedule.name}?`}
          confirmLabel="Delete schedule"
          busy={action.busy}
          onConfirm={remove}
          onCancel={() => setConfirmDelete(false)}
        >
          <p>It will not run again.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}

function CreateSchedule({ onDone, onCreated }: { onDone: () => void; onCreated: () => void }) {
  const client = useClient();
  const { key } = useConnection();
  const canListResources = scopeReason(key?.credential, ['resources:read']) === undefined;
  const resources = useLoad(
    async (signal) => (canListResources ? (await client.listResources({ query: { limit: 500 } }, { signal })).data : []),
    [client, canListResources],
  );
  const [name, setName] = useState('');
  const [timing, setTiming] = useState<'at' | 'cron'>('cron');
  const [at, setAt] = useState('');
  const [cron, setCron] = useState('0 7 * * 1-5');
  const [timezone, setTimezone] = useState('UTC');
  const [kind, setKind] = useState<ScheduleAction['type']>('set_state');
  const [resourceId, setResourceId] = useState('');
  const [state, setState] = useState<StateValue>(false);
  const [eventName, setEventName] = useState('');
  const [data, setData] = useState('{}');
  const action = useAction();
  const resource: Resource | undefined = resources.data?.find((entry) => entry.id === resourceId);

  useEffect(() => {
    const first = resources.data?.[0];
    if (first && resourceId === '') {
      setResourceId(first.id);
      setState(defaultState(first.type));
    }
  }, [resources.data]);

  const reading = timing === 'cron' ? readCron(cron, timezone) : undefined;
  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await action.run(async () => {
      const scheduleAction: ScheduleAction =
        kind === 'set_state'
          ? { type: 'set_state', resourceId, state }
          : { type: 'publish_event', eventType: `custom.${eventName.trim()}`, data: parseJsonObject(data, 'Data') };
      if (timing === 'at' && at === '') throw new Error('Choose the time of the run');
      const when = timing === 'cron' ? { cron: cron.trim() } : { at: new Date(at).toISOString() };
      return client.createSchedule({ body: { name, timezone, action: scheduleAction, ...when } });
    });
    if (created) {
      onCreated();
      onDone();
    }
  };
  return (
    <Section title="New schedule" id="create-schedule-title">
      <form class="form" onSubmit={submit}>
        <div class="field">
          <label for="schedule-name">Name</label>
          <input id="schedule-name" required maxLength={100} value={name} onInput={(event) => setName(event.currentTarget.value)} />
        </div>
        <fieldset class="field">
          <legend>When</legend>
          <div class="inline-choices">
            <label>
              <input type="radio" name="schedule-timing" checked={timing === 'cron'} onChange={() => setTiming('cron')} /> Repeatedly (cron)
            </label>
            <label>
              <input type="radio" name="schedule-timing" checked={timing === 'at'} onChange={() => setTiming('at')} /> Once, at a time
            </label>
          </div>
        </fieldset>
        {timing === 'cron' ? (
          <div class="field">
            <label for="schedule-cron">Cron expression</label>
            <input
              id="schedule-cron"
              required
              value={cron}
              spellcheck={false}
              onInput={(event) => setCron(event.currentTarget.value)}
              aria-describedby="schedule-cron-reading"
            />
            <div id="schedule-cron-reading" class="cron-reading" aria-live="polite">
              {reading && 'error' in reading ? (
                <span class="reason">{reading.error}</span>
              ) : reading ? (
                <>
                  <strong>{reading.description}</strong>
                  <span class="muted"> · next runs:</span>
                  <ol class="next-runs">
                    {reading.nextRuns.map((run) => (
                      <li key={run.toISOString()}>
                        <Time value={run.toISOString()} />
                      </li>
                    ))}
                  </ol>
                </>
              ) : null}
            </div>
          </div>
        ) : (
          <div class="field">
            <label for="schedule-at">Time (your browser's time zone)</label>
            <input id="schedule-at" type="datetime-local" required value={at} onInput={(event) => setAt(event.currentTarget.value)} />
          </div>
        )}
        <div class="field">
          <label for="schedule-timezone">Time zone</label>
          <input
            id="schedule-timezone"
            list="schedule-timezones"
            required
            value={timezone}
            onInput={(event) => setTimezone(event.currentTarget.value)}
            aria-describedby="schedule-timezone-hint"
          />
          <datalist id="schedule-timezones">
            {knownTimezones().map((zone) => (
              <option key={zone} value={zone} />
            ))}
          </datalist>
          <span class="hint" id="schedule-timezone-hint">
            An IANA name such as Europe/Berlin; the cron expression is read in it.
          </span>
        </div>
        <fieldset class="field">
          <legend>Action</legend>
          <div class="inline-choices">
            <label>
              <input type="radio" name="schedule-action" checked={kind === 'set_state'} onChange={() => setKind('set_state')} /> Set a resource's state
            </label>
            <label>
              <input type="radio" name="schedule-action" checked={kind === 'publish_event'} onChange={() => setKind('publish_event')} /> Publish a custom event
            </label>
          </div>
        </fieldset>
        {kind === 'set_state' ? (
          <>
            {resources.loading && <Busy label="Loading resources" />}
            <ErrorNotice error={resources.error} title="The resources could not be read" />
            {canListResources ? (
              <div class="field">
                <label for="schedule-resource">Resource</label>
                <select
                  id="schedule-resource"
                  required
                  value={resourceId}
                  onChange={(event) => {
                    const id = event.currentTarget.value;
                    setResourceId(id);
                    const chosen = resources.data?.find((entry) => entry.id === id);
                    if (chosen) setState(defaultState(chosen.type));
                  }}
                >
                  {resources.data?.length === 0 && <option value="">No resources yet</option>}
                  {resources.data?.map((entry) => (
                    <option key={entry.id} value={entry.id}>
                      {entry.name} ({entry.type})
                    </option>
                  ))}
                </select>
              </div>
            ) : (
              <div class="field">
                <label for="schedule-resource-id">Resource id</label>
                <input id="schedule-resource-id" required value={resourceId} onInput={(event) => setResourceId(event.currentTarget.value)} />
              </div>
            )}
            <StateInput id="schedule-state" type={resource?.type ?? 'text'} value={state} onChange={setState} />
          </>
        ) : (
          <>
            <div class="field">
              <label for="schedule-event">Event type</label>
              <div class="prefixed">
                <span aria-hidden="true">custom.</span>
                <input
                  id="schedule-event"
                  required
                  pattern="[A-Za-z0-9_.:\-]{1,100}"
                  value={eventName}
                  onInput={(event) => setEventName(event.currentTarget.value)}
                />
              </div>
            </div>
            <div class="field">
              <label for="schedule-data">Data (JSON object)</label>
              <textarea id="schedule-data" rows={3} spellcheck={false} value={data} onInput={(event) => setData(event.currentTarget.value)} />
            </div>
          </>
        )}
        <ErrorNotice error={action.error} title="The schedule was not created" />
        <FormActions
          busy={action.busy}
          label="Create schedule"
          busyLabel="Creating…"
          onCancel={onDone}
          needs={['schedules:manage', kind === 'set_state' ? 'resources:write' : 'events:write']}
        />
      </form>
    </Section>
  );
}

function RecentOutcomes() {
  const client = useClient();
  const { key } = useConnection();
  const reason = scopeReason(key?.credential, ['events:read']);
  const [outcomes, setOutcomes] = useState<DevdataEvent[]>([]);
  const history = useAction();
  useEffect(() => {
    if (reason) return;
    const controller = new AbortController();
    const add = (added: DevdataEvent[]) =>
      setOutcomes((current) =>
        [...added, ...current]
          .filter((event, index, all) => all.findIndex((other) => other.id === event.id) === index)
          .sort((a, b) => b.id - a.id)
          .slice(0, 50),
      );
    followEvents(client, {
      type: 'schedule.executed',
      signal: controller.signal,
      onEvent: (event) => add([event]),
      onStatus: () => {},
      onStart: (cursor) =>
        void history.run(async () => {
          const oldest = (await client.listEvents({ query: { after: cursor, limit: 1 } })).oldestCursor;
          const page = await client.listEvents({
            query: { after: Math.max(oldest, cursor - OUTCOME_WINDOW), limit: OUTCOME_WINDOW, type: 'schedule.executed' },
          });
          add(page.data.filter((event) => event.id <= cursor));
        }),
    });
    return () => controller.abort();
  }, [client, reason]);
  return (
    <Section title="Recent outcomes" id="outcomes-title">
      {reason ? (
        <p class="reason">Outcomes are read from the events: {reason}</p>
      ) : (
        <>
          {history.busy && <Busy label="Reading recent runs" />}
          <ErrorNotice error={history.error} title="Recent runs could not be read" />
          <div class="table-wrap" tabIndex={0}>
            <table>
              <caption>Runs of every schedule, newest first (live)</caption>
              <thead>
                <tr>
                  <th scope="col">Schedule</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Scheduled for</th>
                  <th scope="col">Ran at</th>
                  <th scope="col">Event</th>
                </tr>
              </thead>
              <tbody>
                {outcomes.length === 0 && (
                  <tr>
                    <td colSpan={5} class="empty">
                      No runs among the latest events.
                    </td>
                  </tr>
                )}
                {outcomes.map((event) =>
                  event.type === 'schedule.executed' ? (
                    <tr key={event.id}>
                      <td>{event.data.schedule.name}</td>
                      <td>
                        <span class={event.data.outcome === 'succeeded' ? 'pill pill-ok' : 'pill pill-bad'}>{event.data.outcome}</span>
                        {event.data.error && <div class="small">{event.data.error}</div>}
                      </td>
                      <td>
                        <Time value={event.data.scheduledFor} />
                      </td>
                      <td>
                        <Time value={event.data.executedAt} />
                      </td>
                      <td>#{event.id}</td>
                    </tr>
                  ) : null,
                )}
              </tbody>
            </table>
          </div>
        </>
      )}
    </Section>
  );
}
