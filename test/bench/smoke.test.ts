// The benchmark (bench/, `npm run bench`) in its smoke mode, end to end: compiled, run against the
// built server for a few seconds, and its JSON checked for every row, with numbers and no errors.
// Not a performance test: it only keeps the benchmark from rotting.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findJemalloc, JEMALLOC_PATHS } from '../../bench/allocator.js';
import type { Row } from '../../bench/results.js';
import { HTTP_ROWS as SERVICE_ROWS } from '../../bench/options.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const BENCH = join(ROOT, '.bench-build', 'bench', 'run.js');

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const spawned = new Set<ChildProcess>();

function run(command: string, args: string[], timeoutMs: number): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    spawned.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      // SIGTERM first: the benchmark then stops its own children.
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      reject(new Error(`${command} ${args.join(' ')} timed out after ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      spawned.delete(child);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

/** Newest modification time of the files under `dir` whose names match `pattern`. */
function newestMtime(dir: string, pattern: RegExp): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(path, pattern));
    else if (pattern.test(entry.name)) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** dist/ is older than a source file or a build setting: the server the benchmark starts is stale. */
function distIsStale(): boolean {
  const cli = join(ROOT, 'dist', 'cli.js');
  if (!existsSync(cli)) return true;
  const sources = Math.max(
    newestMtime(join(ROOT, 'src'), /\.ts$/),
    statSync(join(ROOT, 'tsconfig.json')).mtimeMs,
    statSync(join(ROOT, 'tsconfig.build.json')).mtimeMs,
  );
  return sources > statSync(cli).mtimeMs;
}

const HTTP_ROWS = ['baseline', 'floor-contract', 'floor-page', 'floor-page-varied', ...SERVICE_ROWS];
/** Rows of the baseline's own process: no PostgreSQL column. */
const BASELINE_ROWS = new Set(['baseline', 'floor-contract', 'floor-page', 'floor-page-varied']);
// On the suite's PostgreSQL run the PostgreSQL column is measured too, in a schema of that database.
const POSTGRES_URL = /^postgres(ql)?:\/\//.test(process.env.TEST_DATABASE_URL ?? '') ? process.env.TEST_DATABASE_URL : undefined;
const STREAM_ROWS = ['stream-floor-20x10', 'stream-20x10'];
const MEMORY_ROWS = ['rss-idle', 'rss-streams'];
const WEBHOOK_ROWS = ['webhooks', 'webhooks-replay', 'webhooks-excerpt', 'webhooks-20'];
/** The history rows (bench/history-rows.ts): the reads alone have no reference, so no ratio. */
const HISTORY_ALONE_ROWS = ['history-day-5m', 'history-month-1h', 'history-page'];
const HISTORY_ROWS = [
  'history-patch',
  ...HISTORY_ALONE_ROWS,
  ...HISTORY_ALONE_ROWS.map((key) => key.replace('history-', 'history-beside-')),
  'history-bytes-live',
  'history-bytes-single',
  'history-bytes-account',
  'history-rss',
];
/** With a PostgreSQL column: GET and PATCH against two processes on one database (bench/postgres-cluster.ts). */
const TWO_PROCESS_ROWS = POSTGRES_URL ? ['postgres-two-get', 'postgres-two-patch'] : [];

const JEMALLOC = findJemalloc();
const JEMALLOC_REQUIRED = process.env.CI === 'true';
if (!JEMALLOC) {
  process.stderr.write(
    `\n*** jemalloc not found (${JEMALLOC_PATHS.join(', ')}): the bench's --allocator jemalloc test is ${JEMALLOC_REQUIRED ? 'failing (CI=true requires it)' : 'skipped'}. ` +
      'To run it: apt-get install libjemalloc2.\n',
  );
}

