// devdata-client webhooks list|get|create|update|delete|rotate-secret, and the delivery commands
// of webhook-deliveries.ts: deliveries|delivery|retry|test|replay|recover.
import { webhookStatus } from '../display.js';
import type { Webhook, WebhookWithSecret } from '../types.js';
import type { Command, OptionSpec } from './command.js';
import { EVENT_TYPE_HELP } from './events.js';
import { deliveryCommands } from './webhook-deliveries.js';
import { list, type Output, print, printDetails, printTable, statusStyle, time } from './output.js';
import { enabledValue, listValue, requiredValue, someChange, stringValue } from './values.js';

const NAME: OptionSpec = { type: 'string', value: 'NAME', help: '1-100 characters' };
// Not --url: that one names the server, for every command.
const RECEIVER: OptionSpec = { type: 'string', value: 'URL', help: "the receiver's URL: https on port 443 to a public address" };
const EVENTS: OptionSpec = { type: 'string', value: 'T1,T2', help: `the event types to deliver: ${EVENT_TYPE_HELP}` };
const NEEDS = 'Needs webhooks:manage and events:read.';

function status(webhook: Webhook) {
  const text = webhookStatus(webhook);
  return { text, style: statusStyle(text) };
}

function printWebhook(output: Output, webhook: Webhook | WebhookWithSecret): void {
  print(output, webhook, () => {
    printDetails(output, [
      ['ID', webhook.id],
      ['Name', webhook.name],
      ['URL', webhook.url],
      ['Events', list(webhook.events)],
      ['Status', status(webhook)],
      ['Created', time(webhook.createdAt)],
      ['Updated', time(webhook.updatedAt)],
      ['Signing secret', 'secret' in webhook ? { text: webhook.secret, style: 'bold' } : undefined],
    ]);
    if ('secret' in webhook) output.err('The signing secret is shown only now: keep it where your receiver reads it.');
  });
}

export const webhookCommands: Command[] = [
  {
    name: 'webhooks list',
    summary: 'list the webhooks',
    options: {},
    async run({ client }, output) {
      const page = await client().listWebhooks();
      print(output, page, () => {
        if (page.data.length === 0) return output.err('No webhooks.');
        printTable(
          output,
          ['ID', 'NAME', 'STATUS', 'EVENTS', 'URL'],
          page.data.map((webhook) => [webhook.id, webhook.name, status(webhook), list(webhook.events), webhook.url]),
        );
      });
    },
  },
  {
    name: 'webhooks get',
    positionals: ['<id>'],
    summary: 'show a webhook',
    options: {},
    async run({ positionals, client }, output) {
      printWebhook(output, await client().getWebhook({ path: { id: positionals[0]! } }));
    },
  },
  {
    name: 'webhooks create',
    summary: 'create a webhook; its signing secret is shown once',
    details: NEEDS,
    options: {
      name: { ...NAME, required: true },
      receiver: { ...RECEIVER, required: true },
      events: { ...EVENTS, required: true },
      disabled: { type: 'boolean', help: 'create it paused (enable it with webhooks update --enable)' },
    },
    async run({ values, client }, output) {
      const body = {
        name: requiredValue(values, 'name'),
        url: requiredValue(values, 'receiver'),
        events: listValue(values, 'events')!,
        ...(values.disabled && { enabled: false }),
      };
      printWebhook(output, await client().createWebhook({ body }));
    },
  },
  {
    name: 'webhooks update',
    positionals: ['<id>'],
    summary: "change a webhook's name, receiver or events, or pause or resume it",
    details: 'Pausing needs webhooks:manage; the other changes, and resuming, also events:read.',
    options: {
      name: NAME,
      receiver: RECEIVER,
      events: EVENTS,
      enable: { type: 'boolean', help: 'resume deliveries (also after the service stopped it)' },
      disable: { type: 'boolean', help: 'pause deliveries' },
    },
    async run({ values, positionals, client }, output) {
      const name = stringValue(values, 'name');
      const url = stringValue(values, 'receiver');
      const events = listValue(values, 'events');
      const body = { ...(name !== undefined && { name }), ...(url !== undefined && { url }), ...(events && { events }), ...enabledValue(values) };
      someChange(body, '--name, --receiver, --events, --enable, --disable');
      printWebhook(output, await client().updateWebhook({ path: { id: positionals[0]! }, body }));
    },
  },
  {
    name: 'webhooks delete',
    positionals: ['<id>'],
    summary: 'delete a webhook',
    options: {},
    async run({ positionals, client }, output) {
      const id = positionals[0]!;
      await client().deleteWebhook({ path: { id } });
      print(output, { id, deleted: true }, () => output.out(`Deleted ${id}.`));
    },
  },
  {
    name: 'webhooks rotate-secret',
    positionals: ['<id>'],
    summary: 'replace the signing secret; the new one is shown once',
    details: NEEDS,
    options: {},
    async run({ positionals, client }, output) {
      printWebhook(output, await client().rotateWebhookSecret({ path: { id: positionals[0]! } }));
    },
  },
  ...deliveryCommands,
];
