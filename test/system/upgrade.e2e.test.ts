// The upgrade path (docs/operating.md, "Upgrading"): a database made by the previous release's
// migrations, holding rows as that release wrote them, is opened by the current code's server
// (`devdata serve`, a child process), which applies the newer migrations at start; every row then
// reads right through the API.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from '../../src/storage/sqlite-driver.js';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/platform/secret-box.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { cleanEnv, killAll, ServerProcess } from '../support/processes.js';

/**
 * The schema of the previous release (CHANGELOG.md: 1.3.0, migrations 0001-0008). When a release
 * is cut, this becomes that release's list and the rows below are rewritten the way it stored them.
 */
const PREVIOUS_RELEASE_MIGRATIONS = [
  '0001_foundation',
  '0002_resources_events',
  '0003_rate_limits',
  '0004_webhooks',
  '0005_oauth',
  '0006_developer_sessions',
  '0007_schedules',
  '0008_connection_expiry',
];

const ACCOUNT = 'acc_upgradeAAAAAAAAAAAAAAAA';
const KEY_SECRET = `ddk_${'u'.repeat(43)}`;
const KEY_IDS = { first: 'key_first0000000000000000', a: 'key_sameMsA0000000000000', b: 'key_sameMsB0000000000000' };
const WEBHOOK = 'wh_upgrade00000000000000000';
const WEBHOOK_SECRET = `whsec_${'s'.repeat(43)}`;
const TODAY = new Date().toISOString().slice(0, 10);
const AT = (second: number) => `${TODAY}T00:00:${String(second).padStart(2, '0')}.000Z`;

const resources = [
  {
    id: 'res_kitchen000000000000000',
    name: 'kitchen',
    type: 'sensor',
    state: 21.5,
    attributes: { unit: '°C' },
    tags: ['home', 'temp'],
    version: 1,
    createdAt: AT(3),
    updatedAt: AT(3),
  },
  { id: 'res_lamp0000000000000000000', name: 'lamp', type: 'switch', state: true, attributes: {}, tags: [], version: 2, createdAt: AT(4), updatedAt: AT(5) },
];

