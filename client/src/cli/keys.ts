// devdata-client keys list|create|rename|revoke.
import { SCOPES } from '../generated/values.js';
import type { Command } from './command.js';
import { list, print, printDetails, printTable, statusStyle, time } from './output.js';
import { integerValue, listValue, requiredValue } from './values.js';

export const keyCommands: Command[] = [
  {
    name: 'keys list',
    summary: "the account's active API keys (never their secrets)",
    details: 'Needs keys:manage.',
    options: {
      all: { type: 'boolean', help: 'also the keys that ended last (revoked or expired), each with its status' },
    },
    async run({ values, client }, output) {
      const page = await client().listApiKeys(values.all === true ? { query: { status: 'all' } } : undefined);
      print(output, page, () =>
        printTable(
          output,
          ['ID', 'NAME', 'STATUS', 'SCOPES', 'EXPIRES', 'LAST USED'],
          page.data.map((key) => [
            key.id,
            key.name,
            { text: key.status, style: statusStyle(key.status) },
            list(key.scopes),
            time(key.expiresAt),
            time(key.lastUsedAt, 'never'),
          ]),
        ),
      );
    },
  },
  {
    name: 'keys create',
    summary: 'create an API key; its secret is shown once',
    details: 'Needs keys:manage. The new key expires no later than the key that creates it.',
    options: {
      name: { type: 'string', value: 'NAME', required: true, help: '1-100 characters' },
      scopes: { type: 'string', value: 'S1,S2', required: true, help: `comma-separated: ${SCOPES.join(', ')}` },
      'expires-in-days': { type: 'string', value: 'N', help: 'days until it expires, 1-365 (default 90)' },
    },
    async run({ values, client }, output) {
      const expiresInDays = integerValue(values, 'expires-in-days');
      const key = await client().createApiKey({
        body: { name: requiredValue(values, 'name'), scopes: listValue(values, 'scopes')!, ...(expiresInDays !== undefined && { expiresInDays }) },
      });
      print(output, key, () => {
        printDetails(output, [
          ['ID', key.id],
          ['Name', key.name],
          ['Scopes', list(key.scopes)],
          ['Expires', time(key.expiresAt)],
          ['Key', { text: key.key, style: 'bold' }],
        ]);
        output.err('The key is shown only now: store it as a secret.');
      });
    },
  },
  {
    name: 'keys rename',
    positionals: ['<id>'],
    summary: 'give an active API key a new name',
    details: 'Needs keys:manage.',
    options: {
      name: { type: 'string', value: 'NAME', required: true, help: '1-100 characters' },
    },
    async run({ positionals, values, client }, output) {
      const key = await client().renameApiKey({ path: { id: positionals[0]! }, body: { name: requiredValue(values, 'name') } });
      print(output, key, () => output.out(`Renamed ${key.id} to ${key.name}.`));
    },
  },
  {
    name: 'keys revoke',
    positionals: ['<id>'],
    summary: 'revoke an API key at once',
    details: 'Needs keys:manage. The webhooks and schedules it authorized are stopped by the service with it.',
    options: {},
    async run({ positionals, client }, output) {
      const id = positionals[0]!;
      await client().revokeApiKey({ path: { id } });
      print(output, { id, revoked: true }, () => output.out(`Revoked ${id}.`));
    },
  },
];
