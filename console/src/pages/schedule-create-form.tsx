// The schedule form, for a new schedule or changes to one: at a time or by cron (read out in words
// with the next runs), setting a resource's state or publishing a custom event.
import type { DevdataClient, Resource, Schedule, ScheduleAction } from '@devdata/client';
import { useEffect, useState } from 'preact/hooks';
import { FormActions } from '../components/forms';
import { Busy, ErrorNotice } from '../components/feedback';
import { FieldError, fieldProps } from '../components/field-error';
import { Time } from '../components/format';
import { Section } from '../components/page';
import { defaultState, StateInput, type StateValue } from '../components/state-input';
import { useClient, useConnection } from '../connection-context';
import { knownTimezones, readCron, timezoneProblem } from '../cron';
import { parseJsonObject } from '../errors';
import { useAction, useLoad } from '../hooks';
import { scopeReason } from '../scopes';

type UpdateScheduleBody = Parameters<DevdataClient['updateSchedule']>[0]['body'];

/** A time as a `datetime-local` input holds it: the browser's local time, to the minute. */
function localInputTime(iso: string): string {
  const date = new Date(iso);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** What a PATCH needs to send: the fields that differ from the schedule as stored. */
function changesOf(schedule: Schedule, wanted: Required<Pick<UpdateScheduleBody, 'name' | 'timezone' | 'action'>> & { cron?: string; at?: string }) {
  const changes: UpdateScheduleBody = {};
  if (wanted.name.trim() !== schedule.name) changes.name = wanted.name;
  if (wanted.cron !== undefined && wanted.cron !== schedule.cron) changes.cron = wanted.cron;
  if (wanted.at !== undefined && wanted.at !== schedule.at) changes.at = wanted.at;
  if (wanted.timezone !== schedule.timezone) changes.timezone = wanted.timezone;
  if (JSON.stringify(wanted.action) !== JSON.stringify(schedule.action)) changes.action = wanted.action;
  return changes;
}

/** A new schedule, or with `schedule` the changes to that one (only what differs is sent). */
export function ScheduleForm({ schedule, onDone, onSaved }: { schedule?: Schedule; onDone: () => void; onSaved: () => void }) {
  const client = useClient();
  const { key } = useConnection();
  const canListResources = scopeReason(key?.credential, ['resources:read']) === undefined;
  const resources = useLoad(
    async (signal) => (canListResources ? (await client.listResources({ query: { limit: 500 } }, { signal })).data : []),
    [client, canListResources],
  );
  const was = schedule?.action;
  const [name, setName] = useState(schedule?.name ?? '');
  const [timing, setTiming] = useState<'at' | 'cron'>(schedule?.at ? 'at' : 'cron');
  const [at, setAt] = useState(schedule?.at ? localInputTime(schedule.at) : '');
  const [cron, setCron] = useState(schedule?.cron ?? '0 7 * * 1-5');
  const [timezone, setTimezone] = useState(schedule?.timezone ?? 'UTC');
  const [kind, setKind] = useState<ScheduleAction['type']>(was?.type ?? 'set_state');
  const [resourceId, setResourceId] = useState(was?.type === 'set_state' ? was.resourceId : '');
  const [state, setState] = useState<StateValue>(was?.type === 'set_state' ? was.state : false);
  const [eventName, setEventName] = useState(was?.type === 'publish_event' ? was.eventType.replace(/^custom\./, '') : '');
  const [data, setData] = useState(was?.type === 'publish_event' ? JSON.stringify(was.data, null, 2) : '{}');
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
  const zoneProblem = timezoneProblem(timezone);
  const submit = async (event: Event) => {
    event.preventDefault();
    const saved = await action.run(async () => {
      const scheduleAction: ScheduleAction =
        kind === 'set_state'
          ? { type: 'set_state', resourceId, state }
          : { type: 'publish_event', eventType: `custom.${eventName.trim()}`, data: parseJsonObject(data, 'Data') };
      if (timing === 'at' && at === '') throw new Error('Choose the time of the run');
      const when = timing === 'cron' ? { cron: cron.trim() } : { at: new Date(at).toISOString() };
      if (!schedule) return client.createSchedule({ body: { name, timezone, action: scheduleAction, ...when } });
      const changes = changesOf(schedule, { name, timezone, action: scheduleAction, ...when });
      // Nothing changed: nothing to send (a PATCH without fields is refused).
      if (Object.keys(changes).length === 0) return schedule;
      return client.updateSchedule({ path: { id: schedule.id }, body: changes });
    });
    if (saved) {
      onSaved();
      onDone();
    }
  };
  return (
    <Section title={schedule ? `Edit ${schedule.name}` : 'New schedule'} id="schedule-form-title">
      <form class="form" onSubmit={submit}>
        <div class="field">
          <label for="schedule-name">Name</label>
          <input
            id="schedule-name"
            required
            maxLength={100}
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
            {...fieldProps(action.error, '/name', 'schedule-name')}
          />
          <FieldError error={action.error} path="/name" id="schedule-name" />
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
              {...fieldProps(action.error, '/cron', 'schedule-cron', 'schedule-cron-reading')}
            />
            <div id="schedule-cron-reading" class="cron-reading" aria-live="polite">
              {reading && 'error' in reading ? (
                <span class="reason">{reading.error}</span>
              ) : reading ? (
                <>
                  <strong>{reading.description}</strong>
                  {zoneProblem ? (
                    <span class="muted"> · the next runs show once the time zone is valid.</span>
                  ) : (
                    <>
                      <span class="muted"> · next runs:</span>
                      <ol class="next-runs">
                        {reading.nextRuns.map((run) => (
                          <li key={run.toISOString()}>
                            <Time value={run.toISOString()} />
                          </li>
                        ))}
                      </ol>
                    </>
                  )}
                </>
              ) : null}
            </div>
            <FieldError error={action.error} path="/cron" id="schedule-cron" />
          </div>
        ) : (
          <div class="field">
            <label for="schedule-at">Time (your browser's time zone)</label>
            <input
              id="schedule-at"
              type="datetime-local"
              required
              value={at}
              onInput={(event) => setAt(event.currentTarget.value)}
              {...fieldProps(action.error, '/at', 'schedule-at')}
            />
            <FieldError error={action.error} path="/at" id="schedule-at" />
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
            aria-invalid={zoneProblem ? true : undefined}
            {...fieldProps(
              action.error,
              '/timezone',
              'schedule-timezone',
              zoneProblem ? 'schedule-timezone-hint schedule-timezone-problem' : 'schedule-timezone-hint',
            )}
          />
          <datalist id="schedule-timezones">
            {knownTimezones().map((zone) => (
              <option key={zone} value={zone} />
            ))}
          </datalist>
          <span class="hint" id="schedule-timezone-hint">
            An IANA name such as Europe/Berlin; the cron expression is read in it.
          </span>
          {zoneProblem && (
            <span class="field-problem" id="schedule-timezone-problem" role="status">
              {zoneProblem}
            </span>
          )}
          <FieldError error={action.error} path="/timezone" id="schedule-timezone" />
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
                  {...fieldProps(action.error, '/action/resourceId', 'schedule-resource')}
                >
                  {resources.data?.length === 0 && <option value="">No resources yet</option>}
                  {resources.data?.map((entry) => (
                    <option key={entry.id} value={entry.id}>
                      {entry.name} ({entry.type})
                    </option>
                  ))}
                </select>
                <FieldError error={action.error} path="/action/resourceId" id="schedule-resource" />
              </div>
            ) : (
              <div class="field">
                <label for="schedule-resource-id">Resource id</label>
                <input
                  id="schedule-resource-id"
                  required
                  value={resourceId}
                  onInput={(event) => setResourceId(event.currentTarget.value)}
                  {...fieldProps(action.error, '/action/resourceId', 'schedule-resource-id')}
                />
                <FieldError error={action.error} path="/action/resourceId" id="schedule-resource-id" />
              </div>
            )}
            <StateInput id="schedule-state" type={resource?.type ?? 'text'} value={state} onChange={setState} error={action.error} path="/action/state" />
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
                  {...fieldProps(action.error, '/action/eventType', 'schedule-event')}
                />
              </div>
              <FieldError error={action.error} path="/action/eventType" id="schedule-event" />
            </div>
            <div class="field">
              <label for="schedule-data">Data (JSON object)</label>
              <textarea
                id="schedule-data"
                rows={3}
                spellcheck={false}
                value={data}
                onInput={(event) => setData(event.currentTarget.value)}
                {...fieldProps(action.error, '/action/data', 'schedule-data')}
              />
              <FieldError error={action.error} path="/action/data" id="schedule-data" />
            </div>
          </>
        )}
        <ErrorNotice error={action.error} title={schedule ? 'The schedule was not changed' : 'The schedule was not created'} />
        <FormActions
          busy={action.busy}
          label={schedule ? 'Save changes' : 'Create schedule'}
          busyLabel={schedule ? 'Saving…' : 'Creating…'}
          onCancel={onDone}
          needs={['schedules:manage', kind === 'set_state' ? 'resources:write' : 'events:write']}
        />
      </form>
    </Section>
  );
}
