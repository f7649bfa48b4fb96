// devdata-client webhooks deliveries|delivery|retry|test|replay|recover: a webhook's delivery
// history (each attempt's headers and the start of the answer) and sending again on request.
import type { DevdataClient } from '../client.js';
import type { WebhookDelivery, WebhookDeliveryAttempt, WebhookDeliveryStatus } from '../types.js';
import { type Command, UsageError } from './command.js';
import { type Cell, type Output, paint, print, printDetails, printTable, statusStyle, time } from './output.js';
import { integerValue, stringValue, timeValue } from './values.js';

const STATUSES: readonly WebhookDeliveryStatus[] = ['pending', 'succeeded', 'failed'];
/** The most deliveries one request may ask for (the API's maximum of `limit`). */
const MOST_PER_PAGE = 500;
const COLUMNS = ['ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST RESPONSE', 'COMPLETED / NEXT'];
/** How long `webhooks test --wait` waits for the first attempt (a delivery times out after 10 s). */
const TEST_WAIT_MS = 30_000;

function statusValue(value: string | undefined): WebhookDeliveryStatus | undefined {
  if (value !== undefined && !(STATUSES as readonly string[]).includes(value))
    throw new UsageError(`--status must be one of ${STATUSES.join(', ')}, not "${value}"`);
  return value as WebhookDeliveryStatus | undefined;
}

function limitValue(values: Parameters<typeof integerValue>[0]): number | undefined {
  const limit = integerValue(values, 'limit');
  if (limit !== undefined && (limit < 1 || limit > MOST_PER_PAGE)) throw new UsageError(`--limit must be 1-${MOST_PER_PAGE}, not ${limit}`);
  return limit;
}

/** `#3 resource.created`, `#0 webhook.test`, `#3 resource.created (replay)`. */
function eventCell(delivery: WebhookDelivery): string {
  return `#${delivery.eventId} ${delivery.eventType}${delivery.replay ? ' (replay)' : ''}`;
}

function outcome(attempt: WebhookDeliveryAttempt | undefined): string {
  if (!attempt) return '-';
  return attempt.responseStatus !== null ? `HTTP ${attempt.responseStatus}` : (attempt.error ?? '-');
}

export function deliveryCells(delivery: WebhookDelivery): Cell[] {
  return [
    delivery.id,
    eventCell(delivery),
    { text: delivery.status, style: statusStyle(delivery.status) },
    String(delivery.attempts.length),
    outcome(delivery.attempts.at(-1)),
    time(delivery.completedAt ?? delivery.nextAttemptAt),
  ];
}

/** What a receiver answered, shown safely: control characters (a terminal's escapes) but tabs written as \xNN. */
function visible(text: string): string {
  let shown = '';
  for (const character of text) {
    const code = character.charCodeAt(0);
    const control = (code < 0x20 && code !== 0x09) || (code >= 0x7f && code <= 0x9f);
    shown += control ? `\\x${code.toString(16).padStart(2, '0')}` : character;
  }
  return shown;
}

function printAttempt(output: Output, attempt: WebhookDeliveryAttempt): void {
  output.out('');
  output.out(paint(output, 'bold', `Attempt ${attempt.attempt}  ${attempt.at}  ${outcome(attempt)}  ${attempt.durationMs} ms`));
  output.out('  Request headers:');
  for (const [name, value] of Object.entries(attempt.requestHeaders)) output.out(`    ${name}: ${visible(value)}`);
  if (attempt.responseBody === null) output.out('  Response body: none');
  else if (attempt.responseBody === '') output.out('  Response body: empty');
  else {
    output.out('  Response body (its first 1 KiB):');
    for (const line of attempt.responseBody.split(/\r?\n/)) output.out(`    ${visible(line)}`);
  }
}

function printDelivery(output: Output, delivery: WebhookDelivery): void {
  printDetails(output, [
    ['ID', delivery.id],
    ['Event', eventCell(delivery)],
    ['Kind', delivery.test ? 'test (POST …/test)' : delivery.replay ? 'sent again (replay or recover)' : 'event'],
    ['Status', { text: delivery.status, style: statusStyle(delivery.status) }],
    ['Created', delivery.createdAt],
    ['Completed', delivery.completedAt ?? undefined],
    ['Next attempt', delivery.nextAttemptAt ?? undefined],
    ['Attempts', String(delivery.attempts.length)],
  ]);
  for (const attempt of delivery.attempts) printAttempt(output, attempt);
}

/** One delivery of the webhook, looked up in its history (the API has no single-delivery read). */
async function findDelivery(devdata: DevdataClient, webhookId: string, deliveryId: string): Promise<WebhookDelivery | undefined> {
  for await (const delivery of devdata.iterateWebhookDeliveries(webhookId, { limit: MOST_PER_PAGE })) if (delivery.id === deliveryId) return delivery;
  return undefined;
}

