// Schedules page: each schedule as a card (when, what it does, next and last run; run now, pause, enable, delete), the create form and recent outcomes.
import type { Schedule, ScheduleAction } from '@devdata/client';
import { useState } from 'preact/hooks';
import { ConfirmDialog } from '../components/dialog';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { formatState, formatTime, Time } from '../components/format';
import { Page } from '../components/page';
import { GuardedButton } from '../components/scope-gate';
import { useClient } from '../connection-context';
import { readCron } from '../cron';
import { useAction, useLoad } from '../hooks';
import type { Scope } from '../scopes';
import { CreateSchedule } from './schedule-create-form';
import { RecentOutcomes } from './schedule-outcomes';

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
