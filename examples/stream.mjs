// Follows the event log live. The stream reconnects by itself after any disconnect and resumes
// with Last-Event-ID, so no event is skipped or repeated; Ctrl-C stops it.
//   DEVDATA_URL=http://localhost:8080 DEVDATA_API_KEY=ddk_… node examples/stream.mjs [after] [type]
import { DevdataClient } from '@devdata/client';

const devdata = new DevdataClient({ baseUrl: process.env.DEVDATA_URL ?? 'http://localhost:8080', apiKey: process.env.DEVDATA_API_KEY });
const controller = new AbortController();
process.once('SIGINT', () => controller.abort());

const [after, type] = process.argv.slice(2);
const stream = devdata.streamEvents({
  ...(after !== undefined && { after: Number(after) }),
  ...(type !== undefined && { type }),
  signal: controller.signal,
  onConnect: ({ lastEventId }) => console.error(`connected; events after ${lastEventId} follow`),
  onReconnect: ({ lastEventId, error }) => console.error(`reconnecting after ${lastEventId}: ${error?.message ?? 'the stream ended'}`),
});
for await (const event of stream) {
  if (event.type === 'resource.updated') console.log(`#${event.id} ${event.data.resource.name} is now ${JSON.stringify(event.data.resource.state)}`);
  else console.log(`#${event.id} ${event.type}`);
}
