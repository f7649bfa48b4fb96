#!/usr/bin/env node
// The devdata command (decisions §1): serve, migrate, accounts create, keys issue.
import { parseArgs } from 'node:util';
import { buildApp, listen } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { openContext } from './context.js';
import { createAccountWithKey, issueKey } from './operator.js';
import { isScope, type Scope } from './platform/scopes.js';
import { openStorage } from './storage/database.js';

const USAGE = `Usage: devdata <command> [options]

Commands:
  serve                         start the HTTP server (applies pending migrations first)
  migrate                       apply pending database migrations and exit
  accounts create --name NAME [--email EMAIL] [--json]
                                create an account and its first API key (every scope, 365 days)
  keys issue --account ID --name NAME [--scopes a,b] [--expires-in-days N] [--json]
                                issue another API key for an account

Options for every command:
  --database-url URL            overrides DATABASE_URL (sqlite:<path>, sqlite::memory:, postgres://…)
Options for serve:
  --port N, --host ADDR         override PORT and HOST

Configuration is read from the environment; see README.md.`;

class UsageError extends Error {}

function configFrom(values: { 'database-url'?: string; port?: string; host?: string }): Config {
  const env = { ...process.env };
  if (values['database-url'] !== undefined) env.DATABASE_URL = values['database-url'];
  if (values.port !== undefined) env.PORT = values.port;
  if (values.host !== undefined) env.HOST = values.host;
  return loadConfig(env);
}

function parseScopes(raw: string | undefined): Scope[] | undefined {
  if (raw === undefined) return undefined;
  const scopes = raw.split(',').map((scope) => scope.trim()).filter(Boolean);
  const unknown = scopes.filter((scope) => !isScope(scope));
  if (unknown.length > 0) throw new UsageError(`unknown scope(s): ${unknown.join(', ')}`);
  return scopes as Scope[];
}

function parseDays(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const days = Number(raw);
  if (!Number.isInteger(days) || days < 1 || days > 365) throw new UsageError('--expires-in-days must be an integer from 1 to 365');
  return days;
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value.trim() === '') throw new UsageError(`${flag} is required`);
  return value;
}

async function serve(config: Config): Promise<void> {
  const app = await buildApp(config);
  if (config.webhookAllowPrivateTargets) {
    app.log.warn('WEBHOOK_ALLOW_PRIVATE_TARGETS is on: webhooks may reach loopback and private addresses. Development only.');
  }
  if (!config.secretsKey) app.log.warn('SECRETS_KEY is not set: webhook signing secrets will be stored unencrypted.');
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) {
      app.log.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const address = await listen(app, config, { port: config.port, host: config.host });
  app.log.info({ address, port: (app.server.address() as { port: number }).port, baseUrl: config.baseUrl }, `devdata listening on ${address}`);
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      email: { type: 'string' },
      account: { type: 'string' },
      scopes: { type: 'string' },
      'expires-in-days': { type: 'string' },
      json: { type: 'boolean', default: false },
      'database-url': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const command = positionals.join(' ');
  if (values.help || command === '' || command === 'help') {
    console.log(USAGE);
    return;
  }
  const config = configFrom(values);

  if (command === 'serve') return serve(config);

  if (command === 'migrate') {
    const storage = openStorage(config.databaseUrl);
    try {
      await storage.migrate();
    } finally {
      await storage.close();
    }
    console.log('migrations applied');
    return;
  }

  if (command === 'accounts create' || command === 'keys issue') {
    const name = required(values.name, '--name');
    const scopes = parseScopes(values.scopes);
    const expiresInDays = parseDays(values['expires-in-days']);
    const context = await openContext(config);
    try {
      if (command === 'accounts create') {
        const { account, apiKey } = await createAccountWithKey(context, { name, email: values.email, scopes, expiresInDays });
        const output = {
          account: { id: account.id, name: account.name },
          apiKey: { id: apiKey.id, name: apiKey.name, key: apiKey.key, scopes: apiKey.scopes, expiresAt: apiKey.expiresAt },
        };
        if (values.json) console.log(JSON.stringify(output));
        else {
          console.log(`Account ${account.id} (${account.name}) created.`);
          console.log(`API key ${apiKey.id}, expires ${apiKey.expiresAt}, scopes: ${apiKey.scopes.join(' ')}`);
          console.log(`Key (shown once, hand it over privately): ${apiKey.key}`);
        }
      } else {
        const apiKey = await issueKey(context, { accountId: required(values.account, '--account'), name, scopes, expiresInDays });
        const output = { apiKey: { id: apiKey.id, name: apiKey.name, key: apiKey.key, scopes: apiKey.scopes, expiresAt: apiKey.expiresAt } };
        if (values.json) console.log(JSON.stringify(output));
        else {
          console.log(`API key ${apiKey.id}, expires ${apiKey.expiresAt}, scopes: ${apiKey.scopes.join(' ')}`);
          console.log(`Key (shown once): ${apiKey.key}`);
        }
      }
    } finally {
      await context.close();
    }
    return;
  }

  throw new UsageError(`unknown command "${command}"`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    console.error(`devdata: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  console.error(`devdata: ${(error as Error).message}`);
  process.exit(1);
});