describe('npm run bench -- --smoke', () => {
  let workDir: string;

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'devdata-bench-smoke-'));
    if (distIsStale()) {
      const build = await run('npm', ['run', 'build'], 120_000);
      if (build.code !== 0) throw new Error(`npm run build failed (${build.code}):\n${build.stdout}\n${build.stderr}`);
    }
    const compile = await run(process.execPath, [TSC, '-p', 'tsconfig.bench.json'], 120_000);
    if (compile.code !== 0) throw new Error(`tsc -p tsconfig.bench.json failed (${compile.code}):\n${compile.stdout}\n${compile.stderr}`);
  }, 240_000);

  afterAll(() => {
    for (const child of spawned) child.kill('SIGKILL');
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('measures every row and writes them as JSON, with numbers and no errors', async () => {
    const out = join(workDir, 'smoke.json');
    // The history rows take about 25 s a backend (three servers of their own each): about 100 s in all on the PostgreSQL run.
    const result = await run(process.execPath, [BENCH, '--smoke', '--out', out, ...(POSTGRES_URL ? ['--postgres', POSTGRES_URL] : [])], 180_000);
    expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);

    const results = JSON.parse(readFileSync(out, 'utf8')) as { rows: Row[]; table: string; machine: { cpus: number } };
    const rows = new Map(results.rows.map((row) => [row.key, row]));
    expect([...rows.keys()].sort()).toEqual([...HTTP_ROWS, ...STREAM_ROWS, ...WEBHOOK_ROWS, ...MEMORY_ROWS, ...TWO_PROCESS_ROWS, ...HISTORY_ROWS].sort());

    for (const row of results.rows) {
      expect(row.errors, `${row.key}: ${JSON.stringify(row.detail)}`).toBe(0);
      if (TWO_PROCESS_ROWS.includes(row.key)) {
        // Two processes, and one process for comparison: numbers for both, and no ratio to the baseline.
        const { one, two } = row.detail as { one: { requestsPerSecond: number; p50Ms: number; p99Ms: number }; two: { requestsPerSecond: number } };
        expect(one.requestsPerSecond, row.key).toBeGreaterThan(0);
        expect(one.p99Ms, row.key).toBeGreaterThanOrEqual(one.p50Ms);
        expect(two.requestsPerSecond, row.key).toBe(row.requestsPerSecond);
        expect(row.requestsPerSecond, row.key).toBeGreaterThan(0);
        expect(row.p99Ms as number, row.key).toBeGreaterThanOrEqual(row.p50Ms as number);
        continue;
      }
      if (row.kind === 'memory') {
        expect(row.rssMb, row.key).toBeGreaterThan(0);
        continue;
      }
      if (row.kind === 'size') {
        expect(row.bytesPerPoint, row.key).toBeGreaterThan(0);
        continue;
      }
      expect(row.requestsPerSecond, row.key).toBeGreaterThan(0);
      for (const value of [row.p50Ms, row.p99Ms, ...(HISTORY_ALONE_ROWS.includes(row.key) ? [] : [row.ratio])]) {
        expect(typeof value, row.key).toBe('number');
        expect(Number.isFinite(value), row.key).toBe(true);
        expect(value as number, row.key).toBeGreaterThanOrEqual(0);
      }
      expect(row.p99Ms as number, row.key).toBeGreaterThanOrEqual(row.p50Ms as number);
    }
    expect(rows.get('baseline')?.ratio).toBe(1);

    // The server CPU column: every HTTP row, the baseline too, has its CPU per response.
    for (const row of results.rows.filter((candidate) => candidate.kind === 'http' && !TWO_PROCESS_ROWS.includes(candidate.key))) {
      expect(row.detail.serverCpuUsPerRequest as number, row.key).toBeGreaterThan(0);
    }

    // The PostgreSQL column: every service HTTP row measured again, with numbers and no errors.
    for (const row of results.rows) {
      if (!POSTGRES_URL || row.kind !== 'http' || BASELINE_ROWS.has(row.key) || TWO_PROCESS_ROWS.includes(row.key)) {
        expect(row.postgres, row.key).toBeUndefined();
        continue;
      }
      expect(row.postgres, row.key).toBeDefined();
      const pg = row.postgres as NonNullable<Row['postgres']>;
      expect(pg.errors, row.key).toBe(0);
      expect(pg.requestsPerSecond, row.key).toBeGreaterThan(0);
      expect(pg.p99Ms, row.key).toBeGreaterThanOrEqual(pg.p50Ms);
      if (HISTORY_ALONE_ROWS.includes(row.key)) expect(pg.ratio, row.key).toBeNull();
      else expect(pg.ratio, row.key).toBeGreaterThan(0);
    }

    // The history rows: PATCH on and off in each round (both backends' servers answered every one), the
    // reads in every round alone and beside the account, whose points were all backfilled.
    const historyPatch = rows.get('history-patch')?.detail as { rounds: unknown[]; off: { detail: { rounds: unknown[] } }; roundRatios: number[] };
    expect(historyPatch.rounds).toHaveLength(2);
    expect(historyPatch.off.detail.rounds).toHaveLength(2);
    expect(historyPatch.roundRatios).toHaveLength(2);
    // The reads: one round each in a smoke run (bench/history-measure.ts, readRounds).
    for (const key of HISTORY_ALONE_ROWS) {
      expect(rows.get(key)?.detail.rounds, key).toHaveLength(1);
      const beside = rows.get(key.replace('history-', 'history-beside-'))?.detail as { rounds: unknown[]; change: { spread: number } };
      expect(beside.rounds, key).toHaveLength(1);
      expect(beside.change.spread, key).toBeGreaterThanOrEqual(0);
    }
    // The smoke scale (bench/history-seed.ts): 2 days every 60 s, and 4 resources every 300 s, less the 10 minutes' margin; each
    // resource's first point, recorded at its creation, replaced by the backfill's newest (counted once, not inserted).
    const seeding = rows.get('history-day-5m')?.detail.seeding as { sqlite: { single: { points: number }; account: { points: number } } };
    expect(seeding.sqlite.single.points).toBe(2869);
    expect(seeding.sqlite.account.points).toBe(4 * 573);
    expect(rows.get('history-bytes-single')?.detail.points).toBeGreaterThanOrEqual(2869);
    expect(rows.get('history-bytes-account')?.detail.points).toBe(4 * 574);

    // Every stream received every event written, each once.
    const stream = rows.get('stream-20x10')?.detail as { streamsOpened: number; eventsWritten: number; delivered: number; expected: number };
    expect(stream.streamsOpened).toBe(20);
    expect(stream.eventsWritten).toBe(20);
    expect(stream.delivered).toBe(stream.expected);
    expect(stream.expected).toBe(20 * 20);

    // The webhook receiver got every event published (20 events/s for 2 s), once, correctly signed.
    const webhook = rows.get('webhooks')?.detail as { eventsWritten: number; delivered: number; expected: number; duplicates: number; badSignatures: number };
    expect(webhook.eventsWritten).toBe(40);
    expect(webhook.delivered).toBe(webhook.expected);
    expect(webhook.expected).toBe(40);
    expect(webhook.duplicates).toBe(0);
    expect(webhook.badSignatures).toBe(0);
    // The replay sent the same 40 again; twenty webhooks each got every event; the excerpt row too.
    const replay = rows.get('webhooks-replay')?.detail as { queued: number; delivered: number; expected: number; duplicates: number };
    expect(replay).toMatchObject({ queued: 40, delivered: 40, expected: 40, duplicates: 0 });
    const twenty = rows.get('webhooks-20')?.detail as { delivered: number; expected: number; badSignatures: number };
    expect(twenty).toMatchObject({ delivered: 800, expected: 800, badSignatures: 0 });
    expect(rows.get('webhooks-excerpt')?.detail).toMatchObject({ delivered: 40, expected: 40 });

    // The printed table has a line for every row.
    expect(result.stdout).toContain(
      `| row | req/s | p50 ms | p99 ms | errors | ratio to baseline | target | met/missed | server CPU µs/req |${POSTGRES_URL ? ' PostgreSQL |' : ''}\n`,
    );
    expect(results.table.split('\n')).toHaveLength(2 + results.rows.length);
  }, 180_000);

  // The soak and the allocator run on SQLite whatever the suite's database (`--postgres none`): the
  // SQLite suite runs them, and the PostgreSQL suite would only repeat them (a minute and a half).
  it.skipIf(POSTGRES_URL !== undefined)(
    'runs the soak alone (--soak, one 20 s "minute"): its rows and its minute, with numbers and no errors',
    async () => {
      const out = join(workDir, 'soak.json');
      const args = [
        '--smoke',
        '--soak',
        '--soak-minutes',
        '1',
        '--rows',
        'none',
        '--streams',
        'none',
        '--webhook-rate',
        '0',
        '--postgres',
        'none',
        '--history',
        'none',
      ];
      const result = await run(process.execPath, [BENCH, ...args, '--out', out], 120_000);
      expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);

      const results = JSON.parse(readFileSync(out, 'utf8')) as { rows: Row[] };
      const rows = new Map(results.rows.map((row) => [row.key, row]));
      expect([...rows.keys()].sort()).toEqual(['rss-idle', 'soak', 'soak-capacity', 'soak-rss-streams']);
      for (const row of results.rows) expect(row.errors, `${row.key}: ${JSON.stringify(row.detail)}`).toBe(0);
      expect(rows.get('soak-capacity')?.requestsPerSecond).toBeGreaterThan(0);
      expect(rows.get('soak-rss-streams')?.rssMb).toBeGreaterThan(0);
      // Capacity: closed loops alone and beside the readers and streams, then fixed rates until one is
      // not sustained; the row is the highest sustained, and the soak asks for 80% of it (below).
      const capacity = rows.get('soak-capacity') as Row;
      const detail = capacity.detail as {
        alone: { requestsPerSecond: number };
        closedLoop: { requestsPerSecond: number };
        fixedRates: Array<{ rate: number; sustained: boolean }>;
      };
      expect(detail.alone.requestsPerSecond).toBeGreaterThan(0);
      expect(detail.closedLoop.requestsPerSecond).toBeGreaterThan(0);
      expect(detail.fixedRates.length).toBeGreaterThan(0);
      const sustained = detail.fixedRates.filter((step) => step.sustained).map((step) => step.rate);
      if (sustained.length > 0) expect(capacity.requestsPerSecond).toBe(Math.max(...sustained));

      // One minute with every figure, and every stream message of the soak delivered.
      const soak = rows.get('soak')?.detail as {
        patchRate: number;
        minutes: Array<{
          patch: { requestsPerSecond: number; p99Ms: number };
          rssMb: number;
          stallMs: number;
          sliceStallsMs: number[];
          heapUsedMb: number;
          serverCpuPercent: number;
          mainThreadCpuPercent: number;
          generatorDelayP99Ms: number;
          generatorDelayMaxMs: number;
        }>;
        streams: { opened: number; delivered: number; expected: number; eventsWritten: number };
      };
      expect(soak.patchRate).toBe(Math.round((capacity.requestsPerSecond as number) * 0.8));
      expect(soak.minutes).toHaveLength(1);
      const [minute] = soak.minutes;
      expect(minute?.patch.requestsPerSecond).toBeGreaterThan(0);
      expect(minute?.patch.p99Ms).toBeGreaterThan(0);
      expect(minute?.rssMb).toBeGreaterThan(0);
      // The metrics were scraped every 5 s of the 20 s "minute", and the longest stall is the longest slice's.
      expect(minute?.sliceStallsMs).toHaveLength(4);
      expect(minute?.stallMs).toBe(Math.max(...(minute?.sliceStallsMs ?? [])));
      expect(minute?.heapUsedMb).toBeGreaterThan(0);
      // The server's CPU and its main thread's share of it (the main thread alone is a part of the process).
      expect(minute?.mainThreadCpuPercent).toBeGreaterThan(0);
      expect(minute?.mainThreadCpuPercent).toBeLessThanOrEqual(minute?.serverCpuPercent ?? 0);
      // The load generator's own lateness: its longest at least its p99 (both past the sampler's 10 ms).
      expect(minute?.generatorDelayP99Ms).toBeGreaterThanOrEqual(0);
      expect(minute?.generatorDelayMaxMs).toBeGreaterThanOrEqual(minute?.generatorDelayP99Ms ?? Number.POSITIVE_INFINITY);
      expect(soak.streams.opened).toBe(100);
      expect(soak.streams.eventsWritten).toBeGreaterThan(0);
      expect(soak.streams.delivered).toBe(soak.streams.expected);
      expect(soak.streams.expected).toBe(100 * soak.streams.eventsWritten);
      expect(result.stdout).toContain('| 1 |');
    },
    120_000,
  );

  it.skipIf(POSTGRES_URL !== undefined || (!JEMALLOC && !JEMALLOC_REQUIRED))(
    'runs the server on jemalloc with --allocator jemalloc, and refuses an allocator it does not know',
    async () => {
      const refused = await run(process.execPath, [BENCH, '--smoke', '--allocator', 'tcmalloc'], 30_000);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('--allocator must be system or jemalloc');

      // The bench checks the server's memory maps once it listens, and fails when jemalloc is not in them.
      const out = join(workDir, 'jemalloc.json');
      const args = [
        '--smoke',
        '--allocator',
        'jemalloc',
        '--rows',
        'get',
        '--streams',
        'none',
        '--webhook-rate',
        '0',
        '--postgres',
        'none',
        '--history',
        'none',
      ];
      const result = await run(process.execPath, [BENCH, ...args, '--out', out], 120_000);
      expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);
      expect(result.stderr + result.stdout).toContain(`the server's allocator: jemalloc (${JEMALLOC})`);
      const results = JSON.parse(readFileSync(out, 'utf8')) as { options: { allocator: string }; rows: Row[] };
      expect(results.options.allocator).toBe('jemalloc');
      expect(results.rows.find((row) => row.key === 'get')?.requestsPerSecond).toBeGreaterThan(0);
    },
    150_000,
  );
});
