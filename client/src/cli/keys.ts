// devdata-client keys list|create|revoke (the API has no rename: a key's name is set once).
import { SCOPES } from '../generated/values.js';
import type { Command } from './command.js';
import { list, print, printDetails, printTable, time } from './output.js';
import { integerValue, listValue, requiredValue } from './values.js';

export const keyCommands: Command[] = [
  {
    name: 'keys list',
    summary: "the account's active API keys (never their secrets)",
    details: 'Needs keys:manage.',
    options: {},
    async run({ client }, output) {
      const page = await client().listApiKeys();
      print(output, page, () =>
        printTable(
          output,
          ['ID', 'NAME', 'SCOPES', 'EXPIRES', 'LAST USED'],
          page.data.map((key) => [key.id, key.name, list(key.scopes), time(key.expiresAt), time(key.lastUsedAt, 'never')]),
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
