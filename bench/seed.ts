// Seeding the benchmark's account: resources, updates (events), and the responses the floors copy.
import type { IncomingHttpHeaders } from 'node:http';
import { inParallel, type JsonClient } from './http-client.js';
import type { Options } from './options.js';
import { round } from './results.js';

export interface Seeded {
  resourceIds: string[];
  /** GET /resources/{id} of the first resource: the body size the baseline returns. */
  resource: Record<string, unknown>;
  /** The headers the service sent with it, which the contract floor sends too. */
  resourceHeaders: Record<string, string>;
  newestEventId: number;
  /** The event page row's response, which the page floor sends as fixed bytes. */
  eventPage: string;
}

/** The event page row reads 500 events before the newest: a full page from the middle of the log. */
export function eventPagePath(newestEventId: number): string {
  return `/api/v1/events?after=${Math.max(0, newestEventId - 500)}&limit=100`;
}

/** Headers of a response that describe the response itself, not the connection or the body's framing. */
export function contractHeadersOf(headers: IncomingHttpHeaders): Record<string, string> {
  const perConnection = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'content-type', 'x-request-id']);
  return Object.fromEntries(Object.entries(headers).flatMap(([name, value]) => (perConnection.has(name) || typeof value !== 'string' ? [] : [[name, value]])));
}

export function resourceBody(index: number): Record<string, unknown> {
  return {
    name: `Temperature sensor ${index + 1}`,
    type: 'sensor',
    state: 21.5,
    attributes: { unit_of_measurement: '°C', device_class: 'temperature', friendly_name: `Room ${index + 1} temperature`, floor: 1 + (index % 4) },
    tags: ['bench', `floor-${1 + (index % 4)}`],
  };
}

export async function seed(client: JsonClient, options: Options): Promise<Seeded> {
  const resourceIds: string[] = [];
  await inParallel(options.seedResources, 8, async (index) => {
    const created = (await client.expect(201, 'POST', '/api/v1/resources', resourceBody(index))) as { id: string };
    resourceIds[index] = created.id;
  });
  await inParallel(options.seedUpdates, 8, async (index) => {
    await client.expect(200, 'PATCH', `/api/v1/resources/${resourceIds[index % resourceIds.length]}`, { state: round(18 + (index % 60) / 10, 1) });
  });
  let cursor = 0;
  for (;;) {
    const page = (await client.expect(200, 'GET', `/api/v1/events?after=${cursor}&limit=1000`)) as { cursor: number; hasMore: boolean };
    cursor = page.cursor;
    if (!page.hasMore) break;
  }
  const resource = await client.expectResponse(200, 'GET', `/api/v1/resources/${resourceIds[0]}`);
  const eventPage = await client.expectResponse(200, 'GET', eventPagePath(cursor));
  return {
    resourceIds,
    resource: resource.body as Record<string, unknown>,
    resourceHeaders: contractHeadersOf(resource.headers),
    newestEventId: cursor,
    eventPage: eventPage.text,
  };
}
