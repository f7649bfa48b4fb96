// devdata-client events tail|list and trigger; what a live stream says when its connection drops.
import { formatState } from '../display.js';
import { EVENT_TYPES } from '../generated/values.js';
import type { EventStreamOptions } from '../stream.js';
import type { DevdataEvent, Resource } from '../types.js';
import { type Command, UsageError } from './command.js';
import { type Output, print, printTable } from './output.js';
import { integerValue, interruption, jsonObjectValue, stringValue } from './values.js';

/** The event types as help names them: the service's, and the custom ones. */
export const EVENT_TYPE_HELP = `${EVENT_TYPES.join(', ')}, custom.<name>, or custom.* for every custom event`;
const TYPE_FILTER_HELP = 'an exact event type, or a prefix ending in .* such as custom.* or resource.*';

function seconds(ms: number): string {
  return ms < 10_000 ? (ms / 1000).toFixed(1) : String(Math.round(ms / 1000));
}

/**
 * What a follower of the live stream tells the person watching (on standard error): the connection
 * lost and the wait before the next attempt, then where it resumed. `onReady` runs on the first
 * connection only.
 */
export function streamReporting(output: Output, onReady: () => void): Pick<EventStreamOptions, 'onConnect' | 'onReconnect'> {
  let connected = false;
  return {
    onConnect: ({ reconnected, lastEventId }) => {
      connected = true;
      if (!reconnected) onReady();
      else output.err(`reconnected; resuming after event ${lastEventId ?? '0'}`);
    },
    onReconnect: ({ attempt, error, delayMs }) => {
      const why = error ? ` (${error.message})` : '';
      const wait = `${seconds(delayMs)}s…`;
      if (!connected) output.err(`cannot connect${why}, retrying in ${wait}`);
      else if (attempt === 1) output.err(`connection lost${why}, reconnecting in ${wait}`);
      else output.err(`still disconnected${why}, reconnecting in ${wait}`);
    },
  };
}

/** What an event is about: the resource and its state, or the event's data. */
function eventDetail(event: DevdataEvent): string {
  const resource = (event.data as { resource?: Resource }).resource;
  return resource ? `${resource.id} ${resource.name}: ${formatState(resource.state)}` : JSON.stringify(event.data);
}

function eventLine(event: DevdataEvent): string {
  return `${event.createdAt}  #${event.id}  ${event.type}  ${eventDetail(event)}`;
}

function printEvents(output: Output, events: DevdataEvent[]): void {
  if (events.length === 0) {
    output.err('No events.');
    return;
  }
  printTable(
    output,
    ['ID', 'TIME', 'TYPE', 'DETAIL'],
    events.map((event) => [String(event.id), event.createdAt, event.type, eventDetail(event)]),
  );
}

export const eventCommands: Command[] = [
  {
    name: 'events tail',
    summary: 'follow the event log live',
    details:
      'One line per event until Ctrl-C (with --json, one event per line). After a disconnect it says so, reconnects by itself and resumes where it stopped.',
    options: {
      type: { type: 'string', value: 'TYPE', help: TYPE_FILTER_HELP },
      after: { type: 'string', value: 'N', help: 'first replay the events after id N (default: only new events)' },
    },
    async run({ values, client }, output) {
      const devdata = client();
      const after = integerValue(values, 'after');
      const type = stringValue(values, 'type');
      const stream = devdata.streamEvents({
        ...(after !== undefined && { after }),
        ...(type !== undefined && { type }),
        signal: interruption(),
        ...streamReporting(output, () => {
          if (!output.json) output.err(`Following events${type ? ` of type ${type}` : ''} on ${devdata.baseUrl} (Ctrl-C to stop)`);
        }),
      });
      for await (const event of stream) output.out(output.json ? JSON.stringify(event) : eventLine(event));
    },
  },
  {
    name: 'events list',
    summary: 'read the event log, oldest first',
    details: 'Every event after --after (default: the oldest retained), unless --limit asks for one page (with --json, the API page itself).',
    options: {
      after: { type: 'string', value: 'N', help: 'the events after id N (a page’s cursor)' },
      type: { type: 'string', value: 'TYPE', help: TYPE_FILTER_HELP },
      limit: { type: 'string', value: 'N', help: 'one page of at most N events (the API allows 1-1000)' },
    },
    async run({ values, client }, output) {
      const after = integerValue(values, 'after');
      const limit = integerValue(values, 'limit');
      const type = stringValue(values, 'type');
      const query = { ...(after !== undefined && { after }), ...(type !== undefined && { type }) };
      if (limit !== undefined) {
        const page = await client().listEvents({ query: { ...query, limit } });
        return print(output, page, () => {
          printEvents(output, page.data);
          if (page.hasMore) output.err(`More: --after ${page.cursor}`);
        });
      }
      const events: DevdataEvent[] = [];
      for await (const event of client().iterateEvents(query)) events.push(event);
      print(output, { data: events }, () => printEvents(output, events));
    },
  },
  {
    name: 'trigger',
    positionals: ['<custom.type>'],
    summary: 'publish a custom event',
    details: 'Needs events:write. The type starts with "custom.", such as custom.deploy.',
    options: { data: { type: 'string', value: 'JSON', help: "the event's data, a JSON object (default {})" } },
    async run({ values, positionals, client }, output) {
      const type = positionals[0]!;
      if (!type.startsWith('custom.')) throw new UsageError(`only custom events can be published: "${type}" does not start with "custom."`);
      const data = jsonObjectValue(values, 'data') ?? {};
      const event = await client().publishEvent({ body: { type: type as `custom.${string}`, data } });
      print(output, event, () => output.out(`Published ${event.type} as event #${event.id}`));
    },
  },
];
