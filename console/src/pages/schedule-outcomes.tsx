// Runs of every schedule: the schedule.executed events among the newest, then followed live (the
// schedules page refreshes its cards by them too), and the table of recent outcomes.
import type { DevdataEvent, ScheduleExecutedEvent } from '@devdata/client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { Busy, ErrorNotice } from '../components/feedback';
import { Time } from '../components/format';
import { Section } from '../components/page';
import { useClient, useConnection } from '../connection-context';
import { type Action, useAction } from '../hooks';
import { followEvents } from '../live';
import { Link } from '../router';
import { scopeReason } from '../scopes';

/** Outcomes are looked for among this many of the newest events, then followed live. */
const OUTCOME_WINDOW = 1000;
/** The table lists this many runs. */
const SHOWN = 50;

export type ScheduleRun = ScheduleExecutedEvent;

export interface ScheduleOutcomes {
  /** Newest first. */
  runs: ScheduleRun[];
  /** Why runs cannot be followed (the key lacks events:read), or undefined. */
  reason: string | undefined;
  history: Action;
}

/** The latest run of each schedule among `runs`. */
export function latestRunOf(runs: ScheduleRun[], scheduleId: string): ScheduleRun | undefined {
  return runs.find((run) => run.data.schedule.id === scheduleId);
}

/** Follows schedule runs live; `onRun` is told of each new one (after the history was read). */
export function useScheduleOutcomes(onRun: (run: ScheduleRun) => void): ScheduleOutcomes {
  const client = useClient();
  const { key } = useConnection();
  const reason = scopeReason(key?.credential, ['events:read']);
  const [runs, setRuns] = useState<ScheduleRun[]>([]);
  const history = useAction();
  const onRunRef = useRef(onRun);
  onRunRef.current = onRun;
  useEffect(() => {
    if (reason) return;
    const controller = new AbortController();
    const add = (added: DevdataEvent[]) =>
      setRuns((current) =>
        [...added.filter((event): event is ScheduleRun => event.type === 'schedule.executed'), ...current]
          .filter((event, index, all) => all.findIndex((other) => other.id === event.id) === index)
          .sort((a, b) => b.id - a.id)
          .slice(0, SHOWN),
      );
    followEvents(client, {
      type: 'schedule.executed',
      signal: controller.signal,
      onEvent: (event) => {
        add([event]);
        if (event.type === 'schedule.executed') onRunRef.current(event);
      },
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
  return { runs, reason, history };
}

export function OutcomePill({ run }: { run: ScheduleRun }) {
  return <span class={run.data.outcome === 'succeeded' ? 'pill pill-ok' : 'pill pill-bad'}>{run.data.outcome}</span>;
}

export function RecentOutcomes({ outcomes }: { outcomes: ScheduleOutcomes }) {
  const { runs, reason, history } = outcomes;
  return (
    <Section title="Recent outcomes" id="outcomes-title">
      {reason ? (
        <p class="reason">Outcomes are read from the events: {reason}</p>
      ) : (
        <>
          {history.busy && <Busy label="Reading recent runs" />}
          <ErrorNotice error={history.error} title="Recent runs could not be read" />
          <DataList
            caption="Runs of every schedule, newest first (live)"
            rows={runs}
            rowKey={(run) => run.id}
            rowAttributes={(run) => ({ 'data-run-event-id': String(run.id) })}
            empty="No runs among the latest events."
            columns={[
              {
                label: 'Schedule',
                role: 'name',
                cell: (run) => (
                  <Link to="schedules" show={run.data.schedule.id}>
                    {run.data.schedule.name}
                  </Link>
                ),
              },
              {
                label: 'Outcome',
                role: 'value',
                cell: (run) => (
                  <>
                    <OutcomePill run={run} />
                    {run.data.error && <div class="small">{run.data.error}</div>}
                  </>
                ),
              },
              { label: 'Scheduled for', cell: (run) => <Time value={run.data.scheduledFor} /> },
              { label: 'Ran at', cell: (run) => <Time value={run.data.executedAt} /> },
              {
                label: 'Event',
                cell: (run) => (
                  <Link to="events" show={run.id}>
                    #{run.id}
                  </Link>
                ),
              },
            ]}
          />
        </>
      )}
    </Section>
  );
}
