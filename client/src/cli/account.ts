// devdata-client whoami, usage and audit list: the account, its credential, its usage and history.
import type { AuditRecord } from '../types.js';
import type { Command } from './command.js';
import { list, type Output, print, printDetails, printTable } from './output.js';
import { integerValue, stringValue } from './values.js';

/** Who acted: "api_key key_…", "oauth_access_token tok_… (app ddc_…)", "system". */
function actorText(actor: Record<string, unknown>): string {
  const id = actor.id ?? actor.accountId;
  return [actor.kind, id, actor.clientId !== undefined ? `(app ${actor.clientId})` : undefined].filter((part) => part !== undefined).join(' ');
}

function targetText(target: Record<string, unknown> | null): string {
  if (target === null) return '-';
  return typeof target.type === 'string' && typeof target.id === 'string' ? `${target.type} ${target.id}` : JSON.stringify(target);
}

function printAudit(output: Output, records: AuditRecord[]): void {
  if (records.length === 0) {
    output.err('No audit records.');
    return;
  }
  printTable(
    output,
    ['ID', 'TIME', 'TYPE', 'ACTOR', 'TARGET'],
    records.map((record) => [record.id, record.createdAt, record.type, actorText(record.actor), targetText(record.target)]),
  );
}

export const accountCommands: Command[] = [
  {
    name: 'whoami',
    summary: 'the account and credential in use',
    details: 'Shows the account, the credential (its id, kind, scopes and expiry) and the API version.',
    options: {},
    async run({ client }, output) {
      const me = await client().getCurrentCredential();
      print(output, me, () =>
        printDetails(output, [
          ['Account', `${me.account.name} (${me.account.id})`],
          [
            'Credential',
            `${me.credential.id} (${me.credential.kind}${me.credential.clientId ? `, app ${me.credential.clientId}` : ''}), expires ${me.credential.expiresAt}`,
          ],
          ['Scopes', list(me.credential.scopes)],
          ['API', `${me.api.name} ${me.api.version}`],
        ]),
      );
    },
  },
  {
    name: 'usage',
    summary: "the account's daily usage (UTC days, oldest first) and totals",
    details: 'Needs usage:read.',
    options: { days: { type: 'string', value: 'N', help: 'the last N days, today included: 1-90 (default 30)' } },
    async run({ values, client }, output) {
      const days = integerValue(values, 'days');
      const usage = await client().getUsage(days === undefined ? undefined : { query: { days } });
      print(output, usage, () => {
        const row = (label: string, day: typeof usage.totals) => [
          label,
          String(day.requests),
          String(day.errors),
          String(day.eventsCreated),
          String(day.webhookDeliveries),
        ];
        printTable(
          output,
          ['DATE', 'REQUESTS', 'ERRORS', 'EVENTS', 'WEBHOOK DELIVERIES'],
          [...usage.data.map((day) => row(day.date, day)), row('total', usage.totals)],
        );
      });
    },
  },
  {
    name: 'audit list',
    summary: "the account's audit history, oldest first (--newest-first: the other way)",
    details: 'Every record after --after (default: the first), unless --limit asks for one page (with --json, the API page itself). Needs usage:read.',
    options: {
      type: { type: 'string', value: 'TYPE', help: 'an exact record type (key.created), or a prefix ending in .* (webhook.*)' },
      'newest-first': { type: 'boolean', help: 'newest first; --after then takes a newest-first page’s cursor' },
      after: { type: 'string', value: 'N', help: 'the records after position N (a page’s cursor)' },
      limit: { type: 'string', value: 'N', help: 'one page of at most N records (the API allows 1-1000)' },
    },
    async run({ values, client }, output) {
      const after = integerValue(values, 'after');
      const limit = integerValue(values, 'limit');
      const type = stringValue(values, 'type');
      const order = values['newest-first'] === true ? ('desc' as const) : undefined;
      const query = { ...(after !== undefined && { after }), ...(type !== undefined && { type }), ...(order && { order }) };
      if (limit !== undefined) {
        const page = await client().listAuditRecords({ query: { ...query, limit } });
        return print(output, page, () => {
          printAudit(output, page.data);
          if (page.hasMore) output.err(`More: --after ${page.cursor}`);
        });
      }
      const records: AuditRecord[] = [];
      for await (const record of client().iterateAuditRecords(query)) records.push(record);
      print(output, { data: records }, () => printAudit(output, records));
    },
  },
];
