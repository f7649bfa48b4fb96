// The large-account rows (issue #19, goal 1): an account of 100,000 resources beside one of 1,000
// on the same server, each request kind measured on both in the same run; the ratio is the large
// account's req/s over the small one's. First freshly started (all kinds at once, from the first
// request on, no warm-up), then warm, one kind per row. The accounts are written with bulk SQL
// before the server starts (100,000 requests would take minutes). See bench/README.md.
//
// Alone: node .bench-build/bench/large-account.js [the run's options]  (after npm run build and
// tsc -p tsconfig.bench.json); npm run bench runs it after its other rows.
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { sql, type Kysely } from 'kysely';
import { openStorage } from '../src/storage/database.js';
import { installCleanup, rssMb, sleep, stop } from './children.js';
import { cannon, measureHttp, type HttpMeasurement } from './http-rows.js';
import type { HttpSpec } from './http-specs.js';
import { parseOptions, type Options } from './options.js';
import { postgresForBench } from './postgres.js';
import { log, markdownTable, round, type Row } from './results.js';
import { freePort, runCli, serviceEnv, startServer, type Server } from './server.js';

export const LARGE = 100_000;
export const SMALL = 1_000;

interface Account {
  id: string;
  auth: Record<string, string>;
  size: number;
  /** Its resources' ids are `res_<prefix>_<i>`, i from 0. */
  prefix: string;
}

/** The request kinds, each as the same request on either account. */
const KINDS = [
  {
    key: 'get',
    label: 'GET one resource',
    path: (account: Account, index: number) => `/api/v1/resources/res_${account.prefix}_${(index * 7919) % account.size}`,
  },
  { key: 'first', label: 'first page (50)', path: () => '/api/v1/resources?limit=50' },
  {
    key: 'deep',
    label: 'page at 90% (offset 90,000 / 900)',
    path: (account: Account) => `/api/v1/resources?limit=50&offset=${Math.floor(account.size * 0.9)}`,
  },
  // 10 a page: the small account has 10 switches, so both pages carry the same number of resources.
  { key: 'type', label: 'page of a type (switch, 1%; 10 a page)', path: () => '/api/v1/resources?type=switch&limit=10' },
  { key: 'tag', label: 'page of a tag (tenth, 10%)', path: () => '/api/v1/resources?tag=tenth&limit=50' },
] as const;

/**
 * `size` resources written straight into the tables (as test/resources/large-account.test.ts):
 * the i-th a switch when i is a multiple of 100, tagged `tenth` when a multiple of 10; the kept
 * counts added as the service adds them.
 */
async function seedAccount(db: Kysely<any>, accountId: string, size: number, prefix: string): Promise<void> {
  const { event_seq: base } = await db.selectFrom('accounts').select('event_seq').where('id', '=', accountId).executeTakeFirstOrThrow();
  await sql`
    with recursive n(i) as (select 0 union all select i + 1 from n where i < ${size - 1})
    insert into resources (id, account_id, name, type, state, attributes, tags, version, created_seq, created_at, updated_at)
    select 'res_' || cast(${prefix} as text) || '_' || cast(i as text), cast(${accountId} as text), 'Temperature sensor ' || cast(i as text),
      case when i % 100 = 0 then 'switch' else 'sensor' end,
      case when i % 100 = 0 then 'true' else '21.5' end,
      '{"unit_of_measurement":"°C","device_class":"temperature","friendly_name":"Room temperature","floor":1}',
      case when i % 10 = 0 then '["bench","tenth"]' else '["bench"]' end,
      1, cast(${Number(base)} as integer) + i + 1, '2026-11-24T00:00:00.000Z', '2026-11-24T00:00:00.000Z'
    from n`.execute(db);
  await sql`
    insert into resource_tags (resource_id, account_id, tag, created_seq)
    select id, account_id, 'bench', created_seq from resources where account_id = ${accountId}`.execute(db);
  await sql`
    insert into resource_tags (resource_id, account_id, tag, created_seq)
    select id, account_id, 'tenth', created_seq from resources where account_id = ${accountId} and tags = '["bench","tenth"]'`.execute(db);
  const counts = [
    { kind: '', name: '', count: size },
    { kind: 'type', name: 'switch', count: Math.ceil(size / 100) },
    { kind: 'type', name: 'sensor', count: size - Math.ceil(size / 100) },
    { kind: 'tag', name: 'bench', count: size },
    { kind: 'tag', name: 'tenth', count: Math.ceil(size / 10) },
  ];
  await db
    .insertInto('resource_counts')
    .values(counts.map((count) => ({ account_id: accountId, ...count })))
    .execute();
  await db
    .updateTable('accounts')
    .set({ event_seq: Number(base) + size })
    .where('id', '=', accountId)
    .execute();
}

