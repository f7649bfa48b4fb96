// Schedules page: each schedule as a card, kept current by its runs (when, what it does, next and
// last run with its outcome; run now, edit, pause, enable, delete), the form and recent outcomes.
import { describeScheduleAction, type Schedule, type ScheduleAction, scheduleRanOnce, scheduleStatus } from '@devdata/client';
import { useEffect, useState } from 'preact/hooks';
import { ConfirmDialog } from '../components/dialog';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { formatTime, Time } from '../components/format';
import { Page } from '../components/page';
import { GuardedButton } from '../components/scope-gate';
import { useClient } from '../connection-context';
import { readCron } from '../cron';
import { useAction, useInterval, useLoad } from '../hooks';
import { type Names, ObjectLink, useNames, useShownElement } from '../names';
import { Link } from '../router';
import type { Scope } from '../scopes';
import { ScheduleForm } from './schedule-create-form';
import { latestRunOf, OutcomePill, RecentOutcomes, type ScheduleRun, useScheduleOutcomes } from './schedule-outcomes';

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

function CronWords({ cron, timezone }: { cron: string; timezone: string }) {
  const reading = readCron(cron, timezone, 3);
  return 'error' in reading ? <span class="reason">{reading.error}</span> : <span>{reading.description}</span>;
}

/** How often the list is read again when runs cannot be followed live (the key lacks events:read). */
const POLL_MS = 15_000;
/** After a schedule's next run is due, its card is read again this much later (the run has happened by then). */
const AFTER_DUE_MS = 1500;

/** A one-shot schedule whose time has passed: enabling it needs a new time (an edit). */
function timePassed(schedule: Schedule): boolean {
  return schedule.at !== null && Date.parse(schedule.at) <= Date.now();
}

function SchedulesView() {
  const client = useClient();
  const schedules = useLoad((signal) => client.listSchedules(undefined, { signal }), [client]);
  // The form at the top: a new schedule, or the one being edited (one form at a time).
  const [form, setForm] = useState<'new' | Schedule | undefined>(undefined);
  // Cards follow the runs: each run read from the stream reads the list again.
  const outcomes = useScheduleOutcomes(() => schedules.reload());
  useInterval(schedules.reload, POLL_MS, outcomes.reason !== undefined);
  // And the next run that falls due: its card moves on to the run after it.
  const nextDue = schedules.data?.data
    .map((schedule) => (schedule.nextRunAt ? Date.parse(schedule.nextRunAt) : Number.POSITIVE_INFINITY))
    .reduce((earliest, time) => Math.min(earliest, time), Number.POSITIVE_INFINITY);
  useEffect(() => {
    if (nextDue === undefined || !Number.isFinite(nextDue)) return;
    const timer = setTimeout(schedules.reload, Math.min(Math.max(0, nextDue - Date.now()) + AFTER_DUE_MS, 2 ** 31 - 1));
    return () => clearTimeout(timer);
  }, [nextDue]);
  const names = useNames(
    (schedules.data?.data ?? []).flatMap((schedule) =>
      schedule.action.type === 'set_state' ? [{ kind: 'resource' as const, id: schedule.action.resourceId }] : [],
    ),
  );
  return (
    <>
      <div class="toolbar">
        <button type="button" onClick={() => setForm('new')} disabled={form === 'new'}>
          New schedule
        </button>
      </div>
      {form && (
        <ScheduleForm
          key={form === 'new' ? 'new' : form.id}
          schedule={form === 'new' ? undefined : form}
          onDone={() => setForm(undefined)}
          onSaved={schedules.reload}
        />
      )}
      {schedules.loading && !schedules.data && <Busy label="Loading schedules" />}
      <ErrorNotice error={schedules.error} title="The schedules could not be read" />
      {schedules.data?.data.length === 0 && <p class="empty">No schedules yet.</p>}
      {schedules.data?.data.map((schedule) => (
        <ScheduleCard
          key={schedule.id}
          schedule={schedule}
          lastRun={latestRunOf(outcomes.runs, schedule.id)}
          names={names}
          onEdit={() => setForm(schedule)}
          onChanged={schedules.reload}
        />
      ))}
      <RecentOutcomes outcomes={outcomes} />
    </>
  );
}