/** Rows as release 1.3.0 wrote them: no created_seq columns on keys, apps, webhooks and schedules. */
function insertPreviousReleaseRows(db: SQLite.Database): void {
  const scopes = JSON.stringify(['resources:read', 'resources:write', 'events:read', 'events:write', 'webhooks:manage', 'usage:read', 'keys:manage']);
  db.prepare('insert into accounts (id, name, email, created_at, event_seq, audit_seq, origin) values (?, ?, ?, ?, ?, ?, ?)').run(
    ACCOUNT,
    'Upgraded Ltd',
    'ops@upgraded.example',
    AT(1),
    3,
    2,
    'operator',
  );
  const key = db.prepare(
    'insert into api_keys (id, account_id, name, key_hash, scopes, created_at, expires_at, revoked_at, last_used_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const expires = '2099-01-01T00:00:00.000Z';
  key.run(KEY_IDS.first, ACCOUNT, 'first', createHash('sha256').update(KEY_SECRET).digest('hex'), scopes, AT(1), expires, null, AT(2));
  // Two keys of the same millisecond, inserted in the opposite order to their ids: the previous
  // release listed them by (created_at, id), and so must the upgraded one.
  key.run(KEY_IDS.b, ACCOUNT, 'same ms b', createHash('sha256').update('b').digest('hex'), '[]', AT(2), expires, null, null);
  key.run(KEY_IDS.a, ACCOUNT, 'same ms a', createHash('sha256').update('a').digest('hex'), '[]', AT(2), expires, null, null);

  const resource = db.prepare(
    'insert into resources (id, account_id, name, type, state, attributes, tags, version, created_seq, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const tag = db.prepare('insert into resource_tags (resource_id, account_id, tag) values (?, ?, ?)');
  const event = db.prepare('insert into events (account_id, id, type, data, created_at) values (?, ?, ?, ?, ?)');
  resources.forEach((row, index) => {
    resource.run(
      row.id,
      ACCOUNT,
      row.name,
      row.type,
      JSON.stringify(row.state),
      JSON.stringify(row.attributes),
      JSON.stringify(row.tags),
      row.version,
      index + 1,
      row.createdAt,
      row.updatedAt,
    );
    for (const name of row.tags) tag.run(row.id, ACCOUNT, name);
    event.run(
      ACCOUNT,
      index + 1,
      'resource.created',
      JSON.stringify({ resource: { ...row, state: index === 1 ? false : row.state, version: 1, updatedAt: row.createdAt } }),
      row.createdAt,
    );
  });
  event.run(ACCOUNT, 3, 'resource.updated', JSON.stringify({ resource: resources[1], changes: ['state'] }), AT(5));

  // Without SECRETS_KEY the previous release stored webhook secrets marked as plain text.
  db.prepare(
    'insert into webhooks (id, account_id, name, url, events, enabled, disabled_reason, secret, authorized_by_kind, authorized_by_id, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(
    WEBHOOK,
    ACCOUNT,
    'receiver',
    'https://hooks.upgraded.example/devdata',
    JSON.stringify(['resource.deleted']),
    1,
    null,
    `plain:${WEBHOOK_SECRET}`,
    'api_key',
    KEY_IDS.first,
    AT(6),
    AT(6),
  );

  const audit = db.prepare('insert into audit_log (id, account_id, seq, type, actor, target, data, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)');
  audit.run('aud_one00000000000000000000', ACCOUNT, 1, 'account.created', '{"kind":"operator"}', JSON.stringify({ type: 'account', id: ACCOUNT }), '{}', AT(1));
  audit.run(
    'aud_two00000000000000000000',
    ACCOUNT,
    2,
    'key.created',
    '{"kind":"operator"}',
    JSON.stringify({ type: 'api_key', id: KEY_IDS.first }),
    JSON.stringify({ name: 'first' }),
    AT(1),
  );
  db.prepare('insert into usage_daily (account_id, day, requests, errors, events_created, webhook_deliveries) values (?, ?, ?, ?, ?, ?)').run(
    ACCOUNT,
    TODAY,
    40,
    3,
    2,
    0,
  );
}

async function migrateToPreviousRelease(path: string): Promise<void> {
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(path) }) });
  try {
    const previous = Object.fromEntries(PREVIOUS_RELEASE_MIGRATIONS.map((name) => [name, migrations[name]!]));
    const { error } = await new Migrator({ db, provider: { getMigrations: async () => previous } }).migrateToLatest();
    if (error) throw error;
  } finally {
    await db.destroy();
  }
}

let workDir: string;

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), 'devdata-upgrade-'));
});

afterAll(async () => {
  await killAll();
  rmSync(workDir, { recursive: true, force: true });
});

