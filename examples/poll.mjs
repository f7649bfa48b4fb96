// Polls the event log: reads every event after a cursor, then asks again every few seconds.
// The cursor is what a real consumer stores (with the data it derived) to resume after a restart.
//   DEVDATA_URL=http://localhost:8080 DEVDATA_API_KEY=ddk_… node examples/poll.mjs [after]
import { DevdataClient, DevdataError } from '@devdata/client';

const devdata = new DevdataClient({ baseUrl: process.env.DEVDATA_URL ?? 'http://localhost:8080', apiKey: process.env.DEVDATA_API_KEY });
const intervalMs = Number(process.env.POLL_INTERVAL_MS ?? 5000);
let after = Number(process.argv[2] ?? 0);

for (;;) {
  try {
    for await (const page of devdata.eventPages({ after })) {
      for (const event of page.data) console.log(`#${event.id} ${event.type} ${JSON.stringify(event.data)}`);
      after = page.cursor;
    }
  } catch (error) {
    if (!(error instanceof DevdataError) || error.code !== 'cursor_expired') throw error;
    // Too far behind: the events between are gone. Reload what you derive from them, then go on.
    console.error(error.message);
    after = error.oldestCursor ?? 0;
  }
  await new Promise((resolve) => setTimeout(resolve, intervalMs));
}