/** What the schedule does, in the client's words, with the resource by its name, linked. */
function ActionWords({ action, names }: { action: ScheduleAction; names: Names }) {
  if (action.type !== 'set_state') return <>{describeScheduleAction(action)}</>;
  // The words around the resource: the client's sentence with a mark where the resource goes.
  const [before, after] = describeScheduleAction({ ...action, resourceId: RESOURCE_MARK }).split(RESOURCE_MARK);
  return (
    <>
      {before}
      <ObjectLink names={names} kind="resource" id={action.resourceId} />
      {after}
    </>
  );
}
const RESOURCE_MARK = '\u0000';

function ScheduleCard({
  schedule,
  lastRun,
  names,
  onEdit,
  onChanged,
}: {
  schedule: Schedule;
  lastRun: ScheduleRun | undefined;
  names: Names;
  onEdit: () => void;
  onChanged: () => void;
}) {
  const client = useClient();
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [execution, setExecution] = useState<{ outcome: string; error?: string; eventId: number; executedAt: string } | undefined>(undefined);
  const action = useAction();
  const { ref, shown } = useShownElement<HTMLElement>(schedule.id);
  const titleId = `schedule-${schedule.id}-title`;
  const done = scheduleRanOnce(schedule);
  const active = schedule.enabled && !schedule.disabledReason;
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
    <section class={shown ? 'card shown' : 'card'} aria-labelledby={titleId} data-schedule-id={schedule.id} ref={ref} tabIndex={-1}>
      <div class="card-head">
        <h2 id={titleId}>{schedule.name}</h2>
        <span class={done || active ? 'pill pill-ok' : 'pill pill-off'}>{scheduleStatus(schedule)}</span>
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
        <dd>
          <ActionWords action={schedule.action} names={names} />
        </dd>
        <dt>Next run</dt>
        <dd class="next-run">{done ? 'none: it ran once' : <Time value={schedule.nextRunAt} empty="none" />}</dd>
        <dt>Last run</dt>
        <dd class="last-run">
          <Time value={schedule.lastRunAt} empty="never" />
          {lastRun && (
            <>
              {' '}
              <OutcomePill run={lastRun} />
              {lastRun.data.error && <span class="small"> {lastRun.data.error}</span>}{' '}
              <Link to="events" show={lastRun.id}>
                event #{lastRun.id}
              </Link>
            </>
          )}
        </dd>
      </dl>
      <div class="actions">
        <GuardedButton needs={['schedules:manage', actionScope(schedule.action)]} type="button" busy={action.busy} onClick={run}>
          Run now<span class="visually-hidden"> {schedule.name}</span>
        </GuardedButton>
        <button type="button" class="secondary" onClick={onEdit}>
          Edit<span class="visually-hidden"> {schedule.name}</span>
        </button>
        {active ? (
          <button type="button" class="secondary" disabled={action.busy} onClick={() => setEnabled(false)}>
            Pause<span class="visually-hidden"> {schedule.name}</span>
          </button>
        ) : (
          !timePassed(schedule) && (
            <GuardedButton
              needs={['schedules:manage', actionScope(schedule.action)]}
              type="button"
              class="secondary"
              busy={action.busy}
              onClick={() => setEnabled(true)}
            >
              Enable<span class="visually-hidden"> {schedule.name}</span>
            </GuardedButton>
          )
        )}
        <button type="button" class="danger-outline" onClick={() => setConfirmDelete(true)}>
          Delete<span class="visually-hidden"> {schedule.name}</span>
        </button>
      </div>
      {!active && !done && timePassed(schedule) && <p class="hint">Its time has passed: Edit gives it a new one, and saving that enables it again.</p>}
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
