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
import { sha256Hex } from '../../src/platform/ids.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { cleanEnv, killAll, ServerProcess } from '../support/processes.js';
import { until } from '../support/wait.js';

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

/**
 * A second account for standing authority (migration 0012): schedules, apps and webhooks as 1.3.0
 * wrote them (schedules and apps recorded no authorizing credential, webhooks the one that created
 * or last enabled them), and the audit records the migration takes it from. Apart from the first
 * account, whose event log the tests above read exactly: its due schedule runs once the server is up.
 */
const B = {
  account: 'acc_standingBBBBBBBBBBBBBB',
  live: { id: 'key_liveB000000000000000', secret: `ddk_${'l'.repeat(43)}` },
  /** Revoked before the upgrade. */
  gone: { id: 'key_goneB000000000000000', secret: `ddk_${'g'.repeat(43)}` },
  publicApp: { id: 'app_publicB0000000000000', clientId: 'ddc_publicB0000000000000' },
  /** Confidential apps: registered by the live key; by the revoked one; by the revoked one, then rescoped by the live one. */
  confLive: { id: 'app_confLiveB00000000000', clientId: 'ddc_confLiveB00000000000', secret: `ddcs_${'a'.repeat(43)}` },
  confGone: { id: 'app_confGoneB00000000000', clientId: 'ddc_confGoneB00000000000', secret: `ddcs_${'b'.repeat(43)}` },
  confRescoped: { id: 'app_confRescopedB0000000', clientId: 'ddc_confRescopedB0000000', secret: `ddcs_${'c'.repeat(43)}` },
  /** Confidential, with no audit record. */
  confOrphan: { id: 'app_confOrphanB000000000', clientId: 'ddc_confOrphanB000000000', secret: `ddcs_${'d'.repeat(43)}` },
  connection: 'con_upgradeB000000000000',
  connAccess: { id: 'tok_connAccessB000000000', secret: `dda_${'c'.repeat(43)}` },
  connRefresh: { id: 'tok_connRefreshB00000000', secret: `ddr_${'c'.repeat(43)}` },
  /** Client-credentials access tokens issued before the upgrade. */
  ccLive: { id: 'tok_ccLiveB0000000000000', secret: `dda_${'a'.repeat(43)}` },
  ccGone: { id: 'tok_ccGoneB0000000000000', secret: `dda_${'b'.repeat(43)}` },
  schedules: {
    /** Created by the live key, due: runs at start. */
    own: 'sch_ownB0000000000000000',
    /** Created by the connection's token, then renamed (only) by the live key. */
    byConnection: 'sch_byConnectionB0000000',
    /** Created by a client-credentials token of confLive. */
    byApp: 'sch_byAppB00000000000000',
    /** No audit record. */
    orphan: 'sch_orphanB0000000000000',
    /** Created by the revoked key, due: the first run re-checks. */
    goneDue: 'sch_goneDueB000000000000',
    /** Created by the revoked key, not due: the sweep finds it. */
    goneLater: 'sch_goneLaterB0000000000',
    /** Created by the revoked key, then its cron changed by the live key. */
    retimed: 'sch_retimedB000000000000',
  },
  webhooks: {
    /** Created by the live key, then its url and events changed by the connection's token (1.3.0 kept the key). */
    repointed: 'wh_repointedB0000000000000',
    /** Created by the live key, then renamed (only) by the connection's token. */
    renamed: 'wh_renamedB000000000000000',
  },
};
const NOW = Date.now();
const ISO = (ms: number) => new Date(ms).toISOString();
/** The start of the previous minute: a due run, well inside the grace period. */
const DUE = ISO(Math.floor(NOW / 60_000) * 60_000 - 60_000);
/** Daily at DUE's minute: due at start, and not again while the test runs. */
const DAILY_AT_DUE = `${new Date(DUE).getUTCMinutes()} ${new Date(DUE).getUTCHours()} * * *`;
const NEXT_NEW_YEAR = `${new Date(NOW).getUTCFullYear() + 1}-01-01T00:00:00.000Z`;
const B_SCOPES = [
  'resources:read',
  'resources:write',
  'events:read',
  'events:write',
  'webhooks:manage',
  'schedules:manage',
  'usage:read',
  'keys:manage',
  'apps:manage',
];
const GRANTED = ['resources:read', 'events:read', 'events:write', 'webhooks:manage', 'schedules:manage'];

