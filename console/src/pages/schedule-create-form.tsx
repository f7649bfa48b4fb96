// The new-schedule form: at a time or by cron (read out in words with the next runs), setting a resource's state or publishing a custom event.
import type { Resource, ScheduleAction } from '@devdata/client';
import { useEffect, useState } from 'preact/hooks';
import { FormActions } from '../components/forms';
import { Busy, ErrorNotice } from '../components/feedback';
import { Time } from '../components/format';
import { Section } from '../components/page';
import { defaultState, StateInput, type StateValue } from '../components/state-input';
import { useClient, useConnection } from '../connection-context';
import { knownTimezones, readCron } from '../cron';
import { parseJsonObject } from '../errors';
import { useAction, useLoad } from '../hooks';
import { scopeReason } from '../scopes';

export function CreateSchedule({ onDone, onCreated }: { onDone: () => void; onCreated: () => void }) {
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
