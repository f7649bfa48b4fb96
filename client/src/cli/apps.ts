// devdata-client apps list|get|create|update|delete|rotate-secret: registered OAuth applications.
import { APP_TYPES, OAUTH_SCOPES } from '../generated/values.js';
import type { App, AppWithSecret } from '../types.js';
import type { Command, OptionSpec } from './command.js';
import { list, type Output, print, printDetails, printTable, time } from './output.js';
import { listValue, requiredValue, someChange, stringValue } from './values.js';

const NAME: OptionSpec = { type: 'string', value: 'NAME', help: '1-100 characters' };
const REDIRECT_URIS: OptionSpec = {
  type: 'string',
  value: 'U1,U2',
  help: 'where users return after approving: https, or http to a loopback host; matched exactly',
};
const SCOPES_OPTION: OptionSpec = { type: 'string', value: 'S1,S2', help: `the scopes it may ask for: ${OAUTH_SCOPES.join(', ')}` };

function printApp(output: Output, app: App | AppWithSecret): void {
  print(output, app, () => {
    printDetails(output, [
      ['ID', app.id],
      ['Name', app.name],
      ['Type', app.type],
      ['Client ID', app.clientId],
      ['Redirect URIs', list(app.redirectUris)],
      ['Scopes', list(app.scopes)],
      ['Created', time(app.createdAt)],
      ['Updated', time(app.updatedAt)],
      ['Client secret', 'clientSecret' in app && app.clientSecret ? { text: app.clientSecret, style: 'bold' } : undefined],
    ]);
    if ('clientSecret' in app && app.clientSecret) output.err('The client secret is shown only now: store it as a secret.');
  });
}

export const appCommands: Command[] = [
  {
    name: 'apps list',
    summary: 'list the registered OAuth applications',
    details: 'Needs apps:manage (an API key).',
    options: {},
    async run({ client }, output) {
      const page = await client().listApps();
      print(output, page, () => {
        if (page.data.length === 0) return output.err('No apps.');
        printTable(
          output,
          ['ID', 'NAME', 'TYPE', 'CLIENT ID', 'SCOPES'],
          page.data.map((app) => [app.id, app.name, app.type, app.clientId, list(app.scopes)]),
        );
      });
    },
  },
  {
    name: 'apps get',
    positionals: ['<id>'],
    summary: 'show an application',
    options: {},
    async run({ positionals, client }, output) {
      printApp(output, await client().getApp({ path: { id: positionals[0]! } }));
    },
  },
  {
    name: 'apps create',
    summary: 'register an application; a confidential one gets a client secret, shown once',
    details: 'Needs apps:manage, and the scopes it asks for.',
    options: {
      name: { ...NAME, required: true },
      type: { type: 'string', value: 'TYPE', required: true, help: `${APP_TYPES.join(' or ')} (cannot change later)` },
      'redirect-uris': { ...REDIRECT_URIS, required: true },
      scopes: { ...SCOPES_OPTION, required: true },
    },
    async run({ values, client }, output) {
      const body = {
        name: requiredValue(values, 'name'),
        type: requiredValue(values, 'type') as App['type'],
        redirectUris: listValue(values, 'redirect-uris')!,
        scopes: listValue(values, 'scopes')!,
      };
      printApp(output, await client().createApp({ body }));
    },
  },
  {
    name: 'apps update',
    positionals: ['<id>'],
    summary: "change an application's name, redirect URIs or scopes",
    options: { name: NAME, 'redirect-uris': REDIRECT_URIS, scopes: SCOPES_OPTION },
    async run({ values, positionals, client }, output) {
      const name = stringValue(values, 'name');
      const redirectUris = listValue(values, 'redirect-uris');
      const scopes = listValue(values, 'scopes');
      const body = { ...(name !== undefined && { name }), ...(redirectUris && { redirectUris }), ...(scopes && { scopes }) };
      someChange(body, '--name, --redirect-uris, --scopes');
      printApp(output, await client().updateApp({ path: { id: positionals[0]! }, body }));
    },
  },
  {
    name: 'apps delete',
    positionals: ['<id>'],
    summary: 'delete an application, ending its connections and tokens',
    options: {},
    async run({ positionals, client }, output) {
      const id = positionals[0]!;
      await client().deleteApp({ path: { id } });
      print(output, { id, deleted: true }, () => output.out(`Deleted ${id}.`));
    },
  },
  {
    name: 'apps rotate-secret',
    positionals: ['<id>'],
    summary: "replace a confidential application's client secret; the new one is shown once",
    options: {},
    async run({ positionals, client }, output) {
      printApp(output, await client().rotateAppSecret({ path: { id: positionals[0]! } }));
    },
  },
];
