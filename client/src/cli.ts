// devdata-client: the developer CLI of @devdata/client. `listen --forward-to` replays the live
// event stream to a local receiver as signed webhook deliveries, like `stripe listen`.
// Exit codes: 0 done (also after Ctrl-C), 1 the API refused or failed, 2 a usage error, 3 the
// server could not be reached.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DevdataClient } from './client.js';
import { DevdataError } from './errors.js';
import { forwardDelivery, matchesEventFilters, type ForwardResult } from './forward.js';
import { RESOURCE_TYPES } from './generated/values.js';
import type { DevdataEvent, Resource, ResourceType } from './types.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

class UsageError extends Error {}

const GLOBAL_HELP = `Usage: devdata-client <command> [options]

Commands:
  whoami                         the account and credential in use
  events tail                    follow the event log live (--type, --after)
  trigger <custom.type>          publish a custom event (--data JSON)
  resources list|get|set         read and change resources
  listen --forward-to URL        forward live events to a local receiver as signed webhook deliveries

Options of every command:
  --url URL          the server (env DEVDATA_URL, default http://localhost:8080)
  --api-key KEY      an API key or OAuth access token (env DEVDATA_API_KEY); never printed
  --json             machine-readable output: one JSON value per line
  -h, --help         help for a command
  --version          the version of this CLI

Exit codes: 0 done (also after Ctrl-C), 1 the API refused or failed, 2 usage error, 3 server unreachable.`;

const COMMAND_HELP: Record<string, string> = {
  whoami: `Usage: devdata-client whoami [--json]

Shows the account, the credential (its id, kind, scopes and expiry) and the API version.`,
  'events tail': `Usage: devdata-client events tail [--type TYPE] [--after N] [--json]

Follows the event log live, one line per event, until Ctrl-C. Reconnects by itself after a
disconnect and resumes where it stopped.
  --type TYPE   an exact event type, or a prefix ending in .* such as custom.*
  --after N     first replay the events after id N (default: only new events)`,
  trigger: `Usage: devdata-client trigger <custom.type> [--data JSON] [--json]

Publishes a custom event (needs events:write). The type starts with "custom.".
  --data JSON   the event's data, a JSON object (default {})`,
  'resources list': `Usage: devdata-client resources list [--type TYPE] [--tag TAG]... [--json]

Lists every resource in creation order (all pages).
  --type TYPE   one of ${RESOURCE_TYPES.join(', ')}
  --tag TAG     only resources with this tag (repeatable: all must match)`,
  'resources get': `Usage: devdata-client resources get <id> [--json]`,
  'resources set': `Usage: devdata-client resources set <id> <state> [--if-version N] [--json]

Sets a resource's state. The value is read as the resource's type needs it: a number or text for
a sensor, true/false (on/off) for a binary_sensor or switch, text for a text resource.
  --if-version N   only if the resource is still at version N (If-Match); exit 1 with
                   precondition_failed otherwise`,
  listen: `Usage: devdata-client listen --forward-to URL [--events T1,T2] [--after N] [--secret S] [--json]

Follows the live event stream and POSTs each event to URL exactly as a webhook delivery is sent:
the same body and headers (X-Service-Signature, X-Service-Event-Id, X-Service-Delivery-Id), signed
with a secret printed at start (or --secret). One line per event with the receiver's status and
time. Resumes after disconnects without losing events; Ctrl-C stops it.
  --forward-to URL   the local receiver, e.g. http://localhost:3000/webhooks
  --events T1,T2     only these types (exact, or custom.* for every custom event); default all
  --after N          first replay the events after id N (default: only new events)
  --secret S         the signing secret to use (default: a new whsec_… for this session)`,
};

const GLOBAL_OPTIONS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} satisfies ParseArgsConfig['options'];

interface Output {
  json: boolean;
  out: (line: string) => void;
  err: (line: string) => void;
}