async function createAccount(env: NodeJS.ProcessEnv, name: string): Promise<{ id: string; auth: Record<string, string> }> {
  const created = JSON.parse(await runCli(['accounts', 'create', '--name', name, '--json'], env)) as { account: { id: string }; apiKey: { key: string } };
  return { id: created.account.id, auth: { authorization: `Bearer ${created.apiKey.key}` } };
}

function specOf(origin: string, account: Account, kind: (typeof KINDS)[number], label: string): HttpSpec {
  return {
    key: `large-${kind.key}`,
    label,
    url: `${origin}${kind.path(account, 0)}`,
    method: 'GET',
    headers: account.auth,
    vary: kind.key === 'get' ? (index) => ({ path: kind.path(account, index) }) : undefined,
  };
}

/** Every kind in turn on one account, from the server's first request on. */
function freshSpec(origin: string, account: Account): HttpSpec {
  return {
    key: 'large-fresh',
    label: `freshly started, the five kinds in turn (${account.size.toLocaleString('en-US')})`,
    url: `${origin}/api/v1/resources`,
    method: 'GET',
    headers: account.auth,
    vary: (index) => ({ path: KINDS[index % KINDS.length]!.path(account, Math.floor(index / KINDS.length)) }),
  };
}

interface BackendResult {
  /** Per kind (and `fresh`): the large account's measurement and the small one's. */
  pairs: Map<string, { large: HttpMeasurement; small: HttpMeasurement }>;
  rssStartedMb: number | undefined;
  rssWarmMb: number | undefined;
}

async function measureBackend(options: Options, databaseUrl: string, workDir: string, name: string): Promise<BackendResult> {
  const port = await freePort();
  const env = serviceEnv(options, databaseUrl, port);
  const large = await createAccount(env, 'Large');
  const small = await createAccount(env, 'Small');
  const accounts = { large: { ...large, size: LARGE, prefix: 'large' }, small: { ...small, size: SMALL, prefix: 'small' } };
  const seeding = openStorage(databaseUrl);
  const seedStarted = Date.now();
  try {
    await seedAccount(seeding.db as Kysely<any>, large.id, LARGE, 'large');
    await seedAccount(seeding.db as Kysely<any>, small.id, SMALL, 'small');
    // What autovacuum does after so many inserts; the planner needs it to choose the indexes.
    if (seeding.backend === 'postgres') await sql`vacuum analyze`.execute(seeding.db);
  } finally {
    await seeding.close();
  }
  log(`large accounts on ${name}: ${LARGE.toLocaleString('en-US')} and ${SMALL.toLocaleString('en-US')} resources written in ${Date.now() - seedStarted} ms`);

  const pairs = new Map<string, { large: HttpMeasurement; small: HttpMeasurement }>();
  const freshSeconds = Math.max(1, Math.min(options.duration, 5));
  const fresh: Partial<Record<'large' | 'small', HttpMeasurement>> = {};
  let server: Server | undefined;
  let rssStartedMb: number | undefined;
  try {
    for (const which of ['large', 'small'] as const) {
      server = await startServer({ ...options, profile: false }, env, join(workDir, `server-large-${name.toLowerCase()}-${which}.log`), workDir, port);
      if (which === 'large') rssStartedMb = rssMb(server.child.pid);
      // No warm-up: the first requests find nothing read yet.
      fresh[which] = await measureHttp(freshSpec(server.origin, accounts[which]), { ...options, warmup: 0, duration: freshSeconds }, server.child.pid);
      if (which === 'small') break;
      await stop(server.child, 'SIGTERM', 15_000);
      server = undefined;
    }
    pairs.set('fresh', { large: fresh.large!, small: fresh.small! });
    // Both accounts on the same server, each read once before (the large one fully, on SQLite).
    await cannon(freshSpec(server!.origin, accounts.large), { ...options, connections: 4 }, 2);
    await sleep(3000);
    for (const kind of KINDS) {
      const measured = {} as { large: HttpMeasurement; small: HttpMeasurement };
      for (const which of ['large', 'small'] as const) {
        measured[which] = await measureHttp(specOf(server!.origin, accounts[which], kind, `${kind.label} on ${which} (${name})`), options, server!.child.pid);
      }
      pairs.set(kind.key, measured);
    }
    return { pairs, rssStartedMb, rssWarmMb: rssMb(server!.child.pid) };
  } finally {
    if (server) await stop(server.child, 'SIGTERM', 15_000);
  }
}

const TARGET = 'large ≥ 0.5 × small, p99 < 50 ms';

