// Backups, restores and the secrets key, end to end (docs/operating.md, "Backups" and "The secrets
// key"): the built server and CLI as child processes on SQLite files in a temporary directory.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import SQLite from '../../src/storage/sqlite-driver.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/platform/secret-box.js';
import { CLI, cleanEnv, killAll, run, ServerProcess } from '../support/processes.js';

let workDir: string;

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), 'devdata-backup-'));
});

afterAll(async () => {
  await killAll();
  rmSync(workDir, { recursive: true, force: true });
});

function envFor(dbPath: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cleanEnv({
    DATABASE_URL: `sqlite:${dbPath}`,
    PORT: '0',
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: '1000000',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    ...extra,
  });
}

function keyOf(file: string): Buffer {
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
}

function storedSecrets(dbPath: string): Map<string, string> {
  const db = new SQLite(dbPath, { readonly: true });
  try {
    return new Map((db.prepare('select id, secret from webhooks').all() as Array<{ id: string; secret: string }>).map((row) => [row.id, row.secret]));
  } finally {
    db.close();
  }
}

async function stop(server: ServerProcess): Promise<void> {
  server.child.kill('SIGTERM');
  expect(await server.exitWithin()).toEqual({ code: 0, signal: null });
}

/** Every event of the account, through the API. */
async function allEventIds(baseUrl: string, key: string): Promise<number[]> {
  const ids: number[] = [];
  let after = 0;
  for (;;) {
    const response = await fetch(`${baseUrl}/api/v1/events?after=${after}&limit=1000`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    const page = (await response.json()) as { data: Array<{ id: number }>; cursor: number; hasMore: boolean };
    ids.push(...page.data.map((event) => event.id));
    after = page.cursor;
    if (!page.hasMore) return ids;
  }
}

describe('backup and restore of a running SQLite server', () => {
  let dbPath: string;
  let keyFile: string;
  let env: NodeJS.ProcessEnv;
  let server: ServerProcess;
  let baseUrl: string;
  let apiKey: string;
  const webhookSecrets = new Map<string, string>();
  const backupFile = () => join(workDir, 'backups', 'devdata-1.db');
  const cli = (...args: string[]) => run(process.execPath, [CLI, ...args], { env, cwd: workDir, timeoutMs: 60_000 });
  let ackedBeforeBackup: number[] = [];
  let ackedAfterBackup: number[] = [];
  /** The key file's content at first start (the key the backup is sealed with). */
  let firstKey = '';

  beforeAll(async () => {
    dbPath = join(workDir, 'live', 'data', 'devdata.db');
    mkdirSync(dirname(dbPath), { recursive: true });
    keyFile = join(workDir, 'live', 'data', 'secrets.key');
    env = envFor(dbPath);
    server = new ServerProcess(env, workDir);
    baseUrl = await server.listening();
    const created = await cli('accounts', 'create', '--name', 'Backed up', '--json');
    expect(created.code, created.stderr).toBe(0);
    apiKey = JSON.parse(created.stdout).apiKey.key;
    for (const name of ['one', 'two', 'three']) {
      const response = await fetch(`${baseUrl}/api/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name, url: 'http://127.0.0.1:9/hook', events: ['resource.deleted'] }),
      });
      const body = (await response.json()) as { id: string; secret: string };
      expect(response.status, JSON.stringify(body)).toBe(201);
      webhookSecrets.set(body.id, body.secret);
    }
  }, 60_000);

  afterAll(() => {
    if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
  });

  it('made a key file of its own beside the data at first start: mode 0600, named in the log, never its content', async () => {
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(keyOf(keyFile)).toHaveLength(32);
    firstKey = readFileSync(keyFile, 'utf8');
    const line = await server.waitForLog((entry) => entry.secretsKeyFile !== undefined, 'the secrets key log line');
    expect(line.secretsKeyFile).toBe(keyFile);
    expect(String(line.msg)).toContain(`made the secrets key file ${keyFile}`);
    expect(server.output).not.toContain(readFileSync(keyFile, 'utf8').trim());
    // Every stored secret is sealed under it.
    const box = new SecretBox(keyOf(keyFile));
    for (const [id, sealed] of storedSecrets(dbPath)) {
      expect(sealed).toMatch(/^enc:v1:/);
      expect(box.open(sealed)).toBe(webhookSecrets.get(id));
    }
  });

  it('backs up while writes go on, and the backup holds every write acknowledged before it began, as a consistent prefix', async () => {
    const acked: number[] = [];
    let writing = true;
    let failures = 0;
    const writer = async () => {
      for (let n = 0; writing; n++) {
        const response = await fetch(`${baseUrl}/api/v1/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'custom.load', data: { n, pad: 'x'.repeat(200) } }),
        });
        if (response.status === 201) acked.push(((await response.json()) as { id: number }).id);
        else {
          failures++;
          await response.arrayBuffer();
        }
      }
    };
    const writers = Array.from({ length: 8 }, writer);
    while (acked.length < 300) await new Promise((resolve) => setTimeout(resolve, 20));
    ackedBeforeBackup = [...acked];
    const result = await cli('backup', backupFile());
    const ackedWhenDone = acked.length;
    while (acked.length < ackedWhenDone + 100) await new Promise((resolve) => setTimeout(resolve, 20));
    writing = false;
    await Promise.all(writers);
    expect(failures).toBe(0);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`written to ${backupFile()}`);
    expect(result.stdout).toContain(`sealed with the key file ${keyFile}`);
    ackedAfterBackup = acked.slice(ackedWhenDone);

    const db = new SQLite(backupFile(), { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      // One self-contained file: not in WAL mode.
      expect(db.pragma('journal_mode', { simple: true })).toBe('delete');
      const ids = db.prepare('select id from events order by id').pluck().all() as number[];
      const last = ids.at(-1)!;
      expect(ids).toEqual(Array.from({ length: last }, (_, index) => index + 1));
      for (const id of ackedBeforeBackup) expect(id).toBeLessThanOrEqual(last);
      expect(Math.max(...acked)).toBeGreaterThan(last);
      // The account's counter agrees with its log: the copy is one moment of the database.
      expect(db.prepare('select event_seq from accounts').pluck().get()).toBe(last);
    } finally {
      db.close();
    }
    expect(existsSync(`${backupFile()}-wal`)).toBe(false);
    expect(readdirSync(join(workDir, 'backups'))).toEqual(['devdata-1.db']);
  });

  it('leaves no signing secret in plain text, and not the key, in the backup file', () => {
    const bytes = readFileSync(backupFile());
    expect(bytes.includes('whsec_')).toBe(false);
    for (const secret of webhookSecrets.values()) expect(bytes.includes(secret.slice('whsec_'.length))).toBe(false);
    expect(bytes.includes(readFileSync(keyFile, 'utf8').trim())).toBe(false);
    expect(bytes.includes(keyOf(keyFile))).toBe(false);
    expect(bytes.includes(apiKey)).toBe(false);
  });

  it('refuses to restore, and to rotate the key, while the server has the database open', async () => {
    // What each would change: the restore every row (the backup is older than the writes since),
    // the rotation every sealed secret and the key file. (Not the file's bytes: the server's
    // background checkpoints move pages from the WAL into it at any moment.)
    const before = { secrets: storedSecrets(dbPath), events: await allEventIds(baseUrl, apiKey), key: readFileSync(keyFile, 'utf8') };
    const restore = await cli('restore', backupFile());
    expect(restore.code).toBe(1);
    expect(restore.stderr).toContain(`${dbPath} is open in another process (a running devdata server`);
    const rotate = await cli('secrets', 'rotate-key');
    expect(rotate.code).toBe(1);
    expect(rotate.stderr).toContain('stop the server first');
    expect({ secrets: storedSecrets(dbPath), events: await allEventIds(baseUrl, apiKey), key: readFileSync(keyFile, 'utf8') }).toEqual(before);
    expect((await fetch(`${baseUrl}/api/v1/health`)).status).toBe(200);
  });

  it('restores with the server stopped, keeps the database it replaced, and the server finds every acknowledged write of the backup', async () => {
    await stop(server);
    const restore = await cli('restore', backupFile(), '--json');
    expect(restore.code, restore.stderr).toBe(0);
    const report = JSON.parse(restore.stdout);
    expect(report).toMatchObject({ database: dbPath, file: backupFile(), accounts: 1, pending: [] });
    expect(report.previous).toMatch(new RegExp(`^${dbPath.replace(/[.]/g, '\\.')}\\.pre-restore-`));
    // The replaced database holds the writes made after the backup.
    const previous = new SQLite(report.previous, { readonly: true });
    try {
      expect(previous.prepare('select max(id) from events').pluck().get()).toBe(Math.max(...ackedBeforeBackup, ...ackedAfterBackup));
    } finally {
      previous.close();
    }

    server = new ServerProcess(env, workDir);
    baseUrl = await server.listening();
    const ids = await allEventIds(baseUrl, apiKey);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, index) => index + 1));
    for (const id of ackedBeforeBackup) expect(ids).toContain(id);
    for (const id of ackedAfterBackup) expect(ids).not.toContain(id);
    const hooks = await fetch(`${baseUrl}/api/v1/webhooks`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(((await hooks.json()) as { data: Array<{ id: string }> }).data.map((hook) => hook.id).sort()).toEqual([...webhookSecrets.keys()].sort());
    const box = new SecretBox(keyOf(keyFile));
    for (const [id, sealed] of storedSecrets(dbPath)) expect(box.open(sealed)).toBe(webhookSecrets.get(id));
  });

  it('rotates the key with the server stopped: every secret sealed again, the file replaced (0600), the server starts on it', async () => {
    await stop(server);
    const oldKey = readFileSync(keyFile, 'utf8');
    const rotate = await cli('secrets', 'rotate-key', '--json');
    expect(rotate.code, rotate.stderr).toBe(0);
    expect(JSON.parse(rotate.stdout)).toEqual({ source: 'file', file: keyFile, resealed: 3 });
    expect(readFileSync(keyFile, 'utf8')).not.toBe(oldKey);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(existsSync(`${keyFile}.new`)).toBe(false);
    const oldBox = new SecretBox(Buffer.from(oldKey.trim(), 'base64'));
    const newBox = new SecretBox(keyOf(keyFile));
    for (const [id, sealed] of storedSecrets(dbPath)) {
      expect(newBox.open(sealed)).toBe(webhookSecrets.get(id));
      expect(oldBox.opens(sealed)).toBe(false);
    }
    server = new ServerProcess(env, workDir);
    baseUrl = await server.listening();
    expect((await fetch(`${baseUrl}/api/v1/webhooks`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(200);
    await stop(server);

    // A backup taken before the rotation needs the old key.
    const refused = await cli('restore', backupFile());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`were sealed with another key than the key file ${keyFile}`);
    const withOldKey = await run(process.execPath, [CLI, 'restore', backupFile()], {
      env: { ...env, SECRETS_KEY: oldKey.trim() },
      cwd: workDir,
      timeoutMs: 60_000,
    });
    expect(withOldKey.code, withOldKey.stderr).toBe(0);
  });

  it('finishes a rotation a crash interrupted between its commit and its rename', async () => {
    // What such a crash leaves: secrets sealed under the key in secrets.key.new, another key still
    // in secrets.key. The backup is sealed under the first key, which secrets.key.new now holds.
    const dir = join(workDir, 'interrupted', 'data');
    mkdirSync(dir, { recursive: true });
    const db = join(dir, 'devdata.db');
    copyFileSync(backupFile(), db);
    writeFileSync(join(dir, 'secrets.key'), `${Buffer.alloc(32, 7).toString('base64')}\n`, { mode: 0o600 });
    writeFileSync(join(dir, 'secrets.key.new'), firstKey, { mode: 0o600 });
    const restarted = new ServerProcess(envFor(db), workDir);
    await restarted.listening();
    await restarted.waitForLog((entry) => String(entry.msg).startsWith('finished a key rotation that was interrupted'), 'the rotation log line');
    await stop(restarted);
    expect(readFileSync(join(dir, 'secrets.key'), 'utf8')).toBe(firstKey);
    expect(existsSync(join(dir, 'secrets.key.new'))).toBe(false);
  });

  it('checks a backup before installing it: not SQLite, not devdata, damaged, from a newer version', async () => {
    const target = join(workDir, 'checks', 'devdata.db');
    const checkEnv = envFor(target, { SECRETS_KEY: Buffer.alloc(32, 5).toString('base64') });
    const restore = (file: string) => run(process.execPath, [CLI, 'restore', file], { env: checkEnv, cwd: workDir, timeoutMs: 60_000 });
    mkdirSync(join(workDir, 'checks'));

    const text = join(workDir, 'checks', 'not-sqlite.db');
    writeFileSync(text, 'this is not a database, only some text that is long enough to look like a header'.repeat(100));
    const notSqlite = await restore(text);
    expect(notSqlite.code).toBe(1);
    expect(notSqlite.stderr).toContain(`${text} is not a SQLite database`);

    const other = join(workDir, 'checks', 'other.db');
    const otherDb = new SQLite(other);
    otherDb.exec('create table notes (body text)');
    otherDb.close();
    const notDevdata = await restore(other);
    expect(notDevdata.code).toBe(1);
    expect(notDevdata.stderr).toContain(`${other} is not a devdata database`);

    const damaged = join(workDir, 'checks', 'damaged.db');
    const bytes = readFileSync(backupFile());
    // Garbage over the middle pages: b-tree pages that no longer parse.
    bytes.fill(0x5a, 4096 * 3, bytes.length - 4096 * 3);
    writeFileSync(damaged, bytes);
    const broken = await restore(damaged);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/failed its integrity check|malformed|not a devdata database/);

    const future = join(workDir, 'checks', 'future.db');
    copyFileSync(backupFile(), future);
    const futureDb = new SQLite(future);
    futureDb.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('9999_from_the_future', new Date().toISOString());
    futureDb.close();
    const newer = await restore(future);
    expect(newer.code).toBe(1);
    expect(newer.stderr).toContain('was made by a newer devdata (migrations 9999_from_the_future are unknown to this version)');

    // Nothing was installed by any of them.
    expect(existsSync(target)).toBe(false);
  });

  it('refuses a backup whose secrets the key here cannot open, and names where the key must go', async () => {
    const target = join(workDir, 'elsewhere', 'data', 'devdata.db');
    const elsewhere = envFor(target);
    const restore = () => run(process.execPath, [CLI, 'restore', backupFile()], { env: elsewhere, cwd: workDir, timeoutMs: 60_000 });
    const noKey = await restore();
    expect(noKey.code).toBe(1);
    const expectedKeyFile = join(workDir, 'elsewhere', 'data', 'secrets.key');
    expect(noKey.stderr).toContain(`there is none here (no SECRETS_KEY, no ${expectedKeyFile})`);

    mkdirSync(join(workDir, 'elsewhere', 'data'), { recursive: true });
    writeFileSync(expectedKeyFile, `${Buffer.alloc(32, 1).toString('base64')}\n`, { mode: 0o600 });
    const wrongKey = await restore();
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toContain(`sealed with another key than the key file ${expectedKeyFile}`);
    expect(existsSync(target)).toBe(false);
  });
});

