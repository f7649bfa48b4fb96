// An event's links: the resource or schedule it is about, and the webhook deliveries it made; and
// the one event a link opened the events page on (`/console/events?show=<id>`).
import { DevdataError, type DevdataEvent, type WebhookDelivery } from '@devdata/client';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { JsonBlock, Time } from '../components/format';
import { Section } from '../components/page';
import { useClient, useConnection } from '../connection-context';
import { useLoad } from '../hooks';
import { Link } from '../router';
import { scopeReason } from '../scopes';
import { summarizeEvent } from './event-summary';

/** The object an event is about, linked by its name (which the event carries). */
export function EventSubject({ event }: { event: DevdataEvent }) {
  switch (event.type) {
    case 'resource.created':
    case 'resource.updated':
      return (
        <Link to="resources" show={event.data.resource.id}>
          {event.data.resource.name}
        </Link>
      );
    case 'resource.deleted':
      // Gone: its name, not a link to nothing.
      return <span>{event.data.resource.name} (deleted)</span>;
    case 'schedule.executed':
      return (
        <Link to="schedules" show={event.data.schedule.id}>
          {event.data.schedule.name}
        </Link>
      );
    default:
      return null;
  }
}

interface EventDelivery {
  webhook: { id: string; name: string };
  delivery: WebhookDelivery;
}

/** The deliveries of one event: each webhook's kept deliveries of it (`?eventId=`). */
function useEventDeliveries(eventId: number, active: boolean) {
  const client = useClient();
  return useLoad(
    async (signal): Promise<EventDelivery[] | undefined> => {
      if (!active) return undefined;
      const webhooks = (await client.listWebhooks(undefined, { signal })).data;
      const logs = await Promise.all(
        webhooks.map(async (webhook) => ({
          webhook,
          deliveries: (await client.listWebhookDeliveries({ path: { id: webhook.id }, query: { eventId } }, { signal })).data,
        })),
      );
      return logs.flatMap(({ webhook, deliveries }) => deliveries.map((delivery) => ({ webhook: { id: webhook.id, name: webhook.name }, delivery })));
    },
    [client, eventId, active],
  );
}

export function EventDeliveries({ eventId, active }: { eventId: number; active: boolean }) {
  const deliveries = useEventDeliveries(eventId, active);
  if (!active) return null;
  if (deliveries.loading) return <Busy label="Looking for its deliveries" />;
  if (deliveries.error) return <ErrorNotice error={deliveries.error} title="The deliveries could not be read" />;
  const found = deliveries.data ?? [];
  if (found.length === 0) return <p class="muted">No webhook delivered it (or its delivery is older than the latest 500 of each webhook).</p>;
  return (
    <ul class="plain event-deliveries">
      {found.map(({ webhook, delivery }) => (
        <li key={delivery.id}>
          <Link to="webhooks" show={webhook.id}>
            {webhook.name}
          </Link>
          : <span class={`pill ${delivery.status === 'succeeded' ? 'pill-ok' : delivery.status === 'failed' ? 'pill-bad' : ''}`}>{delivery.status}</span>{' '}
          {delivery.attempts.length} attempt{delivery.attempts.length === 1 ? '' : 's'}
        </li>
      ))}
    </ul>
  );
}

/** A button that looks for the event's deliveries (reading every webhook's log), and what it found. */
export function FindDeliveries({ eventId, open, onOpen }: { eventId: number; open: boolean; onOpen: () => void }) {
  const { key } = useConnection();
  const reason = scopeReason(key?.credential, ['webhooks:manage']);
  if (reason) return <span class="reason">Deliveries are read from the webhooks: {reason}</span>;
  return (
    <div class="find-deliveries">
      {!open && (
        <button type="button" class="secondary" onClick={onOpen}>
          Webhook deliveries<span class="visually-hidden"> of event {eventId}</span>
        </button>
      )}
      <EventDeliveries eventId={eventId} active={open} />
    </div>
  );
}

/** Whether the event is about a resource or a schedule (EventSubject shows it). */
export function hasSubject(event: DevdataEvent): boolean {
  return event.type.startsWith('resource.') || event.type === 'schedule.executed';
}

/** The event a link opened the page on, read by its id, with its subject, deliveries and JSON. */
export function ShownEvent({ id }: { id: number }) {
  const client = useClient();
  const read = useLoad(
    async (signal) => {
      try {
        const page = await client.listEvents({ query: { after: id - 1, limit: 1 } }, { signal });
        return page.data[0]?.id === id ? page.data[0] : undefined;
      } catch (error) {
        // Older than what the service keeps.
        if (error instanceof DevdataError && error.code === 'cursor_expired') return undefined;
        throw error;
      }
    },
    [client, id],
  );
  const event = read.data;
  return (
    <Section title={`Event #${id}`} id="shown-event-title" actions={<Link to="events">Back to all events</Link>}>
      {read.loading && <Busy label="Reading the event" />}
      <ErrorNotice error={read.error} title="The event could not be read" />
      {!read.loading && !read.error && !event && (
        <Notice kind="warning">
          <p>Event #{id} is not kept any more (the service keeps a limited number of events per account), or never existed.</p>
        </Notice>
      )}
      {event && (
        <div data-shown-event-id={event.id}>
          <dl class="facts">
            <dt>Type</dt>
            <dd>
              <code>{event.type}</code>
            </dd>
            <dt>Time</dt>
            <dd>
              <Time value={event.createdAt} />
            </dd>
            <dt>Summary</dt>
            <dd>{summarizeEvent(event)}</dd>
            {hasSubject(event) && (
              <>
                <dt>About</dt>
                <dd>
                  <EventSubject event={event} />
                </dd>
              </>
            )}
            <dt>Deliveries</dt>
            <dd>
              <FindDeliveries eventId={event.id} open={true} onOpen={() => {}} />
            </dd>
          </dl>
          <JsonBlock value={event} label={`Event ${event.id} as JSON`} />
        </div>
      )}
    </Section>
  );
}
