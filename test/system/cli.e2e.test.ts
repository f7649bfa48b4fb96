// End to end through the built operator CLI (docs/decisions.md: "Operator CLI"): `node dist/cli.js …` as a child
// process on a temporary SQLite file, and the server it starts called over real HTTP.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from '../../src/storage/sqlite-driver.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CONFIG_VARIABLES } from '../../src/config.js';
import { CLI, cleanEnv, killAll, ROOT, run, ServerProcess } from '../support/processes.js';

const ALL_SCOPES = [
  'resources:read',
  'resources:write',
  'events:read',
  'events:write',
  'integrations:read',
  'webhooks:manage',
  'schedules:manage',
  'usage:read',
  'keys:manage',
  'apps:manage',
];
const DAY_MS = 24 * 60 * 60 * 1000;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function parseSingleJson(stdout: string): any {
  const lines = stdout.split('\n').filter((line) => line.trim() !== '');
  expect(lines, `stdout: ${stdout}`).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

function expectAbout(iso: string, expectedMs: number, toleranceMs = 2 * 60 * 1000): void {
  expect(iso).toMatch(ISO_MS);
  expect(Math.abs(Date.parse(iso) - expectedMs)).toBeLessThan(toleranceMs);
}

const API_KEY_FIELDS = ['expiresAt', 'id', 'key', 'name', 'scopes'];

let workDir: string;

beforeAll(async () => {
  expect(existsSync(CLI)).toBe(true);
  workDir = mkdtempSync(join(tmpdir(), 'devdata-cli-'));
}, 180_000);

afterAll(async () => {
  await killAll();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

describe('devdata CLI (built)', () => {
  let dbPath: string;
  let env: NodeJS.ProcessEnv;
  const cli = (...args: string[]) => run(process.execPath, [CLI, ...args], { env });
  const count = (table: string): number => {
    const db = new SQLite(dbPath, { readonly: true });
    try {
      return (db.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
    } finally {
      db.close();
    }
  };

  let account: { id: string; name: string };
  let primaryKey: string;
  let scopedKey: string;

  beforeAll(() => {
    dbPath = join(workDir, 'cli', 'x.db');
    mkdirSync(join(workDir, 'cli'));
    env = cleanEnv({ DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'info' });
  });

  it('migrate exits 0, creates the database, and may run again', async () => {
    const first = await cli('migrate');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^migrations applied: 0001_foundation, .*0009_creation_order/);
    expect(existsSync(dbPath)).toBe(true);
    const second = await cli('migrate');
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim()).toBe('migrations applied: none pending, the database is current');

    const db = new SQLite(dbPath, { readonly: true });
    try {
      const tables = (db.prepare(`select name from sqlite_master where type = 'table'`).all() as Array<{ name: string }>).map((row) => row.name);
      expect(tables).toEqual(expect.arrayContaining(['accounts', 'api_keys', 'audit_log', 'usage_daily']));
    } finally {
      db.close();
    }
  });

  it('accounts create --json prints one object with the account and a key of every scope for 365 days', async () => {
    const before = Date.now();
    const result = await cli('accounts', 'create', '--name', 'Acme', '--email', 'a@example.com', '--json');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const output = parseSingleJson(result.stdout);
    expect(Object.keys(output).sort()).toEqual(['account', 'apiKey']);
    expect(Object.keys(output.account).sort()).toEqual(['id', 'name']);
    expect(Object.keys(output.apiKey).sort()).toEqual(API_KEY_FIELDS);
    expect(output.account.id).toMatch(/^acc_[A-Za-z0-9_-]{22,}$/);
    expect(output.account.name).toBe('Acme');
    expect(output.apiKey.id).toMatch(/^key_[A-Za-z0-9_-]{22,}$/);
    expect(output.apiKey.key).toMatch(/^ddk_[A-Za-z0-9_-]{43,}$/);
    expect(output.apiKey.name).toBeTypeOf('string');
    expect(output.apiKey.name.length).toBeGreaterThan(0);
    expect([...output.apiKey.scopes].sort()).toEqual([...ALL_SCOPES].sort());
    expect(output.apiKey.scopes).toHaveLength(ALL_SCOPES.length);
    expectAbout(output.apiKey.expiresAt, before + 365 * DAY_MS);

    account = output.account;
    primaryKey = output.apiKey.key;

    const db = new SQLite(dbPath, { readonly: true });
    try {
      const row = db.prepare('select name, email from accounts where id = ?').get(account.id) as { name: string; email: string } | undefined;
      expect(row).toEqual({ name: 'Acme', email: 'a@example.com' });
      const keyRow = db.prepare('select * from api_keys where id = ?').get(output.apiKey.id) as Record<string, unknown>;
      // The secret is stored only as a hash.
      expect(JSON.stringify(keyRow)).not.toContain(primaryKey);
      expect(JSON.stringify(keyRow)).not.toContain(primaryKey.slice(4));
    } finally {
      db.close();
    }
  });

  it('accounts create --expires-in-days 7 issues a key for 7 days', async () => {
    const before = Date.now();
    const result = await cli('accounts', 'create', '--name', 'Short', '--expires-in-days', '7', '--json');
    expect(result.code, result.stderr).toBe(0);
    const output = parseSingleJson(result.stdout);
    expect(Object.keys(output.apiKey).sort()).toEqual(API_KEY_FIELDS);
    expect(output.account.name).toBe('Short');
    expect([...output.apiKey.scopes].sort()).toEqual([...ALL_SCOPES].sort());
    expectAbout(output.apiKey.expiresAt, before + 7 * DAY_MS);
  });

  it('keys issue --json prints the key with the scopes asked for', async () => {
    const before = Date.now();
    const result = await cli('keys', 'issue', '--account', account.id, '--name', 'ci', '--scopes', 'resources:read,events:read', '--json');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const output = parseSingleJson(result.stdout);
    expect(Object.keys(output)).toEqual(['apiKey']);
    expect(Object.keys(output.apiKey).sort()).toEqual(API_KEY_FIELDS);
    expect(output.apiKey.id).toMatch(/^key_/);
    expect(output.apiKey.name).toBe('ci');
    expect(output.apiKey.key).toMatch(/^ddk_/);
    expect(output.apiKey.key).not.toBe(primaryKey);
    expect([...output.apiKey.scopes].sort()).toEqual(['events:read', 'resources:read']);
    expectAbout(output.apiKey.expiresAt, before + 365 * DAY_MS);
    scopedKey = output.apiKey.key;
  });

  it('keys issue with an unknown scope fails with a message on stderr and issues nothing', async () => {
    const keysBefore = count('api_keys');
    const result = await cli('keys', 'issue', '--account', account.id, '--name', 'bad', '--scopes', 'resources:read,bogus:scope', '--json');
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toContain('bogus:scope');
    expect(result.stdout).not.toContain('ddk_');
    expect(count('api_keys')).toBe(keysBefore);
  });

  it('keys issue without --name exits 2 (usage error)', async () => {
    const keysBefore = count('api_keys');
    const result = await cli('keys', 'issue', '--account', account.id, '--json');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--name');
    expect(result.stdout).not.toContain('ddk_');
    expect(count('api_keys')).toBe(keysBefore);
  });

  it('keys issue for an unknown account fails and issues nothing', async () => {
    const keysBefore = count('api_keys');
    const result = await cli('keys', 'issue', '--account', 'acc_doesnotexist0000000000', '--name', 'ci', '--json');
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toContain('acc_doesnotexist0000000000');
    expect(result.stdout).not.toContain('ddk_');
    expect(count('api_keys')).toBe(keysBefore);
  });

  it('--database-url overrides DATABASE_URL', async () => {
    const other = join(workDir, 'flag', 'other.db');
    const result = await cli('migrate', '--database-url', `sqlite:${other}`, '--create-database');
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(other)).toBe(true);
  });

  it('rejects --expires-in-days out of range and unknown commands as usage errors', async () => {
    const zero = await cli('keys', 'issue', '--account', account.id, '--name', 'x', '--expires-in-days', '0', '--json');
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('--expires-in-days');
    const unknown = await cli('frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('frobnicate');
  });

  it('--version prints the version in package.json', async () => {
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
    for (const flag of ['--version', '-V']) {
      const result = await cli(flag);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout.trim()).toBe(`devdata ${version}`);
    }
  });

  it('--help of every command prints its usage and options to stdout and exits 0, without touching the database', async () => {
    const general = await cli('--help');
    expect(general.code).toBe(0);
    const commands = [
      'serve',
      'migrate',
      'accounts create',
      'accounts list',
      'keys issue',
      'keys list',
      'keys revoke',
      'backup',
      'restore',
      'secrets rotate-key',
    ];
    for (const command of commands) expect(general.stdout).toContain(command);
    const expectedOptions: Record<string, string[]> = {
      serve: ['--port', '--host'],
      'accounts create': ['--name', '--email', '--scopes', '--expires-in-days', '--json'],
      'accounts list': ['--json'],
      'keys issue': ['--account', '--name', '--scopes', '--expires-in-days', '--json'],
      'keys list': ['--account', '--json'],
      'keys revoke': ['KEY_ID', '--json'],
      backup: ['FILE', '--json'],
      restore: ['FILE', '--json'],
      'secrets rotate-key': ['--servers-stopped', '--json'],
    };
    // A database URL nobody could open: --help must not need one.
    const unusable = { ...env, DATABASE_URL: 'nonsense' };
    const asked = [
      ...commands.map((command) => ({ command, args: [...command.split(' '), '--help'] })),
      { command: 'keys list', args: ['keys', 'list', '-h'] },
      { command: 'keys revoke', args: ['help', 'keys', 'revoke'] },
    ];
    const results = await Promise.all(asked.map(({ args }) => run(process.execPath, [CLI, ...args], { env: unusable })));
    results.forEach((result, index) => {
      const { command, args } = asked[index]!;
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      expect(result.stdout).toContain(`Usage: devdata ${command}`);
      for (const option of [...(expectedOptions[command] ?? []), '--database-url', '--help']) expect(result.stdout, `${command} ${option}`).toContain(option);
      if (command === 'keys issue') for (const scope of ALL_SCOPES) expect(result.stdout).toContain(scope);
    });
  });

  it('usage errors name what is valid: commands, subcommands, options, scopes, values', async () => {
    const unknown = await cli('acounts', 'list');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('"acounts"');
    expect(unknown.stderr).toContain(
      'commands: serve, migrate, accounts create, accounts list, keys issue, keys list, keys revoke, backup, restore, secrets rotate-key',
    );

    const group = await cli('keys');
    expect(group.code).toBe(2);
    expect(group.stderr).toContain('keys issue, keys list, keys revoke');

    const option = await cli('keys', 'list', '--acount', account.id);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain('unknown option --acount for "keys list"; its options: --account, --json, --database-url, --create-database, --help');

    const scope = await cli('keys', 'issue', '--account', account.id, '--name', 'x', '--scopes', 'resources:reed');
    expect(scope.code).toBe(2);
    expect(scope.stderr).toContain(`unknown scope(s): resources:reed; valid scopes: ${ALL_SCOPES.join(', ')}`);

    const missingValue = await cli('keys', 'list', '--account');
    expect(missingValue.code).toBe(2);
    expect(missingValue.stderr).toContain('--account needs a value (ID)');

    const blank = await cli('accounts', 'create', '--name', '   ');
    expect(blank.code).toBe(2);
    expect(blank.stderr).toContain('--name must be 1-100 characters, not only white space');

    const mail = await cli('accounts', 'create', '--name', 'x', '--email', 'not-an-address');
    expect(mail.code).toBe(2);
    expect(mail.stderr).toContain('--email must be an email address');

    const extra = await cli('keys', 'revoke', 'key_a', 'key_b');
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain('unexpected argument "key_b"');

    const config = await run(process.execPath, [CLI, 'accounts', 'list'], { env: { ...env, DATABASE_URL: 'mysql://nope' } });
    expect(config.code).toBe(2);
    expect(config.stderr).toContain('DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres://…, got "mysql:…"');
  });

  it('accounts list shows every account with its count of active keys, as JSON and as a table', async () => {
    const json = await cli('accounts', 'list', '--json');
    expect(json.code, json.stderr).toBe(0);
    const { accounts } = parseSingleJson(json.stdout);
    const acme = accounts.find((row: any) => row.id === account.id);
    expect(acme).toEqual({ id: account.id, name: 'Acme', email: 'a@example.com', origin: 'operator', createdAt: expect.stringMatching(ISO_MS), activeKeys: 2 });
    expect(accounts.map((row: any) => row.name)).toEqual(expect.arrayContaining(['Acme', 'Short']));
    expect(accounts).toHaveLength(count('accounts'));
    // Oldest first.
    expect(accounts.map((row: any) => row.createdAt)).toEqual([...accounts.map((row: any) => row.createdAt)].sort());

    const text = await cli('accounts', 'list');
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+EMAIL\s+ORIGIN\s+CREATED\s+ACTIVE KEYS$/);
    expect(lines.find((line) => line.startsWith(account.id))).toMatch(/Acme\s+a@example\.com\s+operator\s+\S+\s+2$/);
  });

  it('keys list shows the keys of an account with their state and never a secret or its hash', async () => {
    const json = await cli('keys', 'list', '--account', account.id, '--json');
    expect(json.code, json.stderr).toBe(0);
    const { apiKeys } = parseSingleJson(json.stdout);
    expect(apiKeys.map((key: any) => key.name)).toEqual(['Initial key', 'ci']);
    for (const key of apiKeys) {
      expect(Object.keys(key).sort()).toEqual(['accountId', 'createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'revokedAt', 'scopes', 'status']);
      expect(key).toMatchObject({ accountId: account.id, status: 'active', revokedAt: null });
    }
    expect([...apiKeys[1].scopes].sort()).toEqual(['events:read', 'resources:read']);
    for (const secret of [primaryKey, scopedKey]) {
      expect(json.stdout).not.toContain(secret);
      expect(json.stdout).not.toContain(createHash('sha256').update(secret).digest('hex'));
    }
    expect(json.stdout).not.toContain('ddk_');

    const text = await cli('keys', 'list', '--account', account.id);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+STATUS\s+EXPIRES\s+LAST USED\s+SCOPES$/);
    expect(text.stdout).toMatch(/\sci\s+active\s+\S+\s+never\s+resources:read events:read/);
    expect(text.stdout).not.toContain('ddk_');

    const unknown = await cli('keys', 'list', '--account', 'acc_nobody');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no account with id acc_nobody (devdata accounts list lists the accounts)');
  });

  it('keys revoke revokes a key with an operator audit record; again is a no-op; an unknown id fails', async () => {
    const issued = parseSingleJson((await cli('keys', 'issue', '--account', account.id, '--name', 'to-revoke', '--json')).stdout).apiKey;
    const revoked = await cli('keys', 'revoke', issued.id, '--json');
    expect(revoked.code, revoked.stderr).toBe(0);
    const outcome = parseSingleJson(revoked.stdout);
    expect(outcome.revoked).toBe(true);
    expect(outcome.apiKey).toMatchObject({ id: issued.id, name: 'to-revoke', status: 'revoked', revokedAt: expect.stringMatching(ISO_MS) });
    expect(revoked.stdout).not.toContain(issued.key);

    const db = new SQLite(dbPath, { readonly: true });
    try {
      const audit = db.prepare(`select actor, target from audit_log where type = 'key.revoked' and account_id = ?`).all(account.id) as Array<{
        actor: string;
        target: string;
      }>;
      expect(audit.map((row) => [JSON.parse(row.actor), JSON.parse(row.target)])).toEqual([[{ kind: 'operator' }, { type: 'api_key', id: issued.id }]]);
    } finally {
      db.close();
    }

    const again = await cli('keys', 'revoke', issued.id);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`API key ${issued.id} was already revoked at ${outcome.apiKey.revokedAt}; nothing changed.`);

    const listed = parseSingleJson((await cli('keys', 'list', '--account', account.id, '--json')).stdout).apiKeys;
    expect(listed.find((key: any) => key.id === issued.id)).toMatchObject({ status: 'revoked', revokedAt: outcome.apiKey.revokedAt });
    expect(parseSingleJson((await cli('accounts', 'list', '--json')).stdout).accounts.find((row: any) => row.id === account.id).activeKeys).toBe(2);

    const unknown = await cli('keys', 'revoke', 'key_doesnotexist');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no API key with id key_doesnotexist');
  });

  describe('serve', () => {
    let server: ServerProcess;
    let baseUrl: string;
    let authenticatedRequests = 0;
    let inFlightKey: string | undefined;

    beforeAll(async () => {
      // A long flush interval: usage can reach the database only through the flush at shutdown.
      server = new ServerProcess({ ...env, PORT: '0', LOG_LEVEL: 'info', USAGE_FLUSH_INTERVAL_MS: '600000' }, workDir);
      baseUrl = await server.listening();
    });

    afterAll(() => {
      if (server && server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    });

    it('answers /health over real HTTP on the port it logged', async () => {
      const response = await fetch(`${baseUrl}/health`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: 'ok' });
      const ready = await fetch(`${baseUrl}/api/v1/health`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready', checks: { storage: { status: 'ok' } } });
    });

    it('accepts the key made by the CLI as a Bearer credential and as X-API-Key', async () => {
      const bearer = await fetch(`${baseUrl}/api/v1/auth/me`, { headers: { authorization: `Bearer ${primaryKey}` } });
      authenticatedRequests++;
      expect(bearer.status).toBe(200);
      const me = (await bearer.json()) as any;
      expect(me.account).toEqual(account);
      expect(me.credential.kind).toBe('api_key');
      expect([...me.credential.scopes].sort()).toEqual([...ALL_SCOPES].sort());
      expect(me.api).toEqual({ name: 'Developer Data Service API', version: '1.3.0' });

      const header = await fetch(`${baseUrl}/api/v1/auth/me`, { headers: { 'x-api-key': primaryKey } });
      authenticatedRequests++;
      expect(header.status).toBe(200);
      expect(((await header.json()) as any).account.id).toBe(account.id);

      const scoped = await fetch(`${baseUrl}/api/v1/auth/me`, { headers: { authorization: `Bearer ${scopedKey}` } });
      authenticatedRequests++;
      expect(scoped.status).toBe(200);
      expect([...((await scoped.json()) as any).credential.scopes].sort()).toEqual(['events:read', 'resources:read']);

      const forbidden = await fetch(`${baseUrl}/api/v1/keys`, { headers: { authorization: `Bearer ${scopedKey}` } });
      authenticatedRequests++;
      expect(forbidden.status).toBe(403);
      await forbidden.arrayBuffer();
    });

    it('writes one request log line per request, carrying the response X-Request-Id', async () => {
      const generated = await fetch(`${baseUrl}/api/v1/auth/me`, { headers: { 'x-api-key': primaryKey } });
      authenticatedRequests++;
      expect(generated.status).toBe(200);
      await generated.arrayBuffer();
      const generatedId = generated.headers.get('x-request-id');
      expect(generatedId).toMatch(/^req_/);

      const chosen = await fetch(`${baseUrl}/api/v1/auth/me`, { headers: { authorization: `Bearer ${primaryKey}`, 'x-request-id': 'e2e-trace-42' } });
      authenticatedRequests++;
      expect(chosen.status).toBe(200);
      await chosen.arrayBuffer();
      expect(chosen.headers.get('x-request-id')).toBe('e2e-trace-42');

      for (const id of [generatedId, 'e2e-trace-42']) {
        const line = await server.waitForLog((entry) => entry.requestId === id && entry.msg === 'request completed', `the log line of ${id}`);
        expect(line).toMatchObject({ requestId: id, method: 'GET', url: '/api/v1/auth/me', statusCode: 200 });
        expect(server.logLines().filter((entry) => entry.requestId === id && entry.msg === 'request completed')).toHaveLength(1);
      }
    });

    it('with PORT=0 and no BASE_URL, advertises the port it chose as its base address', async () => {
      // BASE_URL defaults to http://localhost:$PORT (docs/decisions.md: "Operator CLI"); PORT=0 means "any free port", so
      // the public base address (OpenAPI servers, OAuth endpoints and issuer) must name the chosen one.
      const port = new URL(baseUrl).port;
      const response = await fetch(`${baseUrl}/openapi.json`);
      expect(response.status).toBe(200);
      const document = (await response.json()) as any;
      expect(document.servers?.[0]?.url).toBe(`http://localhost:${port}`);
      expect(document.components.securitySchemes.oauth2.flows.clientCredentials.tokenUrl).toBe(`http://localhost:${port}/oauth/token`);
    });

    it('never writes a key secret to its output', async () => {
      // Make sure the log lines of every request above are written before looking.
      await fetch(`${baseUrl}/health`, { headers: { 'x-request-id': 'e2e-log-barrier' } }).then((response) => response.arrayBuffer());
      await server.waitForLog((entry) => entry.requestId === 'e2e-log-barrier', 'the barrier request log line');
      for (const secret of [primaryKey, scopedKey]) {
        expect(server.output).not.toContain(secret);
        expect(server.output).not.toContain(secret.slice('ddk_'.length));
      }
    });

    it('refuses a key from its next request once the CLI revoked it beside the running server', async () => {
      const issued = parseSingleJson(
        (await cli('keys', 'issue', '--account', account.id, '--name', 'revoked-live', '--scopes', 'resources:read', '--json')).stdout,
      ).apiKey;
      const me = () => fetch(`${baseUrl}/api/v1/auth/me`, { headers: { authorization: `Bearer ${issued.key}` } });
      // Twice: the second answer comes from the server's credential cache.
      for (let i = 0; i < 2; i++) {
        const response = await me();
        authenticatedRequests++;
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
      const revoked = await cli('keys', 'revoke', issued.id);
      expect(revoked.code, revoked.stderr).toBe(0);
      const refused = await me();
      expect(refused.status).toBe(401);
      await refused.arrayBuffer();
    });

    it('finishes a request in flight at SIGTERM, then exits 0 having flushed usage to the database', async () => {
      const body = JSON.stringify({ name: 'in-flight', scopes: ['resources:read'] });
      // `Expect: 100-continue` makes the handover deterministic: the server answers "100 Continue" in
      // the same tick it accepts and routes the request, and only then is the signal sent; the body
      // follows once the server has logged that it is shutting down.
      const response = await new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolvePromise, reject) => {
        const request = httpRequest(`${baseUrl}/api/v1/keys`, {
          method: 'POST',
          headers: {
            'x-api-key': primaryKey,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            expect: '100-continue',
            connection: 'close',
          },
        });
        request.once('error', reject);
        request.once('continue', () => {
          server.child.kill('SIGTERM');
          server.waitForLog((entry) => entry.signal === 'SIGTERM', 'the shutdown log line').then(() => request.end(body), reject);
        });
        request.once('response', (incoming) => {
          let text = '';
          incoming.setEncoding('utf8');
          incoming.on('data', (chunk: string) => (text += chunk));
          incoming.once('end', () => resolvePromise({ status: incoming.statusCode ?? 0, headers: incoming.headers, body: text }));
          incoming.once('error', reject);
        });
        request.flushHeaders();
      });
      authenticatedRequests++;
      expect(response.status, response.body).toBe(201);
      const created = JSON.parse(response.body);
      expect(created.name).toBe('in-flight');
      expect(created.key).toMatch(/^ddk_/);
      inFlightKey = created.key;

      const exit = await server.exitWithin();
      expect(exit).toEqual({ code: 0, signal: null });

      // No new connections once it has gone.
      await expect(fetch(`${baseUrl}/health`)).rejects.toThrow();

      const db = new SQLite(dbPath, { readonly: true });
      try {
        const key = db.prepare('select name, scopes from api_keys where name = ? and account_id = ?').get('in-flight', account.id);
        expect(key).toBeDefined();
        const usage = db.prepare('select day, requests, errors from usage_daily where account_id = ?').all(account.id) as Array<{
          day: string;
          requests: number;
          errors: number;
        }>;
        expect(usage.length).toBeGreaterThanOrEqual(1);
        const total = usage.reduce((sum, row) => sum + Number(row.requests), 0);
        expect(total).toBeGreaterThanOrEqual(authenticatedRequests);
        expect(usage.reduce((sum, row) => sum + Number(row.errors), 0)).toBeGreaterThanOrEqual(1); // the 403
        const lastUsed = db.prepare('select last_used_at from api_keys where account_id = ? and name = ?').all(account.id, 'ci') as Array<{
          last_used_at: string | null;
        }>;
        expect(lastUsed[0]?.last_used_at).toMatch(ISO_MS);
      } finally {
        db.close();
      }
    });

    it('did not write any secret to its output, shutdown included', () => {
      expect(server.child.exitCode).toBe(0);
      for (const secret of [primaryKey, scopedKey, inFlightKey]) {
        expect(secret).toBeDefined();
        expect(server.output).not.toContain(secret!);
        expect(server.output).not.toContain(secret!.slice('ddk_'.length));
      }
    });
  });
});

