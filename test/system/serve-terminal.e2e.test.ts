// `devdata serve` for people (docs/operating.md, "Starting the server"), through the built CLI: the
// start banner and log lines for people with LOG_FORMAT=pretty, and on a real terminal (util-linux
// `script` gives it one); the command the banner prints, run as printed; and the rule for a SQLite
// DATABASE_URL whose directory does not exist.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';
import { createAccountCommand, describeDatabase } from '../../src/cli/start-banner.js';
import { CLI, cleanEnv, killAll, run, scriptAvailable, ServerProcess } from '../support/processes.js';

let workDir: string;

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), 'devdata-serve-terminal-'));
});

afterAll(async () => {
  await killAll();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

const CLOCK = String.raw`\d{2}:\d{2}:\d{2}\.\d{3}`;
const ESC = String.fromCharCode(27);
/** A terminal's colour code (SGR). */
const COLOUR = new RegExp(`${ESC}\\[[0-9;]*m`);
const withoutColour = (text: string) => text.replace(new RegExp(COLOUR.source, 'g'), '');

function banner(output: string): { address: string; console: string; database: string; metrics?: string; command: string } {
  const row = (label: string) => new RegExp(`^ {2}${label} +(.+)$`, 'm').exec(output)?.[1]?.trim();
  return {
    address: row('Listening on')!,
    console: row('Console')!,
    database: row('Database')!,
    metrics: row('Metrics'),
    command: /^ {2}(npx devdata accounts create .*)$/m.exec(output)?.[1] ?? '',
  };
}

describe('devdata serve with LOG_FORMAT=pretty (standard output a pipe)', () => {
  let server: ServerProcess;
  let dbPath: string;

  beforeAll(() => {
    // A directory that does not exist, made because DATABASE_CREATE says so.
    dbPath = join(workDir, 'pretty', 'data', 'devdata.db');
    server = new ServerProcess(
      cleanEnv({ DATABASE_URL: `sqlite:${dbPath}`, DATABASE_CREATE: 'true', PORT: '0', METRICS_PORT: '0', LOG_FORMAT: 'pretty', LOG_LEVEL: 'info' }),
      workDir,
    );
  });

  afterAll(() => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  });

  it('prints the banner once listening: address, console, database, metrics, and what to do next', async () => {
    await server.waitForOutput(/Ctrl-C stops it\./, 'the end of the banner');
    const facts = banner(server.stdout);
    expect(facts.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const port = new URL(facts.address).port;
    expect(facts.console).toBe(`http://localhost:${port}/console`);
    expect(facts.database).toBe(`SQLite ${dbPath}`);
    expect(existsSync(dbPath)).toBe(true);
    expect(server.stdout).toMatch(/^devdata \d+\.\d+\.\d+ is running$/m);

    const page = await fetch(facts.console.replace('localhost', '127.0.0.1'));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    await page.arrayBuffer();
    const metrics = await fetch(facts.metrics!);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('devdata_http_requests_total');

    // Not a terminal: no colour; and no JSON line at all.
    expect(server.stdout).not.toMatch(COLOUR);
    expect(server.stdout.split('\n').filter((line) => line.startsWith('{'))).toEqual([]);
    // The start's log lines come before the banner, as lines for people.
    const [before] = server.stdout.split(/^devdata \d+\.\d+\.\d+ is running$/m);
    expect(before).toMatch(new RegExp(`^${CLOCK} INFO  applied \\d+ database migration\\(s\\) migrations=\\[`, 'm'));
  });

  it('prints a command that, run as printed from another directory, makes an account whose key the server takes', async () => {
    const { command, address } = banner(server.stdout);
    expect(command).toBe(`npx devdata accounts create --name "My account" --database-url sqlite:${dbPath}`);
    const elsewhere = mkdtempSync(join(workDir, 'elsewhere-'));
    const made = await run('bash', ['-c', command.replace(/^npx devdata/, `"${process.execPath}" "${CLI}"`)], { env: cleanEnv({}), cwd: elsewhere });
    expect(made.code, made.stderr).toBe(0);
    const key = /Key \(shown once[^)]*\): (ddk_\S+)/.exec(made.stdout)?.[1];
    expect(key, made.stdout).toBeDefined();
    expect(existsSync(join(elsewhere, 'data'))).toBe(false);

    const me = await fetch(`${address}/api/v1/auth/me?from=banner`, { headers: { authorization: `Bearer ${key}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { account: { name: string } }).account.name).toBe('My account');

    // The access line for people: time, level, method, URL, status, milliseconds, request id.
    const id = me.headers.get('x-request-id')!;
    const line = await server.waitForOutput(/^.*GET \/api\/v1\/auth\/me\?from=banner.*$/m, 'the access line');
    expect(line[0]).toMatch(new RegExp(`^${CLOCK} INFO  GET /api/v1/auth/me\\?from=banner 200 \\d+(\\.\\d)? ms  ${id}$`));
    expect(server.output).not.toContain(key!);
    expect(server.output).not.toContain(key!.slice('ddk_'.length));
  });

  it('shows a refused request with its status, and stops on SIGTERM with its shutdown line', async () => {
    const { address } = banner(server.stdout);
    const missing = await fetch(`${address}/api/v1/resources?from=pretty`);
    expect(missing.status).toBe(401);
    await missing.arrayBuffer();
    await server.waitForOutput(/GET \/api\/v1\/resources\?from=pretty 401 /, 'the 401 access line');
    server.child.kill('SIGTERM');
    expect(await server.exitWithin()).toEqual({ code: 0, signal: null });
    expect(server.stdout).toMatch(new RegExp(`^${CLOCK} INFO  shutting down: finishing in-flight requests signal=SIGTERM$`, 'm'));
  });
});

describe('devdata serve on a terminal', () => {
  const onTerminal = (env: Record<string, string>) =>
    new ServerProcess(cleanEnv({ DATABASE_URL: `sqlite:${join(workDir, 'tty.db')}`, PORT: '0', LOG_LEVEL: 'info', SHELL: '/bin/sh', ...env }), workDir, {
      file: 'script',
      // -e: script exits with the server's status; -f: output as it comes. `exec`: the server replaces
      // the shell script starts (SHELL), which would otherwise take Ctrl-C's SIGINT too and, as dash
      // does, report it (130) after the server has stopped cleanly.
      args: ['-qefc', `exec "${process.execPath}" "${CLI}" serve`, '/dev/null'],
    });

  it.skipIf(!scriptAvailable)('prints the banner and coloured lines for people by itself, and Ctrl-C stops it cleanly', async () => {
    const server = onTerminal({});
    await server.waitForOutput(/Ctrl-C stops it\./, 'the end of the banner');
    const plain = () => withoutColour(server.stdout).replace(/\r/g, '');
    expect(server.stdout).toMatch(COLOUR);
    const { address, database } = banner(plain());
    expect(database).toBe(`SQLite ${join(workDir, 'tty.db')}`);
    const health = await fetch(`${address}/health?from=tty`);
    expect(health.status).toBe(200);
    await health.arrayBuffer();
    await server.waitForOutput(/\/health\?from=tty/, 'the access line');
    // Status in green on a terminal.
    expect(server.stdout).toContain(`GET /health?from=tty ${ESC}[32m200${ESC}[0m `);
    // Ctrl-C on the terminal: SIGINT to the server, which finishes and exits 0.
    server.child.stdin!.write('\x03');
    expect(await server.exitWithin()).toEqual({ code: 0, signal: null });
    expect(plain()).toMatch(/INFO {2}shutting down: finishing in-flight requests signal=SIGINT/);
  });

  it.skipIf(!scriptAvailable)('LOG_FORMAT=json keeps JSON lines on a terminal, and no banner', async () => {
    const server = onTerminal({ LOG_FORMAT: 'json' });
    const line = await server.waitForLog((entry) => typeof entry.port === 'number', 'the listening line');
    expect(line.msg).toMatch(/^devdata listening on http:/);
    expect(server.stdout).not.toContain('Ctrl-C stops it');
    server.child.stdin!.write('\x03');
    expect(await server.exitWithin()).toEqual({ code: 0, signal: null });
  });
});

describe('the database a DATABASE_URL names', () => {
  const env = (url: string, extra: Record<string, string> = {}) => cleanEnv({ DATABASE_URL: url, PORT: '0', ...extra });
  const message = (directory: string) =>
    `devdata: the directory ${directory} of DATABASE_URL does not exist; create it, or pass --create-database / set DATABASE_CREATE=true to create it`;

  /** Values that get each command of the table past its own checks of its arguments, to where it opens the database. */
  const SAMPLE_VALUES: Record<string, string> = {
    name: 'x',
    account: 'acc_x',
    email: 'a@example.com',
    scopes: 'resources:read',
    'expires-in-days': '1',
    port: '0',
  };
  const invocation = (command: (typeof COMMANDS)[number]) => [
    ...command.name.split(' '),
    ...(command.positionals ?? []).map(() => join(workDir, 'some-file')),
    ...Object.entries(command.options).flatMap(([name, spec]) => (spec.type === 'string' ? [`--${name}`, SAMPLE_VALUES[name] ?? 'x'] : [])),
  ];

  it('refuses a SQLite file in a directory that does not exist, for every command that would make the database, creating nothing', async () => {
    const missing = join(workDir, 'missing', 'deeper');
    const url = `sqlite:${join(missing, 'devdata.db')}`;
    const makers = COMMANDS.filter((command) => command.makesDatabase);
    expect(makers.map((command) => command.name)).toEqual(expect.arrayContaining(['serve', 'migrate', 'accounts create']));
    const results = await Promise.all(makers.map((command) => run(process.execPath, [CLI, ...invocation(command)], { env: env(url), cwd: workDir })));
    for (const [index, result] of results.entries()) {
      const what = invocation(makers[index]!).join(' ');
      expect(result.code, `${what}: ${result.stderr}`).toBe(1);
      expect(result.stderr.trim(), what).toBe(message(missing));
      expect(result.stdout, what).toBe('');
    }
    // Backup and restore say what is missing themselves.
    for (const command of COMMANDS.filter((candidate) => !candidate.makesDatabase)) {
      const result = await run(process.execPath, [CLI, ...invocation(command)], { env: env(url), cwd: workDir });
      expect(result.code, command.name).toBe(1);
      expect(result.stderr, command.name).not.toContain('of DATABASE_URL does not exist');
    }
    expect(existsSync(join(workDir, 'missing'))).toBe(false);
    // A relative path is named as the directory it resolves to.
    const relative = await run(process.execPath, [CLI, 'migrate'], { env: env('sqlite:./nowhere/x.db'), cwd: workDir });
    expect(relative.code).toBe(1);
    expect(relative.stderr.trim()).toBe(message(join(workDir, 'nowhere')));
  });

  it('creates it with --create-database or DATABASE_CREATE=true, and uses a directory that exists as ever', async () => {
    const flagged = join(workDir, 'flagged', 'data');
    const byFlag = await run(process.execPath, [CLI, 'migrate', '--create-database', '--database-url', `sqlite:${join(flagged, 'x.db')}`], {
      env: env('sqlite::memory:'),
    });
    expect(byFlag.code, byFlag.stderr).toBe(0);
    expect(existsSync(join(flagged, 'x.db'))).toBe(true);

    const variable = join(workDir, 'variable', 'data');
    const byVariable = await run(process.execPath, [CLI, 'migrate'], { env: env(`sqlite:${join(variable, 'x.db')}`, { DATABASE_CREATE: 'true' }) });
    expect(byVariable.code, byVariable.stderr).toBe(0);
    expect(existsSync(join(variable, 'x.db'))).toBe(true);

    const existing = join(workDir, 'existing');
    mkdirSync(existing);
    const plain = await run(process.execPath, [CLI, 'migrate'], { env: env(`sqlite:${join(existing, 'x.db')}`) });
    expect(plain.code, plain.stderr).toBe(0);

    const wrong = await run(process.execPath, [CLI, 'migrate'], { env: env(`sqlite:${join(existing, 'y.db')}`, { DATABASE_CREATE: 'maybe' }) });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('DATABASE_CREATE must be true or false, got "maybe"');
  });

  it('refuses a DATABASE_URL of another scheme with the valid forms, and never prints the rest of it', async () => {
    const result = await run(process.execPath, [CLI, 'serve'], { env: env('mysql://root:hunter2secret@db.internal/devdata') });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe('devdata: DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres://…, got "mysql:…"');
    expect(result.stderr).not.toContain('hunter2secret');
  });
});

describe('the banner names the database without its password', () => {
  const word = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);

  it('PostgreSQL: host, port, database and user, never the password, and a command that names no password either', () => {
    fc.assert(
      fc.property(
        word,
        fc.string({ minLength: 6, maxLength: 30 }),
        word,
        fc.option(fc.integer({ min: 1, max: 65535 })),
        word,
        (user, password, host, port, database) => {
          const expected = `PostgreSQL ${host}${port === null ? '' : `:${port}`}/${database} as ${user}`;
          const fixed = `${expected} npx devdata accounts create --name "My account" --database-url "$DATABASE_URL"`;
          fc.pre(!fixed.includes(password) && !fixed.includes(encodeURIComponent(password)));
          const url = `postgres://${user}:${encodeURIComponent(password)}@${host}${port === null ? '' : `:${port}`}/${database}`;
          const described = describeDatabase(url);
          const command = createAccountCommand(url);
          expect(described).toBe(expected);
          for (const text of [described, command]) {
            expect(text).not.toContain(password);
            expect(text).not.toContain(encodeURIComponent(password));
          }
          expect(command).toBe('npx devdata accounts create --name "My account" --database-url "$DATABASE_URL"');
        },
      ),
    );
  });

  it('SQLite: the absolute path, quoted for the shell when it needs to be', () => {
    expect(describeDatabase('sqlite::memory:')).toMatch(/^SQLite in memory/);
    expect(createAccountCommand('sqlite:./data/devdata.db')).toBe('npx devdata accounts create --name "My account"');
    expect(createAccountCommand("sqlite:/srv/my data/it's.db")).toBe(
      `npx devdata accounts create --name "My account" --database-url 'sqlite:/srv/my data/it'\\''s.db'`,
    );
    const quoted = createAccountCommand("sqlite:/srv/my data/it's.db").replace('npx devdata accounts create --name "My account" --database-url ', '');
    expect(execFileSync('bash', ['-c', `printf %s ${quoted}`], { encoding: 'utf8' })).toBe("sqlite:/srv/my data/it's.db");
  });
});