function insertStandingAuthorityRows(db: SQLite.Database): void {
  const auditRows: Array<[type: string, actor: object, target: { type: string; id: string }, data: object]> = [
    ['account.created', { kind: 'operator' }, { type: 'account', id: B.account }, {}],
    ['key.created', { kind: 'operator' }, { type: 'api_key', id: B.live.id }, { name: 'live' }],
    ['key.created', { kind: 'api_key', id: B.live.id }, { type: 'api_key', id: B.gone.id }, { name: 'gone' }],
  ];
  const byLive = { kind: 'api_key', id: B.live.id };
  const byGone = { kind: 'api_key', id: B.gone.id };
  db.prepare('insert into accounts (id, name, email, created_at, event_seq, audit_seq, origin) values (?, ?, ?, ?, ?, ?, ?)').run(
    B.account,
    'Standing Ltd',
    'ops@standing.example',
    AT(10),
    0,
    0, // set below, to the number of audit records
    'operator',
  );
  const key = db.prepare(
    'insert into api_keys (id, account_id, name, key_hash, scopes, created_at, expires_at, revoked_at, last_used_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  key.run(B.live.id, B.account, 'live', sha256Hex(B.live.secret), JSON.stringify(B_SCOPES), AT(10), '2099-01-01T00:00:00.000Z', null, null);
  key.run(B.gone.id, B.account, 'gone', sha256Hex(B.gone.secret), JSON.stringify(B_SCOPES), AT(10), '2099-01-01T00:00:00.000Z', AT(30), null);

  const app = db.prepare(
    'insert into apps (id, account_id, client_id, name, type, redirect_uris, scopes, client_secret_hash, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const redirect = JSON.stringify(['https://client.standing.example/callback']);
  app.run(B.publicApp.id, B.account, B.publicApp.clientId, 'public', 'public', redirect, JSON.stringify(GRANTED), null, AT(11), AT(11));
  auditRows.push(['app.created', byLive, { type: 'app', id: B.publicApp.id }, { name: 'public', clientId: B.publicApp.clientId, type: 'public' }]);
  for (const [row, by, name] of [
    [B.confLive, byLive, 'conf live'],
    [B.confGone, byGone, 'conf gone'],
    [B.confRescoped, byGone, 'conf rescoped'],
  ] as const) {
    app.run(row.id, B.account, row.clientId, name, 'confidential', redirect, JSON.stringify(GRANTED), sha256Hex(row.secret), AT(12), AT(12));
    auditRows.push(['app.created', by, { type: 'app', id: row.id }, { name, clientId: row.clientId, type: 'confidential' }]);
  }
  app.run(
    B.confOrphan.id,
    B.account,
    B.confOrphan.clientId,
    'conf orphan',
    'confidential',
    redirect,
    JSON.stringify(GRANTED),
    sha256Hex(B.confOrphan.secret),
    AT(12),
    AT(12),
  );
  // The live key changed its scopes (its client credentials now rest on that key); a later rename
  // by the revoked key changes nothing of that.
  auditRows.push(['app.updated', byLive, { type: 'app', id: B.confRescoped.id }, { changed: ['scopes'] }]);
  auditRows.push(['app.updated', byGone, { type: 'app', id: B.confRescoped.id }, { changed: ['name'] }]);

  db.prepare(
    'insert into oauth_connections (id, account_id, app_id, approving_key_id, scopes, created_at, expires_at, ended_at, ended_reason) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(B.connection, B.account, B.publicApp.id, B.live.id, JSON.stringify(GRANTED), ISO(NOW - 60_000), ISO(NOW + 20 * 86_400_000), null, null);
  const token = db.prepare(
    'insert into oauth_tokens (token_hash, id, kind, app_id, account_id, connection_id, scopes, created_at, expires_at, revoked_at, rotated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const addToken = (row: { id: string; secret: string }, kind: string, appId: string, connectionId: string | null, expiresAt: string) =>
    token.run(sha256Hex(row.secret), row.id, kind, appId, B.account, connectionId, JSON.stringify(GRANTED), ISO(NOW - 60_000), expiresAt, null, null);
  const hour = ISO(NOW + 3_600_000);
  addToken(B.connAccess, 'access', B.publicApp.id, B.connection, hour);
  addToken(B.connRefresh, 'refresh', B.publicApp.id, B.connection, ISO(NOW + 20 * 86_400_000));
  addToken(B.ccLive, 'access', B.confLive.id, null, hour);
  addToken(B.ccGone, 'access', B.confGone.id, null, hour);

  const schedule = db.prepare(
    'insert into schedules (id, account_id, name, cron, at, timezone, action, enabled, next_run_at, last_run_at, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const tick = { type: 'publish_event', eventType: 'custom.upgraded_tick', data: { from: '1.3.0' } };
  const add = (id: string, cron: string, nextRunAt: string, created: object | undefined) => {
    schedule.run(id, B.account, id, cron, null, 'UTC', JSON.stringify(tick), 1, nextRunAt, null, AT(13), AT(13));
    if (created) {
      auditRows.push(['schedule.created', created, { type: 'schedule', id }, { name: id, cron, at: null, timezone: 'UTC', action: 'publish_event' }]);
    }
  };
  const yearly = '0 0 1 1 *';
  add(B.schedules.own, DAILY_AT_DUE, DUE, byLive);
  add(B.schedules.byConnection, yearly, NEXT_NEW_YEAR, { kind: 'oauth_access_token', id: B.connAccess.id, clientId: B.publicApp.clientId });
  auditRows.push(['schedule.updated', byLive, { type: 'schedule', id: B.schedules.byConnection }, { changed: ['name'] }]);
  add(B.schedules.byApp, yearly, NEXT_NEW_YEAR, { kind: 'oauth_access_token', id: B.ccLive.id, clientId: B.confLive.clientId });
  add(B.schedules.orphan, yearly, NEXT_NEW_YEAR, undefined);
  add(B.schedules.goneDue, '* * * * *', DUE, byGone);
  add(B.schedules.goneLater, yearly, NEXT_NEW_YEAR, byGone);
  add(B.schedules.retimed, yearly, NEXT_NEW_YEAR, byGone);
  auditRows.push(['schedule.updated', byLive, { type: 'schedule', id: B.schedules.retimed }, { changed: ['cron'] }]);
  const webhook = db.prepare(
    'insert into webhooks (id, account_id, name, url, events, enabled, disabled_reason, secret, authorized_by_kind, authorized_by_id, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const byToken = { kind: 'oauth_access_token', id: B.connAccess.id, clientId: B.publicApp.clientId };
  for (const [id, changed] of [
    [B.webhooks.repointed, ['url', 'events']],
    [B.webhooks.renamed, ['name']],
  ] as const) {
    const url = `https://hooks.standing.example/${id}`;
    // 1.3.0 recorded the credential that created or last enabled a webhook: here the live key.
    webhook.run(id, B.account, id, url, JSON.stringify(['resource.deleted']), 1, null, `plain:${WEBHOOK_SECRET}`, 'api_key', B.live.id, AT(14), AT(15));
    auditRows.push(['webhook.created', byLive, { type: 'webhook', id }, { name: id, url, events: ['resource.deleted'], enabled: true }]);
    auditRows.push(['webhook.updated', byToken, { type: 'webhook', id }, { changed, enabled: true }]);
  }
  auditRows.push(['key.revoked', byLive, { type: 'api_key', id: B.gone.id }, {}]);

  const audit = db.prepare('insert into audit_log (id, account_id, seq, type, actor, target, data, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)');
  auditRows.forEach(([type, actor, target, data], index) => {
    audit.run(
      `aud_standingB${String(index).padStart(11, '0')}`,
      B.account,
      index + 1,
      type,
      JSON.stringify(actor),
      JSON.stringify(target),
      JSON.stringify(data),
      AT(20),
    );
  });
  db.prepare('update accounts set audit_seq = ? where id = ?').run(auditRows.length, B.account);
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
      insertStandingAuthorityRows(db);
    } finally {
      db.close();
    }
    // A sweep every second (not every minute) finds the schedules of credentials that ended before the upgrade.
    server = new ServerProcess(cleanEnv({ DATABASE_URL: `sqlite:${dbPath}`, PORT: '0', LOG_LEVEL: 'info', RETENTION_INTERVAL_MS: '1000' }), workDir);
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

  describe('standing authority (migration 0012): what 1.3.0 made takes its credential from the audit log', () => {
    const asB = (path: string, init: RequestInit = {}, secret = B.live.secret) =>
      api(path, { ...init, headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${secret}` } });
    const schedule = async (id: string) => {
      const response = await asB(`/api/v1/schedules/${id}`);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response.body;
    };
    /** The columns the migration filled, read from the database file. */
    const stored = (sql: string, id: string) => {
      const db = new SQLite(dbPath, { readonly: true });
      try {
        return db.prepare(sql).get(id) as Record<string, unknown>;
      } finally {
        db.close();
      }
    };
    const authorizerOf = (id: string) => stored('select authorized_by_kind as kind, authorized_by_id as id from schedules where id = ?', id);
    const disabledRecords = async () => {
      const audit = await asB('/api/v1/audit?type=schedule.disabled&limit=100');
      expect(audit.status).toBe(200);
      return audit.body.data as Array<{ actor: unknown; target: { id: string }; data: { reason: string; credential: unknown } }>;
    };
    const clientCredentials = (app: { clientId: string; secret: string }) =>
      fetch(`${baseUrl}/oauth/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${app.clientId}:${app.secret}`).toString('base64')}`,
        },
        body: 'grant_type=client_credentials',
      }).then(async (response) => ({ status: response.status, body: (await response.json()) as any }));

    it('gives each schedule the credential that created it or last changed what it does', () => {
      expect(authorizerOf(B.schedules.own)).toEqual({ kind: 'api_key', id: B.live.id });
      // A rename by the live key is not a change of what it does: the token's connection stays.
      expect(authorizerOf(B.schedules.byConnection)).toEqual({ kind: 'oauth_connection', id: B.connection });
      expect(authorizerOf(B.schedules.byApp)).toEqual({ kind: 'oauth_app', id: B.confLive.id });
      // Created by the revoked key, retimed by the live one: the live one.
      expect(authorizerOf(B.schedules.retimed)).toEqual({ kind: 'api_key', id: B.live.id });
      expect(authorizerOf(B.schedules.goneLater)).toEqual({ kind: 'api_key', id: B.gone.id });
    });

    it('gives each webhook the credential that created it or last changed its url, events or enabled', () => {
      const webhookAuthorizer = (id: string) => stored('select authorized_by_kind as kind, authorized_by_id as id from webhooks where id = ?', id);
      expect(webhookAuthorizer(B.webhooks.repointed)).toEqual({ kind: 'oauth_connection', id: B.connection });
      expect(webhookAuthorizer(B.webhooks.renamed)).toEqual({ kind: 'api_key', id: B.live.id });
      // No audit record: what 1.3.0 recorded stays.
      expect(webhookAuthorizer(WEBHOOK)).toEqual({ kind: 'api_key', id: KEY_IDS.first });
    });

    it("runs the live key's schedule, enabled with no disabledReason", async () => {
      await until(async () => (await schedule(B.schedules.own)).lastRunAt !== null, 'the due schedule to run', 20_000, 100);
      expect(await schedule(B.schedules.own)).toMatchObject({ enabled: true, disabledReason: null, cron: DAILY_AT_DUE });
      const events = await asB('/api/v1/events');
      expect(events.status).toBe(200);
      const executed = events.body.data.filter((event: any) => event.type === 'schedule.executed');
      expect(executed.map((event: any) => event.data.schedule.id)).toEqual([B.schedules.own]);
      expect(executed[0].data).toMatchObject({ scheduledFor: DUE, outcome: 'succeeded' });
      expect(events.body.data.filter((event: any) => event.type === 'custom.upgraded_tick')).toHaveLength(1);
    });

    it('disables a schedule no audit record names a credential for (credential_revoked)', async () => {
      expect(await schedule(B.schedules.orphan)).toMatchObject({ enabled: false, disabledReason: 'credential_revoked', nextRunAt: null });
      // Enabling it again makes the caller its credential.
      const enabled = await asB(`/api/v1/schedules/${B.schedules.orphan}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ enabled: true }),
      });
      expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
      expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null, nextRunAt: NEXT_NEW_YEAR });
      expect(authorizerOf(B.schedules.orphan)).toEqual({ kind: 'api_key', id: B.live.id });
    });

    it('cuts off the schedules of a key revoked before the upgrade: a due run at once, the others at the first sweep (credential_expired)', async () => {
      await until(
        async () => (await schedule(B.schedules.goneDue)).disabledReason !== null && (await schedule(B.schedules.goneLater)).disabledReason !== null,
        'the revoked key’s schedules to be disabled',
        20_000,
        100,
      );
      for (const id of [B.schedules.goneDue, B.schedules.goneLater]) {
        expect(await schedule(id)).toMatchObject({ enabled: false, disabledReason: 'credential_expired', nextRunAt: null, lastRunAt: null });
      }
      const records = await disabledRecords();
      for (const id of [B.schedules.goneDue, B.schedules.goneLater]) {
        expect(records.find((record) => record.target.id === id)).toMatchObject({
          actor: { kind: 'system' },
          data: { reason: 'credential_expired', credential: { kind: 'api_key', id: B.gone.id } },
        });
      }
      // The due one never ran; the one the live key retimed, and the app's, still stand.
      const executed = (await asB('/api/v1/events')).body.data.filter((event: any) => event.type === 'schedule.executed');
      expect(executed.map((event: any) => event.data.schedule.id)).not.toContain(B.schedules.goneDue);
      expect(await schedule(B.schedules.retimed)).toMatchObject({ enabled: true, disabledReason: null });
      expect(await schedule(B.schedules.byApp)).toMatchObject({ enabled: true, disabledReason: null });
    });

    it("stops the OAuth token's schedule and repointed webhook when its connection is revoked", async () => {
      // The token still works after the upgrade, and its schedule stands.
      const before = await asB(`/api/v1/schedules/${B.schedules.byConnection}`, {}, B.connAccess.secret);
      expect(before.status, JSON.stringify(before.body)).toBe(200);
      expect(before.body).toMatchObject({ enabled: true, disabledReason: null });

      // RFC 7009: the client revokes its refresh token, which ends the connection.
      const revoked = await fetch(`${baseUrl}/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: B.connRefresh.secret, client_id: B.publicApp.clientId }).toString(),
      });
      expect(revoked.status).toBe(200);

      expect((await asB('/api/v1/auth/me', {}, B.connAccess.secret)).status).toBe(401);
      expect(await schedule(B.schedules.byConnection)).toMatchObject({ enabled: false, disabledReason: 'credential_revoked', nextRunAt: null });
      expect((await disabledRecords()).find((record) => record.target.id === B.schedules.byConnection)).toMatchObject({
        data: { reason: 'credential_revoked', credential: { kind: 'oauth_connection', id: B.connection } },
      });
      expect(await schedule(B.schedules.own)).toMatchObject({ enabled: true, disabledReason: null });

      const hook = async (id: string) => (await asB(`/api/v1/webhooks/${id}`)).body;
      expect(await hook(B.webhooks.repointed)).toMatchObject({ enabled: false, disabledReason: 'credential_revoked' });
      expect(await hook(B.webhooks.renamed)).toMatchObject({ enabled: true, disabledReason: null });
      const hookRecords = await asB('/api/v1/audit?type=webhook.disabled&limit=100');
      expect(hookRecords.body.data.map((record: any) => [record.target.id, record.data])).toEqual([
        [B.webhooks.repointed, { reason: 'credential_revoked', credential: { kind: 'oauth_connection', id: B.connection } }],
      ]);
    });

    it('issues client-credentials tokens only to apps whose registering (or rescoping) key lives', async () => {
      expect(stored('select authorized_by_key_id as key from apps where id = ?', B.confLive.id)).toEqual({ key: B.live.id });
      expect(stored('select authorized_by_key_id as key from apps where id = ?', B.confGone.id)).toEqual({ key: B.gone.id });
      expect(stored('select authorized_by_key_id as key from apps where id = ?', B.confRescoped.id)).toEqual({ key: B.live.id });

      const live = await clientCredentials(B.confLive);
      expect(live.status, JSON.stringify(live.body)).toBe(200);
      expect(live.body).toMatchObject({ token_type: 'Bearer' });
      const me = await asB('/api/v1/auth/me', {}, live.body.access_token);
      expect(me.status).toBe(200);
      expect(me.body.account.id).toBe(B.account);
      expect((await clientCredentials(B.confRescoped)).status).toBe(200);

      const gone = await clientCredentials(B.confGone);
      expect(gone.status).toBe(401);
      expect(gone.body.error).toBe('invalid_client');

      // Tokens issued before the upgrade: the live key's app's still work, the revoked key's app's do not.
      expect((await asB('/api/v1/auth/me', {}, B.ccLive.secret)).status).toBe(200);
      expect((await asB('/api/v1/auth/me', {}, B.ccGone.secret)).status).toBe(401);
      // The sweep records the end of the revoked key's app's client credentials.
      const ended = async () => (await asB('/api/v1/audit?type=app.client_credentials_ended&limit=100')).body.data;
      await until(async () => (await ended()).length > 0, 'app.client_credentials_ended', 20_000, 100);
      expect((await ended()).map((record: any) => [record.target.id, record.data])).toEqual([
        [B.confGone.id, { reason: 'credential_expired', key: B.gone.id }],
      ]);

      // No record names a key: no client-credentials tokens until a key rotates its secret (or changes its scopes).
      expect(stored('select authorized_by_key_id as key from apps where id = ?', B.confOrphan.id)).toEqual({ key: null });
      expect((await clientCredentials(B.confOrphan)).body.error).toBe('invalid_client');
      const rotated = await asB(`/api/v1/apps/${B.confOrphan.id}/rotate-secret`, { method: 'POST' });
      expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
      expect((await clientCredentials({ clientId: B.confOrphan.clientId, secret: rotated.body.clientSecret })).status).toBe(200);
    });
  });
});