function parse<Options extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: Options) {
  try {
    return parseArgs({ args, options: { ...GLOBAL_OPTIONS, ...options }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function clientFor(values: { url?: string | undefined; 'api-key'?: string | undefined }): DevdataClient {
  const baseUrl = values.url ?? process.env.DEVDATA_URL ?? 'http://localhost:8080';
  try {
    new URL(baseUrl);
  } catch {
    throw new UsageError(`--url is not a URL: ${baseUrl}`);
  }
  const apiKey = values['api-key'] ?? process.env.DEVDATA_API_KEY;
  if (!apiKey) throw new UsageError('no credential: pass --api-key or set DEVDATA_API_KEY');
  return new DevdataClient({ baseUrl, apiKey });
}

function integerOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer`);
  return Number(value);
}

/** Aborted on the first Ctrl-C (or SIGTERM); a second one ends the process at once. */
function interruption(): AbortSignal {
  const controller = new AbortController();
  const stop = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
  };
  process.on('SIGINT', stop).on('SIGTERM', stop);
  return controller.signal;
}

function eventLine(event: DevdataEvent): string {
  const data = event.data as Record<string, unknown>;
  const resource = data.resource as Resource | undefined;
  const detail = resource ? `${resource.id} ${resource.name}: ${JSON.stringify(resource.state)}` : JSON.stringify(event.data);
  return `${event.createdAt}  #${event.id}  ${event.type}  ${detail}`;
}

function resourceLine(resource: Resource): string {
  return `${resource.id}  ${resource.type.padEnd(13)}  v${resource.version}  ${resource.name}: ${JSON.stringify(resource.state)}`;
}

/** A state typed on the command line, read as the resource's type needs it. */
function stateFor(resource: Resource, text: string): string | number | boolean {
  switch (resource.type) {
    case 'binary_sensor':
    case 'switch':
      if (/^(true|on|1)$/i.test(text)) return true;
      if (/^(false|off|0)$/i.test(text)) return false;
      throw new UsageError(`a ${resource.type} takes true or false (on/off), not "${text}"`);
    case 'sensor':
      return text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
    default:
      return text;
  }
}

async function whoami(args: string[], output: Output): Promise<void> {
  const { values } = parse(args, {});
  const me = await clientFor(values).getCurrentCredential();
  if (output.json) return output.out(JSON.stringify(me));
  output.out(`Account:    ${me.account.name} (${me.account.id})`);
  output.out(
    `Credential: ${me.credential.id} (${me.credential.kind}${me.credential.clientId ? `, app ${me.credential.clientId}` : ''}), expires ${me.credential.expiresAt}`,
  );
  output.out(`Scopes:     ${me.credential.scopes.join(' ') || '(none)'}`);
  output.out(`API:        ${me.api.name} ${me.api.version}`);
}

async function eventsTail(args: string[], output: Output): Promise<void> {
  const { values } = parse(args, { type: { type: 'string' }, after: { type: 'string' } });
  const devdata = clientFor(values);
  const after = integerOption('after', values.after);
  const signal = interruption();
  const stream = devdata.streamEvents({
    ...(after !== undefined && { after }),
    ...(values.type !== undefined && { type: values.type }),
    signal,
    onConnect: ({ reconnected }) => {
      if (!reconnected && !output.json) output.err(`Following events${values.type ? ` of type ${values.type}` : ''} on ${devdata.baseUrl} (Ctrl-C to stop)`);
    },
    onReconnect: ({ lastEventId, error }) => output.err(`reconnecting after ${lastEventId ?? 'the start'}${error ? ` (${error.message})` : ''}`),
  });
  for await (const event of stream) output.out(output.json ? JSON.stringify(event) : eventLine(event));
}

async function trigger(args: string[], output: Output): Promise<void> {
  const { values, positionals } = parse(args, { data: { type: 'string' } });
  const [type] = positionals;
  if (!type || positionals.length > 1) throw new UsageError('trigger takes one event type, e.g. devdata-client trigger custom.deploy');
  if (!type.startsWith('custom.')) throw new UsageError(`only custom events can be published: "${type}" does not start with "custom."`);
  let data: unknown = {};
  if (values.data !== undefined) {
    try {
      data = JSON.parse(values.data);
    } catch {
      throw new UsageError('--data is not JSON');
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new UsageError('--data must be a JSON object');
  }
  const event = await clientFor(values).publishEvent({ body: { type: type as `custom.${string}`, data: data as Record<string, unknown> } });
  output.out(output.json ? JSON.stringify(event) : `Published ${event.type} as event #${event.id}`);
}

async function resourcesList(args: string[], output: Output): Promise<void> {
  const { values, positionals } = parse(args, { type: { type: 'string' }, tag: { type: 'string', multiple: true } });
  if (positionals.length > 0) throw new UsageError('resources list takes no arguments');
  const type = values.type as ResourceType | undefined;
  if (type !== undefined && !RESOURCE_TYPES.includes(type)) throw new UsageError(`--type must be one of ${RESOURCE_TYPES.join(', ')}`);
  let count = 0;
  for await (const resource of clientFor(values).iterateResources({ ...(type && { type }), ...(values.tag && { tag: values.tag }) })) {
    output.out(output.json ? JSON.stringify(resource) : resourceLine(resource));
    count++;
  }
  if (!output.json && count === 0) output.err('No resources.');
}

async function resourcesGet(args: string[], output: Output): Promise<void> {
  const { values, positionals } = parse(args, {});
  if (positionals.length !== 1) throw new UsageError('resources get takes one resource id');
  const resource = await clientFor(values).getResource({ path: { id: positionals[0] as string } });
  if (!resource) return;
  if (output.json) return output.out(JSON.stringify(resource));
  output.out(resourceLine(resource));
  output.out(`  tags ${resource.tags.join(', ') || '-'}  attributes ${JSON.stringify(resource.attributes)}  updated ${resource.updatedAt}`);
}

async function resourcesSet(args: string[], output: Output): Promise<void> {
  const { values, positionals } = parse(args, { 'if-version': { type: 'string' } });
  if (positionals.length !== 2) throw new UsageError('resources set takes a resource id and a state');
  const [id, text] = positionals as [string, string];
  const devdata = clientFor(values);
  const ifVersion = integerOption('if-version', values['if-version']);
  // The state's kind depends on the resource's type, so the resource is read first.
  const current = await devdata.getResource({ path: { id } });
  if (!current) throw new Error('the resource was not returned');
  const updated = await devdata.updateResource({
    path: { id },
    // Without --if-version the state is set whatever changed in between, like the API without If-Match.
    header: ifVersion === undefined ? {} : { 'if-match': `"${ifVersion}"` },
    body: { state: stateFor(current, text) },
  });
  output.out(output.json ? JSON.stringify(updated) : resourceLine(updated));
}

async function listen(args: string[], output: Output): Promise<void> {
  const { values, positionals } = parse(args, {
    'forward-to': { type: 'string' },
    events: { type: 'string' },
    after: { type: 'string' },
    secret: { type: 'string' },
  });
  if (positionals.length > 0) throw new UsageError(`listen takes no arguments (got ${positionals.join(' ')})`);
  const target = values['forward-to'];
  if (!target) throw new UsageError('listen needs --forward-to URL');
  let targetUrl: URL;
  try {
    targetUrl = new URL(target);
  } catch {
    throw new UsageError(`--forward-to is not a URL: ${target}`);
  }
  if (targetUrl.protocol !== 'http:' && targetUrl.protocol !== 'https:') throw new UsageError('--forward-to must be an http: or https: URL');
  const filters =
    values.events
      ?.split(',')
      .map((type) => type.trim())
      .filter((type) => type !== '') ?? [];
  const after = integerOption('after', values.after);
  const secret = values.secret ?? `whsec_${randomBytes(32).toString('base64url')}`;
  const devdata = clientFor(values);
  // The real deliveries' User-Agent names the server's version.
  const { version } = await devdata.getApiInfo();
  const signal = interruption();
  // One filter the server can apply itself; several are applied here, with the webhooks' rule.
  const serverFilter = filters.length === 1 ? filters[0] : undefined;
  const stream = devdata.streamEvents({
    ...(after !== undefined && { after }),
    ...(serverFilter !== undefined && { type: serverFilter }),
    signal,
    // Ready once connected: every event written from then on will be forwarded.
    onConnect: ({ reconnected }) => {
      if (reconnected) return;
      if (output.json) output.out(JSON.stringify({ ready: true, secret, forwardTo: targetUrl.toString() }));
      else output.out(`Ready! Forwarding events to ${targetUrl} with signing secret ${secret} (Ctrl-C to stop)`);
    },
    onReconnect: ({ lastEventId, error }) => output.err(`reconnecting; resuming after event ${lastEventId ?? '(start)'}${error ? ` (${error.message})` : ''}`),
  });
  for await (const event of stream) {
    if (filters.length > 1 && !matchesEventFilters(filters, event.type)) continue;
    const result = await forwardDelivery(targetUrl, JSON.stringify(event), { eventId: event.id, secret, userAgent: `devdata-webhooks/${version}` });
    output.out(output.json ? JSON.stringify({ eventId: event.id, type: event.type, ...result }) : forwardLine(event, result));
  }
}

function forwardLine(event: DevdataEvent, result: ForwardResult): string {
  const outcome = result.status === null ? `error: ${result.error}` : `[${result.status}]`;
  return `${new Date().toISOString()}  --> ${event.type} #${event.id}  <-- ${outcome} ${result.durationMs} ms (${result.deliveryId})`;
}

const COMMANDS: Record<string, (args: string[], output: Output) => Promise<void>> = {
  whoami,
  'events tail': eventsTail,
  trigger,
  'resources list': resourcesList,
  'resources get': resourcesGet,
  'resources set': resourcesSet,
  listen,
};

/** Options that take a value: the word after them is not a command word. */
const VALUE_OPTIONS = new Set(['--url', '--api-key', '--type', '--after', '--data', '--tag', '--if-version', '--forward-to', '--events', '--secret']);

/** The command's name (`whoami`, `events tail`, `resources set`, …) and the arguments after its words. */
function commandOf(args: string[]): { name: string | undefined; rest: string[] } {
  const wordAt: number[] = [];
  for (let index = 0; index < args.length && wordAt.length < 2; index++) {
    const arg = args[index] as string;
    if (VALUE_OPTIONS.has(arg)) index++;
    else if (!arg.startsWith('-')) wordAt.push(index);
  }
  const [first, second] = wordAt.map((index) => args[index] as string);
  const twoWords = (first === 'events' || first === 'resources') && second !== undefined;
  const used = twoWords ? wordAt : wordAt.slice(0, 1);
  const rest = args.filter((_arg, index) => !used.includes(index));
  return { name: twoWords ? `${first} ${second}` : first, rest };
}

export async function main(argv: string[], output: Output = { json: argv.includes('--json'), out: console.log, err: console.error }): Promise<number> {
  const { name, rest } = commandOf(argv);
  if (argv.includes('--version') && name === undefined) {
    output.out(VERSION);
    return 0;
  }
  const helpAsked = argv.includes('--help') || argv.includes('-h');
  if (helpAsked) {
    output.out((name && COMMAND_HELP[name]) || GLOBAL_HELP);
    return 0;
  }
  if (name === undefined) {
    output.err(GLOBAL_HELP);
    return 2;
  }
  const command = COMMANDS[name];
  try {
    if (name === 'resources') throw new UsageError('resources takes list, get or set (devdata-client resources set --help)');
    if (name === 'events') throw new UsageError('events takes tail (devdata-client events tail --help)');
    if (!command) throw new UsageError(`unknown command "${name}" (devdata-client --help lists them)`);
    await command(rest, output);
    return 0;
  } catch (error) {
    return reportFailure(error, output);
  }
}

function reportFailure(error: unknown, output: Output): number {
  if (error instanceof UsageError) {
    output.err(output.json ? JSON.stringify({ error: { code: 'usage', message: error.message } }) : `devdata-client: ${error.message}`);
    return 2;
  }
  if (error instanceof DevdataError) {
    const { status, code, message, requestId } = error;
    output.err(
      output.json
        ? JSON.stringify({ error: { status, code, message, requestId } })
        : `devdata-client: ${code}: ${message}${status ? ` (HTTP ${status}${requestId ? `, request ${requestId}` : ''})` : ''}`,
    );
    return status === 0 ? 3 : 1;
  }
  output.err(`devdata-client: ${(error as Error).message ?? String(error)}`);
  return 1;
}

process.exitCode = await main(process.argv.slice(2));
// Idle keep-alive sockets must not hold a finished command open; output is flushed by then.
setTimeout(() => process.exit(), 1000).unref();