export const deliveryCommands: Command[] = [
  {
    name: 'webhooks deliveries',
    positionals: ['<id>'],
    summary: "a webhook's deliveries, newest first (pending, and the latest 500 completed)",
    details:
      'Every kept delivery unless --limit asks for one page (with --json, the API page itself); a full page may have more: the next one is --before its last id. webhooks delivery ID DELIVERY_ID shows one with its attempts.',
    options: {
      status: { type: 'string', value: 'S', help: `only deliveries with this status: ${STATUSES.join(', ')}` },
      limit: { type: 'string', value: 'N', help: `one page of at most N deliveries (1-${MOST_PER_PAGE})` },
      before: { type: 'string', value: 'DELIVERY_ID', help: 'the deliveries older than this one (a page’s last id)' },
    },
    async run({ values, positionals, client }, output) {
      const id = positionals[0]!;
      const status = statusValue(stringValue(values, 'status'));
      const limit = limitValue(values);
      const before = stringValue(values, 'before');
      const query = { ...(status !== undefined && { status }), ...(before !== undefined && { before }) };
      const show = (data: WebhookDelivery[]) => {
        if (data.length === 0) return output.err('No deliveries.');
        printTable(output, COLUMNS, data.map(deliveryCells));
      };
      if (limit !== undefined) {
        const page = await client().webhookDeliveries(id, { ...query, limit });
        return print(output, page, () => {
          show(page.data);
          if (page.data.length === limit) output.err(`More: --before ${page.data.at(-1)!.id}`);
        });
      }
      const data: WebhookDelivery[] = [];
      for await (const delivery of client().iterateWebhookDeliveries(id, { ...query, limit: MOST_PER_PAGE })) data.push(delivery);
      print(output, { data }, () => show(data));
    },
  },
  {
    name: 'webhooks delivery',
    positionals: ['<id>', '<delivery-id>'],
    summary: 'one delivery with each attempt: the headers sent and the start of the answer',
    options: {},
    async run({ positionals, client }, output) {
      const [id, deliveryId] = positionals as [string, string];
      const delivery = await findDelivery(client(), id, deliveryId);
      if (!delivery) throw new Error(`${deliveryId} is not among the kept deliveries of webhook ${id}`);
      print(output, delivery, () => printDelivery(output, delivery));
    },
  },
  {
    name: 'webhooks retry',
    positionals: ['<id>', '<delivery-id>'],
    summary: 'queue a completed delivery again',
    options: {},
    async run({ positionals, client }, output) {
      const [id, deliveryId] = positionals as [string, string];
      const delivery = await client().retryWebhookDelivery({ path: { id, deliveryId } });
      print(output, delivery, () => printTable(output, COLUMNS, [deliveryCells(delivery)]));
    },
  },
  {
    name: 'webhooks test',
    positionals: ['<id>'],
    summary: 'send the webhook a webhook.test delivery (event id 0), even while it is paused',
    details: `Prints the delivery's id; with --wait, also how its first attempt went (waiting up to ${TEST_WAIT_MS / 1000} s). Its body is {"id":0,"type":"webhook.test","data":{"webhookId"},"createdAt"}, signed as every delivery; it is not an event of the log.`,
    options: { wait: { type: 'boolean', help: 'wait for the first attempt and show its outcome' } },
    async run({ values, positionals, client }, output) {
      const id = positionals[0]!;
      const devdata = client();
      const { deliveryId } = await devdata.sendWebhookTest(id);
      if (!values.wait) {
        return print(output, { deliveryId }, () => {
          output.out(`Queued test delivery ${deliveryId}`);
          output.err(`devdata-client webhooks delivery ${id} ${deliveryId} shows how it went.`);
        });
      }
      const deadline = Date.now() + TEST_WAIT_MS;
      let delivery = await findDelivery(devdata, id, deliveryId);
      while (delivery?.attempts.length === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        delivery = await findDelivery(devdata, id, deliveryId);
      }
      if (!delivery) throw new Error(`test delivery ${deliveryId} is no longer among the kept deliveries`);
      print(output, delivery, () => printDelivery(output, delivery));
    },
  },
  {
    name: 'webhooks replay',
    positionals: ['<id>'],
    summary: 'deliver again the retained events after a cursor that the webhook subscribes to',
    details:
      'Each matching event in (--after, --until] is queued as a new delivery (a new delivery id, the same X-Service-Event-Id, header X-Service-Replay: true), while the webhook’s queue has room (1,000 pending); the rest are counted as skipped. Needs webhooks:manage and events:read. A cursor older than the retained events is refused (410 cursor_expired).',
    options: {
      after: { type: 'string', value: 'N', help: 'the cursor: the events after id N are sent again', required: true },
      until: { type: 'string', value: 'M', help: 'the last event id sent again (default: the newest)' },
    },
    async run({ values, positionals, client }, output) {
      const after = integerValue(values, 'after')!;
      const until = integerValue(values, 'until');
      if (until !== undefined && until < after) throw new UsageError(`--until (${until}) must not be less than --after (${after})`);
      const result = await client().replayWebhookEvents(positionals[0]!, { after, ...(until !== undefined && { until }) });
      print(output, result, () => {
        output.out(`Queued ${result.queued} ${result.queued === 1 ? 'delivery' : 'deliveries'}; ${result.skipped} skipped`);
        if (result.skipped > 0) output.err('Skipped events did not fit in the queue (1,000 pending): replay them after it drains.');
      });
    },
  },
  {
    name: 'webhooks recover',
    positionals: ['<id>'],
    summary: 'send again every delivery that ended failed since a time',
    details: 'Each delivery that ended failed at or after --since is queued as a new delivery (header X-Service-Replay: true).',
    options: {
      since: { type: 'string', value: 'TIME', help: 'a duration ago (30m, 24h, 7d) or an ISO 8601 time (2026-01-31T12:00Z)', required: true },
    },
    async run({ values, positionals, client }, output) {
      const since = timeValue(values, 'since', Date.now())!;
      const result = await client().recoverWebhookDeliveries(positionals[0]!, since);
      print(output, result, () => output.out(`Queued ${result.queued} ${result.queued === 1 ? 'delivery' : 'deliveries'} that failed since ${since}`));
    },
  },
];
