// Usage per day (requests, errors, events, webhook deliveries) as a chart and a table.
import { useMemo, useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { Busy, ErrorNotice } from '../components/feedback';
import { Page, Section } from '../components/page';

import { UsageChart, type UsageSeries } from '../components/usage-chart';
import { useClient } from '../connection-context';
import { useLoad } from '../hooks';

const PERIODS = [7, 30, 90];

export function UsagePage() {
  return (
    <Page
      title="Usage"
      intro="What the account did per UTC day: authenticated requests, of which errors (4xx and 5xx), events created and webhook delivery attempts."
      needs={['usage:read']}
      what="Reading usage"
    >
      <UsageView />
    </Page>
  );
}

function UsageView() {
  const client = useClient();
  const [days, setDays] = useState(30);
  const usage = useLoad((signal) => client.getUsage({ query: { days } }, { signal }), [client, days]);
  const chart = useMemo(() => {
    const data = usage.data?.data ?? [];
    const series: UsageSeries[] = [
      { label: 'Requests', colorVariable: '--series-1', values: data.map((day) => day.requests) },
      { label: 'Errors', colorVariable: '--series-2', values: data.map((day) => day.errors) },
      { label: 'Events', colorVariable: '--series-3', values: data.map((day) => day.eventsCreated) },
      { label: 'Webhook deliveries', colorVariable: '--series-4', values: data.map((day) => day.webhookDeliveries) },
    ];
    return { days: data.map((day) => day.date), series };
  }, [usage.data]);
  return (
    <>
      <div class="toolbar">
        <div class="field field-inline">
          <label for="usage-days">Period</label>
          <select id="usage-days" value={days} onChange={(event) => setDays(Number(event.currentTarget.value))}>
            {PERIODS.map((period) => (
              <option key={period} value={period}>
                last {period} days
              </option>
            ))}
          </select>
        </div>
        <button type="button" class="secondary" onClick={usage.reload}>
          Refresh
        </button>
      </div>
      {usage.loading && <Busy label="Loading usage" />}
      <ErrorNotice error={usage.error} title="Usage could not be read" />
      {usage.data && (
        <>
          <Section title={`Per day, last ${days} days`} id="usage-chart-title">
            <UsageChart
              days={chart.days}
              series={chart.series}
              label={`Line chart of requests, errors, events and webhook deliveries per day over the last ${days} days; the table below has the numbers.`}
            />
          </Section>
          <Section title="Totals and days" id="usage-table-title">
            <dl class="facts totals">
              <dt>Requests</dt>
              <dd>{usage.data.totals.requests}</dd>
              <dt>Errors</dt>
              <dd>{usage.data.totals.errors}</dd>
              <dt>Events</dt>
              <dd>{usage.data.totals.eventsCreated}</dd>
              <dt>Webhook deliveries</dt>
              <dd>{usage.data.totals.webhookDeliveries}</dd>
            </dl>
            <DataList
              class="numbers"
              caption="Usage per UTC day, newest first"
              rows={[...usage.data.data].reverse()}
              rowKey={(day) => day.date}
              rowAttributes={(day) => ({ 'data-day': day.date })}
              empty="No days."
              columns={[
                { label: 'Day', role: 'name', cell: (day) => day.date },
                { label: 'Requests', role: 'value', class: 'requests', labelInCard: true, cell: (day) => day.requests },
                { label: 'Errors', cell: (day) => day.errors },
                { label: 'Events', cell: (day) => day.eventsCreated },
                { label: 'Webhook deliveries', cell: (day) => day.webhookDeliveries },
              ]}
            />
          </Section>
        </>
      )}
    </>
  );
}