describe('secrets an older release stored in plain text', () => {
  it('are sealed at the first start without SECRETS_KEY, and leave no plain copy in the database file', async () => {
    const dbPath = join(workDir, 'legacy', 'devdata.db');
    mkdirSync(dirname(dbPath));
    const env = envFor(dbPath);
    const migrate = await run(process.execPath, [CLI, 'migrate'], { env, cwd: workDir });
    expect(migrate.code, migrate.stderr).toBe(0);
    // Several rows on one page: a row rewritten in place of another leaves the old bytes in the
    // page's free space unless they are zeroed.
    const secrets = [...'LMNOPQRSTUVW'].map((letter) => `whsec_${letter.repeat(43)}`);
    const db = new SQLite(dbPath);
    try {
      db.prepare(`insert into accounts (id, name, created_at) values ('acc_legacy0000000000000000', 'Legacy', '2026-01-01T00:00:00.000Z')`).run();
      for (const [index, secret] of secrets.entries()) {
        db.prepare(
          `insert into webhooks (id, account_id, name, url, events, enabled, secret, authorized_by_kind, authorized_by_id, created_at, updated_at, created_seq)
             values (?, 'acc_legacy0000000000000000', 'old', 'https://hooks.legacy.example/x', '["resource.deleted"]', 1, ?, 'api_key', 'key_gone', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', ?)`,
        ).run(`wh_legacy${String(index).padStart(2, '0')}0000000000000000`, `plain:${secret}`, index + 1);
      }
    } finally {
      db.close();
    }
    for (const secret of secrets) expect(readFileSync(dbPath).includes(secret)).toBe(true);

    const server = new ServerProcess(env, workDir);
    await server.listening();
    await server.waitForLog((entry) => entry.sealed === secrets.length, 'the sealing log line');
    await stop(server);
    // A clean stop checkpoints and removes the WAL: the database file is all there is.
    expect(existsSync(`${dbPath}-wal`)).toBe(false);
    expect(readFileSync(dbPath).includes('whsec_')).toBe(false);
    const box = new SecretBox(keyOf(join(workDir, 'legacy', 'secrets.key')));
    const stored = storedSecrets(dbPath);
    secrets.forEach((secret, index) => {
      const sealed = stored.get(`wh_legacy${String(index).padStart(2, '0')}0000000000000000`)!;
      expect(sealed).toMatch(/^enc:v1:/);
      expect(box.open(sealed)).toBe(secret);
      expect(server.output).not.toContain(secret);
    });
  });
});

