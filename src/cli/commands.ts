// The commands of the devdata CLI: the server and the operator's tools, each with its options and help.
import type { Config } from '../config.js';
import type { AppContext } from '../context.js';
import { isDisplayName } from '../platform/schemas.js';
import { isScope, SCOPE_LIST, type Scope } from '../platform/scopes.js';
import { type Command, JSON_OPTION, UsageError, type Values } from './command.js';

// The server, storage and services are loaded by the commands that use them, so --help,
// --version and usage errors answer at once.
const operator = () => import('../operator.js');

function parseScopes(raw: string | undefined): Scope[] | undefined {
  if (raw === undefined) return undefined;
  const scopes = raw
    .split(',')
    .map((scope) => scope.trim())
    .filter(Boolean);
  const unknown = scopes.filter((scope) => !isScope(scope));
  if (unknown.length > 0) throw new UsageError(`unknown scope(s): ${unknown.join(', ')}; valid scopes: ${SCOPE_LIST}`);
  return [...new Set(scopes)] as Scope[];
}

function parseDays(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const days = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || days < 1 || days > 365) throw new UsageError(`--expires-in-days must be an integer from 1 to 365, got "${raw}"`);
  return days;
}

function required(values: Values, flag: string, what: string): string {
  const value = values[flag];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${flag} is required: ${what}`);
  return value;
}

function displayName(values: Values, flag: string): string {
  const name = values[flag];
  if (typeof name !== 'string') throw new UsageError(`--${flag} is required: a name of 1-100 characters`);
  if (!isDisplayName(name)) throw new UsageError(`--${flag} must be 1-100 characters, not only white space, without control characters`);
  return name;
}

function email(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (raw.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(raw)) throw new UsageError(`--email must be an email address (name@example.com), got "${raw}"`);
  return raw;
}

/** Columns padded to their widest cell; the last column is left as is. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ');
  return [header, ...rows].map(line).join('\n');
}

/** One JSON object with --json, else the lines for people. */
function print(values: Values, json: unknown, lines: () => Array<string | false | undefined>): void {
  if (values.json) console.log(JSON.stringify(json));
  else for (const line of lines()) if (line) console.log(line);
}

async function withContext<T>(config: Config, work: (context: AppContext) => Promise<T>): Promise<T> {
  const { openContext } = await import('../context.js');
  // The account and key commands never touch a secret: they load no secrets key.
  const context = await openContext({ ...config, metrics: undefined }, { secrets: false, backgroundCheckpoints: false });
  try {
    return await work(context);
  } finally {
    await context.close();
  }
}

export const COMMANDS: Command[] = [
  {
    name: 'serve',
    makesDatabase: true,
    args: '[--port N] [--host ADDR]',
    summary: 'start the HTTP server (applies pending migrations first)',
    details: 'Runs until SIGTERM or SIGINT, then finishes the requests in flight, writes buffered usage counters and closes the database.',
    options: {
      port: { type: 'string', value: 'N', help: 'overrides PORT (0 = any free port)' },
      host: { type: 'string', value: 'ADDR', help: 'overrides HOST (0.0.0.0 accepts remote connections)' },
    },
    async run({ config }) {
      const { serve } = await import('./serve.js');
      await serve(config());
    },
  },
  {
    name: 'migrate',
    makesDatabase: true,
    args: '',
    summary: 'apply pending database migrations and exit',
    details: '`serve` does this itself at start (under a lock, so several processes may start at once); this is for operators who prefer an explicit step.',
    options: {},
    async run({ config }) {
      const { openStorage } = await import('../storage/database.js');
      const storage = openStorage(config().databaseUrl);
      let applied: string[];
      try {
        applied = await storage.migrate();
      } finally {
        await storage.close();
      }
      console.log(applied.length > 0 ? `migrations applied: ${applied.join(', ')}` : 'migrations applied: none pending, the database is current');
    },
  },
  {
    name: 'accounts create',
    makesDatabase: true,
    args: '--name NAME [--email EMAIL] [--scopes a,b] [--expires-in-days N] [--json]',
    summary: 'create an account and its first API key (every scope, 365 days)',
    details: 'The key is printed once; only its SHA-256 hash is stored.',
    options: {
      name: { type: 'string', value: 'NAME', help: 'the account name, 1-100 characters' },
      email: { type: 'string', value: 'EMAIL', help: "the account's email address (unique)" },
      scopes: { type: 'string', value: 'a,b', help: `the first key's scopes (default: all): ${SCOPE_LIST}` },
      'expires-in-days': { type: 'string', value: 'N', help: "the first key's lifetime, 1-365 days (default 365)" },
      json: JSON_OPTION('{"account":{"id","name"},"apiKey":{"id","name","key","scopes","expiresAt"}}'),
    },
    async run({ values, config }) {
      const input = {
        name: displayName(values, 'name'),
        email: email(values.email as string | undefined),
        scopes: parseScopes(values.scopes as string | undefined),
        expiresInDays: parseDays(values['expires-in-days'] as string | undefined),
      };
      const { account, apiKey } = await withContext(config(), async (context) => (await operator()).createAccountWithKey(context, input));
      const json = {
        account: { id: account.id, name: account.name },
        apiKey: { id: apiKey.id, name: apiKey.name, key: apiKey.key, scopes: apiKey.scopes, expiresAt: apiKey.expiresAt },
      };
      print(values, json, () => [
        `Account ${account.id} (${account.name}) created.`,
        `API key ${apiKey.id}, expires ${apiKey.expiresAt}, scopes: ${apiKey.scopes.join(' ')}`,
        `Key (shown once, hand it over privately): ${apiKey.key}`,
      ]);
    },
  },
  {
    name: 'accounts list',
    makesDatabase: true,
    args: '[--json]',
    summary: 'list the accounts, oldest first, with their count of active keys',
    options: { json: JSON_OPTION('{"accounts":[{"id","name","email","origin","createdAt","activeKeys"}]}') },
    async run({ values, config }) {
      const accounts = await withContext(config(), async (context) => (await operator()).listAccounts(context));
      const rows = accounts.map((account) => [account.id, account.name, account.email ?? '-', account.origin, account.createdAt, String(account.activeKeys)]);
      print(values, { accounts }, () => [
        accounts.length === 0
          ? 'No accounts yet: devdata accounts create --name NAME makes one.'
          : table(['ID', 'NAME', 'EMAIL', 'ORIGIN', 'CREATED', 'ACTIVE KEYS'], rows),
      ]);
    },
  },
  {
    name: 'keys issue',
    makesDatabase: true,
    args: '--account ID --name NAME [--scopes a,b] [--expires-in-days N] [--json]',
    summary: 'issue another API key for an account',
    details: 'The key is printed once; only its SHA-256 hash is stored.',
    options: {
      account: { type: 'string', value: 'ID', help: 'the account (devdata accounts list shows them)' },
      name: { type: 'string', value: 'NAME', help: 'the key name, 1-100 characters' },
      scopes: { type: 'string', value: 'a,b', help: `comma-separated (default: all): ${SCOPE_LIST}` },
      'expires-in-days': { type: 'string', value: 'N', help: 'lifetime, 1-365 days (default 365)' },
      json: JSON_OPTION('{"apiKey":{"id","name","key","scopes","expiresAt"}}'),
    },
    async run({ values, config }) {
      const input = {
        accountId: required(values, 'account', 'the account id (devdata accounts list shows them)'),
        name: displayName(values, 'name'),
        scopes: parseScopes(values.scopes as string | undefined),
        expiresInDays: parseDays(values['expires-in-days'] as string | undefined),
      };
      const apiKey = await withContext(config(), async (context) => (await operator()).issueKey(context, input));
      print(values, { apiKey: { id: apiKey.id, name: apiKey.name, key: apiKey.key, scopes: apiKey.scopes, expiresAt: apiKey.expiresAt } }, () => [
        `API key ${apiKey.id}, expires ${apiKey.expiresAt}, scopes: ${apiKey.scopes.join(' ')}`,
        `Key (shown once): ${apiKey.key}`,
      ]);
    },
  },
  {
    name: 'keys list',
    makesDatabase: true,
    args: '--account ID [--json]',
    summary: "list an account's API keys with their state (never a secret)",
    details: 'Revoked and expired keys are listed too, with STATUS saying which.',
    options: {
      account: { type: 'string', value: 'ID', help: 'the account (devdata accounts list shows them)' },
      json: JSON_OPTION('{"apiKeys":[{"id","name","scopes","createdAt","expiresAt","lastUsedAt","accountId","revokedAt","status"}]}'),
    },
    async run({ values, config }) {
      const accountId = required(values, 'account', 'the account id (devdata accounts list shows them)');
      const apiKeys = await withContext(config(), async (context) => (await operator()).listKeys(context, accountId));
      const rows = apiKeys.map((key) => [key.id, key.name, key.status, key.expiresAt, key.lastUsedAt ?? 'never', key.scopes.join(' ') || '(none)']);
      print(values, { apiKeys }, () => [
        apiKeys.length === 0 ? `Account ${accountId} has no API keys.` : table(['ID', 'NAME', 'STATUS', 'EXPIRES', 'LAST USED', 'SCOPES'], rows),
      ]);
    },
  },
  {
    name: 'keys revoke',
    makesDatabase: true,
    args: 'KEY_ID [--json]',
    summary: 'revoke an API key now',
    details:
      'Like DELETE /api/v1/keys/{id}: recorded in the audit history, and what rests on the key stops: the webhooks and ' +
      'schedules it authorized are disabled (disabledReason credential_revoked), the OAuth connections it approved end, and ' +
      'the client credentials of the apps it registered. A server on the same database refuses the key from its next ' +
      'request; its open streams on the key end at once on PostgreSQL, within 15 seconds on SQLite. A key already revoked ' +
      'or expired is left as it is (exit status 0).',
    positionals: ['KEY_ID'],
    options: { json: JSON_OPTION('{"apiKey":{…as keys list},"revoked":true|false}') },
    async run({ values, positionals, config }) {
      const outcome = await withContext(config(), async (context) => (await operator()).revokeKey(context, positionals[0]!));
      const { apiKey } = outcome;
      print(values, outcome, () => [
        outcome.revoked
          ? `API key ${apiKey.id} (${apiKey.name}) of account ${apiKey.accountId} revoked.`
          : apiKey.status === 'revoked'
            ? `API key ${apiKey.id} was already revoked at ${apiKey.revokedAt}; nothing changed.`
            : `API key ${apiKey.id} expired at ${apiKey.expiresAt}; nothing changed.`,
      ]);
    },
  },
  {
    name: 'backup',
    args: 'FILE',
    summary: 'copy the SQLite database to FILE while the server runs',
    details:
      "SQLite's online backup: a consistent copy of one moment, taken while the server keeps writing, then vacuumed and " +
      'checked, and written to FILE in one step (a FILE that exists is replaced). The secrets key is never in it: keep the ' +
      'key file (or SECRETS_KEY) apart from your backups. On PostgreSQL it says how to use pg_dump instead.',
    positionals: ['FILE'],
    options: { json: JSON_OPTION('{"database","file","bytes","migrations":[…],"key"}') },
    async run({ values, positionals, config }) {
      const { backup } = await import('../maintenance.js');
      const report = await backup(config(), positionals[0]!);
      print(values, report, () => [
        `Backup of ${report.database} written to ${report.file} (${report.bytes} bytes, ${report.migrations.length} migrations).`,
        `Its webhook signing secrets are sealed with ${report.key}, which is not in the backup: keep a copy of it apart from your backups.`,
      ]);
    },
  },
  {
    name: 'restore',
    args: 'FILE',
    summary: 'replace the SQLite database with the backup FILE',
    details:
      'Checks FILE first (a SQLite file that passes integrity_check, a devdata database, no migration newer than this ' +
      'version, secrets sealed with the key found here), refuses while a server has the database open, and keeps the ' +
      'database it replaces beside it (<database>.pre-restore-<time>). Migrations the backup lacks are applied at the ' +
      'next start. On PostgreSQL it says how to use pg_restore instead.',
    positionals: ['FILE'],
    options: { json: JSON_OPTION('{"database","file","accounts","previous","pending":[…]}') },
    async run({ values, positionals, config }) {
      const { restore } = await import('../maintenance.js');
      const report = await restore(config(), positionals[0]!);
      print(values, report, () => [
        `Restored ${report.file} into ${report.database} (${report.accounts} accounts).`,
        report.previous && `The database it replaced is kept as ${report.previous}; delete it once you are satisfied.`,
        report.pending.length > 0 && `The next start applies ${report.pending.length} migration(s) the backup lacks: ${report.pending.join(', ')}.`,
      ]);
    },
  },
  {
    name: 'secrets rotate-key',
    makesDatabase: true,
    args: '[--servers-stopped]',
    summary: 'seal every webhook signing secret again under a new secrets key',
    details:
      'With the key file: makes a new random key and replaces the file. With SECRETS_KEY: takes the new key from ' +
      'NEW_SECRETS_KEY, and you then set SECRETS_KEY to it. One transaction; the signing secrets themselves do not ' +
      'change, so receivers notice nothing. Stop the server first (on SQLite this is checked). Backups taken before ' +
      'need the old key: if you keep them, keep the old key with them.',
    options: {
      'servers-stopped': { type: 'boolean', help: 'PostgreSQL: you stopped every devdata process (no process can check that)' },
      json: JSON_OPTION('{"source","file","resealed"}'),
    },
    async run({ values, config }) {
      const { rotateKey } = await import('../maintenance.js');
      const result = await rotateKey(config(), { serversStopped: values['servers-stopped'] === true, newKey: process.env.NEW_SECRETS_KEY || undefined });
      print(values, result, () => [
        `${result.resealed} webhook signing secret(s) sealed again under the new key.`,
        result.file
          ? `The new key is in ${result.file}; the old one is gone. Start the server.`
          : 'Now set SECRETS_KEY to the new key (NEW_SECRETS_KEY) for every server, then start them.',
      ]);
    },
  },
];