describe('default configuration', () => {
  it('lists every variable config.ts reads in CONFIG_VARIABLES (what the tests and the benchmark clear), and README documents each', () => {
    const source = readFileSync(join(ROOT, 'src', 'config.ts'), 'utf8').replace(/export const CONFIG_VARIABLES = \[[^\]]*\]/, '');
    const read = new Set([...source.matchAll(/env(?:\.([A-Z][A-Z0-9_]+)|, '([A-Z][A-Z0-9_]+)')/g)].map((match) => match[1] ?? match[2]));
    expect(read.size).toBeGreaterThan(10);
    expect([...CONFIG_VARIABLES].sort()).toEqual([...read].sort());
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const name of CONFIG_VARIABLES) expect(readme, name).toContain(`\`${name}\``);
  });

  it('npm start runs the built CLI, and the bin is dist/cli.js', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.scripts.start).toBe('node dist/cli.js serve');
    expect(pkg.bin).toEqual({ devdata: 'dist/cli.js' });
    expect(pkg.scripts.prepare).toMatch(/build/);
  });

  it('without DATABASE_URL, serve creates ./data/devdata.db under its working directory', async () => {
    const cwd = mkdtempSync(join(workDir, 'default-'));
    expect(existsSync(join(cwd, 'data'))).toBe(false);
    const server = new ServerProcess(cleanEnv({ PORT: '0' }), cwd);
    try {
      const baseUrl = await server.listening();
      expect(statSync(join(cwd, 'data')).isDirectory()).toBe(true);
      expect(statSync(join(cwd, 'data', 'devdata.db')).isFile()).toBe(true);

      const ready = await fetch(`${baseUrl}/api/v1/health`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready', checks: { storage: { status: 'ok' } } });

      // The default log level is info: the listening line was printed, as JSON.
      expect(server.logLines().some((entry) => typeof entry.msg === 'string' && entry.msg.includes('listening'))).toBe(true);

      server.child.kill('SIGTERM');
      expect(await server.exitWithin()).toEqual({ code: 0, signal: null });

      // Migrations were applied to that file.
      const db = new SQLite(join(cwd, 'data', 'devdata.db'), { readonly: true });
      try {
        const tables = (db.prepare(`select name from sqlite_master where type = 'table'`).all() as Array<{ name: string }>).map((row) => row.name);
        expect(tables).toEqual(expect.arrayContaining(['accounts', 'api_keys']));
      } finally {
        db.close();
      }
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    }
  });
});