describe('databases backup and restore do not copy', () => {
  const pgUrl = 'postgres://devdata:hunter2@db.internal:5432/devdata';

  it('on PostgreSQL, backup and restore say how to use pg_dump and pg_restore, and never print the password', async () => {
    const env = cleanEnv({ DATABASE_URL: pgUrl });
    const backup = await run(process.execPath, [CLI, 'backup', join(workDir, 'pg.dump')], { env, cwd: workDir });
    expect(backup.code).toBe(2);
    expect(backup.stderr).toContain('pg_dump --format=custom --file=devdata.dump "$DATABASE_URL"');
    const restore = await run(process.execPath, [CLI, 'restore', join(workDir, 'pg.dump')], { env, cwd: workDir });
    expect(restore.code).toBe(2);
    expect(restore.stderr).toContain('pg_restore --clean --if-exists --no-owner --dbname="$DATABASE_URL" devdata.dump');
    for (const result of [backup, restore]) expect(result.stdout + result.stderr).not.toContain('hunter2');
    const rotate = await run(process.execPath, [CLI, 'secrets', 'rotate-key'], { env, cwd: workDir });
    expect(rotate.code).toBe(2);
    expect(rotate.stderr).toContain('--servers-stopped');
  });

  it('sqlite::memory: needs no key file: the server seals with a key of its own process, and backup says there is nothing to copy', async () => {
    const cwd = mkdtempSync(join(workDir, 'memory-'));
    const env = cleanEnv({ DATABASE_URL: 'sqlite::memory:', PORT: '0', LOG_LEVEL: 'info' });
    const server = new ServerProcess(env, cwd);
    await server.listening();
    const line = await server.waitForLog((entry) => entry.secretsKey === 'memory', 'the in-memory key log line');
    expect(String(line.msg)).toContain('in-memory database');
    await stop(server);
    expect(readdirSync(cwd)).toEqual([]);
    const backup = await run(process.execPath, [CLI, 'backup', join(cwd, 'x.db')], { env, cwd });
    expect(backup.code).toBe(2);
    expect(backup.stderr).toContain('sqlite::memory:, a database that lives only inside one process');
  });
});