function rowsOf(sqlite: BackendResult, postgres: BackendResult | undefined): Row[] {
  const rows: Row[] = [];
  for (const key of ['fresh', ...KINDS.map((kind) => kind.key)]) {
    const pair = sqlite.pairs.get(key)!;
    const kind = KINDS.find((each) => each.key === key);
    const ratio = round(pair.large.requestsPerSecond / Math.max(1, pair.small.requestsPerSecond), 2);
    const onPostgres = postgres?.pairs.get(key);
    rows.push({
      key: `large-${key}`,
      label: `large account (${LARGE.toLocaleString('en-US')}): ${kind ? kind.label : 'freshly started, the five kinds in turn'}`,
      kind: 'http',
      requestsPerSecond: pair.large.requestsPerSecond,
      p50Ms: pair.large.p50Ms,
      p99Ms: pair.large.p99Ms,
      errors: pair.large.errors,
      rssMb: null,
      ratio,
      ratioOf: `the same on ${SMALL.toLocaleString('en-US')} resources`,
      target: TARGET,
      met: ratio >= 0.5 && pair.large.p99Ms < 50 && pair.large.errors === 0,
      ...(onPostgres
        ? {
            postgres: {
              requestsPerSecond: onPostgres.large.requestsPerSecond,
              p50Ms: onPostgres.large.p50Ms,
              p99Ms: onPostgres.large.p99Ms,
              errors: onPostgres.large.errors,
              ratio: round(onPostgres.large.requestsPerSecond / Math.max(1, onPostgres.small.requestsPerSecond), 2),
              serverCpuUsPerRequest: (onPostgres.large.detail.serverCpuUsPerRequest as number | null) ?? null,
            },
          }
        : {}),
      detail: {
        serverCpuUsPerRequest: pair.large.detail.serverCpuUsPerRequest,
        large: pair.large,
        small: pair.small,
        ...(onPostgres ? { postgres: onPostgres } : {}),
      },
    });
  }
  rows.push({
    key: 'large-rss',
    label: `server RSS with both accounts read (${LARGE.toLocaleString('en-US')} + ${SMALL.toLocaleString('en-US')})`,
    kind: 'memory',
    requestsPerSecond: null,
    p50Ms: null,
    p99Ms: null,
    errors: 0,
    rssMb: sqlite.rssWarmMb === undefined ? null : round(sqlite.rssWarmMb, 1),
    ratio: sqlite.rssWarmMb !== undefined && sqlite.rssStartedMb !== undefined ? round(sqlite.rssWarmMb / sqlite.rssStartedMb, 2) : null,
    ratioOf: 'the same server just started',
    target: null,
    met: null,
    detail: { startedMb: sqlite.rssStartedMb ?? null, postgresWarmMb: postgres?.rssWarmMb ?? null, postgresStartedMb: postgres?.rssStartedMb ?? null },
  });
  return rows;
}

/** Rows of at most 5 s after 1 s of warm-up, so the twelve measurements per backend add minutes, not a quarter of an hour. */
function shortened(options: Options): Options {
  return { ...options, duration: Math.min(options.duration, 5), warmup: Math.min(options.warmup, 1) };
}

/** A bound on what measureLargeAccountRows takes, for the run's own bound. */
export function largeAccountSeconds(options: Options): number {
  if (options.smoke || options.rows.length === 0) return 0;
  const { duration, warmup } = shortened(options);
  return (options.postgres === 'none' ? 1 : 2) * (120 + 2 * duration + 10 * (duration + warmup + 10));
}

/** The large-account rows on SQLite, and on PostgreSQL as their PostgreSQL column when there is one. */
export async function measureLargeAccountRows(given: Options, workDir: string): Promise<Row[]> {
  const options = shortened(given);
  log(`large accounts: ${LARGE.toLocaleString('en-US')} and ${SMALL.toLocaleString('en-US')} resources on one server`);
  const sqlite = await measureBackend(options, `sqlite:${join(workDir, 'large-account.db')}`, workDir, 'SQLite');
  let postgres: BackendResult | undefined;
  if (options.postgres !== 'none') {
    const database = await postgresForBench(options.postgres === 'auto' ? undefined : options.postgres, await freePort(), log);
    if (database) {
      try {
        postgres = await measureBackend(options, database.url, workDir, 'PostgreSQL');
      } finally {
        await database.close();
      }
    }
  }
  return rowsOf(sqlite, postgres);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const options = parseOptions(process.argv.slice(2));
  if (options !== 'help') {
    installCleanup();
    const workDir = mkdtempSync(join(tmpdir(), 'devdata-bench-large-'));
    measureLargeAccountRows(options, workDir)
      .then((rows) => console.log(`\n${markdownTable(rows)}\n`))
      .finally(() => rmSync(workDir, { recursive: true, force: true }))
      .catch((error: unknown) => {
        console.error(error);
        process.exitCode = 1;
      });
  }
}
