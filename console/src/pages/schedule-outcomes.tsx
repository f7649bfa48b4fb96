// Recent outcomes of every schedule: the schedule.executed events among the newest, then followed live.
import type { DevdataEvent } from '@devdata/client';
import { useEffect, useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { Busy, ErrorNotice } from '../components/feedback';
import { Time } from '../components/format';
import { Section } from '../components/page';
import { useClient, useConnection } from '../connection-context';
import { useAction } from '../hooks';
import { followEvents } from '../live';
import { scopeReason } from '../scopes';

/** Outcomes are looked for among this many of the newest events, then followed live. */
const OUTCOME_WINDOW = 1000;

export function RecentOutcomes() {
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
          <DataList
            caption="Runs of every schedule, newest first (live)"
            rows={outcomes.flatMap((event) => (event.type === 'schedule.executed' ? [event] : []))}
            rowKey={(event) => event.id}
            empty="No runs among the latest events."
            columns={[
              { label: 'Schedule', role: 'name', cell: (event) => event.data.schedule.name },
              {
                label: 'Outcome',
                role: 'value',
                cell: (event) => (
                  <>
                    <span class={event.data.outcome === 'succeeded' ? 'pill pill-ok' : 'pill pill-bad'}>{event.data.outcome}</span>
                    {event.data.error && <div class="small">{event.data.error}</div>}
                  </>
                ),
              },
              { label: 'Scheduled for', cell: (event) => <Time value={event.data.scheduledFor} /> },
              { label: 'Ran at', cell: (event) => <Time value={event.data.executedAt} /> },
              { label: 'Event', cell: (event) => `#${event.id}` },
            ]}
          />
        </>
      )}
    </Section>
  );
}