describe('upgrading from the previous release', () => {
  let dbPath: string;
  let server: ServerProcess;
  let baseUrl: string;
  const api = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${baseUrl}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${KEY_SECRET}`, ...(init.headers as Record<string, string>) },
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  beforeAll(async () => {
    // The previous release is a prefix of the current list: migrations are only ever appended.
    expect(Object.keys(migrations).slice(0, PREVIOUS_RELEASE_MIGRATIONS.length)).toEqual(PREVIOUS_RELEASE_MIGRATIONS);
    expect(Object.keys(migrations).length).toBeGreaterThan(PREVIOUS_RELEASE_MIGRATIONS.length);
    dbPath = join(workDir, 'data', 'devdata.db');
    mkdirSync(join(workDir, 'data'));
    await migrateToPreviousRelease(dbPath);
    const db = new SQLite(dbPath);
    try {
      insertPreviousReleaseRows(db);
    } finally {
      db.close();
    }
    server = new ServerProcess(cleanEnv({ DATABASE_URL: `sqlite:${dbPath}`, PORT: '0', LOG_LEVEL: 'info' }), workDir);
    baseUrl = await server.listening();
  }, 60_000);

  afterAll(() => {
    if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
  });

  it('applied every newer migration at start, and logged which', async () => {
    const newer = Object.keys(migrations).slice(PREVIOUS_RELEASE_MIGRATIONS.length);
    const line = await server.waitForLog((entry) => Array.isArray(entry.migrations), 'the migrations log line');
    expect(line.migrations).toEqual(newer);
    const db = new SQLite(dbPath, { readonly: true });
    try {
      const applied = (db.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>).map((row) => row.name);
      expect(applied).toEqual(Object.keys(migrations));
    } finally {
      db.close();
    }
  });

  it("authenticates with the previous release's key and reads the account", async () => {
    const me = await api('/api/v1/auth/me');
    expect(me.status).toBe(200);
    expect(me.body.account).toEqual({ id: ACCOUNT, name: 'Upgraded Ltd' });
    expect(me.body.credential).toMatchObject({ kind: 'api_key', id: KEY_IDS.first });
  });

  it('lists the keys in the order the previous release listed them (created_at, then id)', async () => {
    const keys = await api('/api/v1/keys');
    expect(keys.status).toBe(200);
    expect(keys.body.data.map((key: any) => key.id)).toEqual([KEY_IDS.first, KEY_IDS.a, KEY_IDS.b]);
    expect(keys.body.data[0]).toMatchObject({ name: 'first', createdAt: AT(1), expiresAt: '2099-01-01T00:00:00.000Z' });
  });

  it('reads the resources, their tags and the event log, and continues the event sequence', async () => {
    const list = await api('/api/v1/resources');
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual(resources);
    const tagged = await api('/api/v1/resources?tag=temp');
    expect(tagged.body.data.map((row: any) => row.id)).toEqual([resources[0]!.id]);
    expect((await api(`/api/v1/resources/${resources[1]!.id}`)).body).toEqual(resources[1]);

    const events = await api('/api/v1/events');
    expect(events.status).toBe(200);
    expect(events.body.data.map((event: any) => [event.id, event.type])).toEqual([
      [1, 'resource.created'],
      [2, 'resource.created'],
      [3, 'resource.updated'],
    ]);
    expect(events.body.data[2].data.resource).toEqual(resources[1]);

    const published = await api('/api/v1/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'custom.after_upgrade', data: { ok: true } }),
    });
    expect(published.status).toBe(201);
    expect(published.body.id).toBe(4);

    const patched = await api(`/api/v1/resources/${resources[0]!.id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', 'if-match': '"1"' },
      body: JSON.stringify({ state: 22 }),
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ state: 22, version: 2 });
  });

  it('reads the webhook (its secret never shown), the audit history and the usage of the previous release', async () => {
    const hooks = await api('/api/v1/webhooks');
    expect(hooks.status).toBe(200);
    expect(hooks.body.data).toHaveLength(1);
    expect(hooks.body.data[0]).toMatchObject({
      id: WEBHOOK,
      name: 'receiver',
      url: 'https://hooks.upgraded.example/devdata',
      events: ['resource.deleted'],
      enabled: true,
    });
    expect(JSON.stringify(hooks.body)).not.toContain('whsec_');

    // Its secret, stored in plain text by the previous release, is now sealed under the key file
    // the first start made beside the data.
    const db = new SQLite(dbPath, { readonly: true });
    try {
      const sealed = db.prepare('select secret from webhooks where id = ?').pluck().get(WEBHOOK) as string;
      expect(sealed).toMatch(/^enc:v1:/);
      const key = Buffer.from(readFileSync(join(workDir, 'data', 'secrets.key'), 'utf8').trim(), 'base64');
      expect(new SecretBox(key).open(sealed)).toBe(WEBHOOK_SECRET);
      // Counted on the account row (migration 0011), so the account's writes queue deliveries for it.
      expect(db.prepare('select webhook_count from accounts where id = ?').pluck().get(ACCOUNT)).toBe(1);
    } finally {
      db.close();
    }

    const audit = await api('/api/v1/audit');
    expect(audit.status).toBe(200);
    expect(audit.body.data.slice(0, 2).map((record: any) => record.type)).toEqual(['account.created', 'key.created']);

    const usage = await api('/api/v1/usage?days=1');
    expect(usage.status).toBe(200);
    expect(usage.body.data[0]).toMatchObject({ date: TODAY, errors: 3 });
    expect(usage.body.data[0].requests).toBeGreaterThanOrEqual(40);
  });
});
