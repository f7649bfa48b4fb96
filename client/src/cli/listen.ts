// devdata-client listen: the live event stream replayed to a local receiver as signed webhook
// deliveries, like `stripe listen`, with a signing secret kept across runs.
import { forwardDelivery, type ForwardResult, matchesEventFilters } from '../forward.js';
import type { DevdataEvent } from '../types.js';
import { type Command, UsageError } from './command.js';
import { EVENT_TYPE_HELP, streamReporting } from './events.js';
import { isStandardSecret, listenSecret } from './listen-secrets.js';
import { type Output, paint, print } from './output.js';
import { integerValue, interruption, listValue, stringValue } from './values.js';

function forwardLine(output: Output, event: DevdataEvent, result: ForwardResult): string {
  const ok = result.status !== null && result.status < 300;
  const outcome = paint(output, ok ? 'green' : 'red', result.status === null ? `error: ${result.error}` : `[${result.status}]`);
  return `${new Date().toISOString()}  --> ${event.type} #${event.id}  <-- ${outcome} ${result.durationMs} ms (${result.deliveryId})`;
}

function receiverUrl(target: string | undefined): URL {
  if (!target) throw new UsageError('listen needs --forward-to URL (or --print-secret)');
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new UsageError(`--forward-to is not a URL: ${target}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--forward-to must be an http: or https: URL');
  return url;
}

export const listenCommand: Command = {
  name: 'listen',
  synopsis: '--forward-to URL [options], or listen --print-secret',
  summary: 'forward live events to a local receiver as signed webhook deliveries (--forward-to URL)',
  details: `Follows the live event stream and POSTs each event to the receiver exactly as a webhook delivery is sent: the same body and headers (X-Service-Signature, X-Service-Event-Id, X-Service-Delivery-Id, and Standard Webhooks' webhook-id, webhook-timestamp and webhook-signature), so verifyWebhook, verifyStandardWebhook or a Standard Webhooks library accepts it. One line per event with the receiver's status and time. With --after N it first sends the retained events after N, then the live ones, each once and in order. Resumes after disconnects without losing events, saying so; Ctrl-C stops it.

The signing secret (whsec_ and base64, like a webhook's) is kept for this server and account in the configuration directory ($XDG_CONFIG_HOME/devdata or ~/.config/devdata; %APPDATA%\\devdata on Windows), so the receiver's secret stays valid across runs; --print-secret shows it.`,
  options: {
    'forward-to': { type: 'string', value: 'URL', help: 'the local receiver, e.g. http://localhost:3000/webhooks' },
    events: { type: 'string', value: 'T1,T2', help: `only these types (default all): ${EVENT_TYPE_HELP}` },
    after: { type: 'string', value: 'N', help: 'first replay the events after id N (default: only new events)' },
    secret: { type: 'string', value: 'S', help: 'sign with this secret instead of the kept one (not stored)' },
    'print-secret': { type: 'boolean', help: 'print the kept signing secret (made if there is none yet) and exit' },
  },
  async run({ values, client }, output) {
    const printOnly = values['print-secret'] === true;
    const target = printOnly ? undefined : receiverUrl(stringValue(values, 'forward-to'));
    const filters = listValue(values, 'events') ?? [];
    const after = integerValue(values, 'after');
    const devdata = client();
    const chosen = stringValue(values, 'secret');
    const kept = chosen === undefined ? listenSecret(devdata.baseUrl, (await devdata.getCurrentCredential()).account.id) : undefined;
    const secret = chosen ?? kept!.secret;
    if (kept && !isStandardSecret(secret)) {
      output.err(
        `The kept signing secret predates the Standard Webhooks form (base64url): X-Service-Signature verifies as before, but Standard Webhooks libraries refuse it. Delete ${kept.path} for a new one.`,
      );
    }
    if (printOnly || !target) return print(output, { secret }, () => output.out(secret));

    // The real deliveries' User-Agent names the server's version.
    const { version } = await devdata.getApiInfo();
    // One filter the server can apply itself; several are applied here, with the webhooks' rule.
    const serverFilter = filters.length === 1 ? filters[0] : undefined;
    const stream = devdata.streamEvents({
      ...(after !== undefined && { after }),
      ...(serverFilter !== undefined && { type: serverFilter }),
      signal: interruption(),
      // Ready once connected: every event written from then on will be forwarded.
      ...streamReporting(output, () => {
        if (output.json) output.out(JSON.stringify({ ready: true, secret, forwardTo: target.toString() }));
        else output.out(`Ready! Forwarding events to ${target} with signing secret ${secret} (Ctrl-C to stop)`);
      }),
    });
    for await (const event of stream) {
      if (filters.length > 1 && !matchesEventFilters(filters, event.type)) continue;
      const result = await forwardDelivery(target, JSON.stringify(event), { eventId: event.id, secret, userAgent: `devdata-webhooks/${version}` });
      output.out(output.json ? JSON.stringify({ eventId: event.id, type: event.type, ...result }) : forwardLine(output, event, result));
    }
  },
};
