// Benchmark options: flags win over environment variables, which win over the defaults.
import { parseArgs } from 'node:util';
import { ALLOCATORS, type Allocator } from './allocator.js';

export const HTTP_ROWS = [
  'get',
  'list',
  'events',
  'catchup',
  'patch',
  'publish',
  'patch-keyed',
  'publish-keyed',
  'batch100',
  'batch1000',
  'batch-create',
] as const;
export type HttpRowKey = (typeof HTTP_ROWS)[number];

export interface StreamSpec {
  streams: number;
  eventsPerSecond: number;
}

export interface Options {
  smoke: boolean;
  /** Seconds measured per HTTP row. */
  duration: number;
  /** Seconds of unmeasured load before each HTTP row. */
  warmup: number;
  connections: number;
  rows: HttpRowKey[];
  streamScenarios: StreamSpec[];
  /** Seconds of writing per stream scenario. */
  streamDuration: number;
  /** Most seconds to wait for late messages after the writer stops. */
  drainTimeout: number;
  /** Events/s published for the webhook row (0 = no webhook row), for `webhookDuration` seconds. */
  webhookRate: number;
  webhookDuration: number;
  seedResources: number;
  seedUpdates: number;
  logLevel: string;
  /** Run the server with its metrics on (METRICS_PORT), to measure what they cost. */
  metrics: boolean;
  /** Instead of the table: the rows with and without metrics, alternating (bench/metrics-overhead.ts). */
  metricsOverhead: boolean;
  /** --metrics-overhead: pairs of measurements per row. */
  rounds: number;
  out: string;
  /** Start the server with --cpu-prof; the profile lands beside the results. */
  profile: boolean;
  /** Keep the temporary directory (database, server log) after the run. */
  keep: boolean;
  /** Whole-run bound in seconds; 0 = computed from the other options. */
  timeout: number;
  /** The PostgreSQL column: `auto` (a throwaway cluster when this machine has PostgreSQL), `none`, or a postgres:// URL. */
  postgres: string;
  /** The soak row (bench/soak.ts), after the other rows, for `soakMinutes` minutes (20 s ones in a smoke run). */
  soak: boolean;
  soakMinutes: number;
  /** The server's malloc: the system's, or jemalloc preloaded (bench/allocator.ts). */
  allocator: Allocator;
  /** The history rows (bench/history-rows.ts), on servers of their own. */
  history: boolean;
}

export const USAGE = `Usage: npm run bench -- [options]      (or: node .bench-build/bench/run.js [options])

  --smoke                  a few seconds in all: 1 s rows without warm-up, 20 streams × 10 events/s for 2 s
  --duration S             seconds per HTTP row                        (BENCH_DURATION, default 10)
  --warmup S               unmeasured seconds before each HTTP row      (BENCH_WARMUP, default 2)
  --connections N          concurrent connections per HTTP row         (BENCH_CONNECTIONS, default 50)
  --rows a,b               HTTP rows: ${HTTP_ROWS.join(',')}, or none  (BENCH_ROWS, default all)
  --streams NxR,…          stream scenarios, N streams × R events/s, or none
                                                     (BENCH_STREAMS, default 1000x10,100x100)
  --stream-duration S      seconds of writing per stream scenario      (BENCH_STREAM_DURATION, default 10)
  --drain-timeout S        most seconds to wait for late messages       (BENCH_DRAIN_TIMEOUT, default 5)
  --webhook-rate R         events/s published to one webhook, 0 = no webhook row
                                                     (BENCH_WEBHOOK_RATE, default 100; smoke 20)
  --webhook-duration S     seconds of publishing for the webhook row    (BENCH_WEBHOOK_DURATION, default 10; smoke 2)
  --seed-resources N       resources created before measuring          (default 200)
  --seed-updates N         updates (events) written before measuring   (default 2800)
  --log-level L            the server's LOG_LEVEL                      (BENCH_LOG_LEVEL, default info)
  --metrics                the server with its metrics on (METRICS_PORT; BENCH_METRICS=1), to compare
  --metrics-overhead       instead of the table: GET, list and PATCH against a server with metrics and one
                           without, alternating, and each row's ratio (bench/metrics-overhead.ts)
  --rounds N               --metrics-overhead: pairs of measurements per row; the history rows: rounds of
                           each (PATCH on/off, reads)                  (BENCH_ROUNDS, default 4; smoke 2)
  --history on|none        the history rows (issue #40): PATCH with history on vs off, history reads alone and
                           beside an account of 4.3 million points, bytes per point, RSS
                                                     (BENCH_HISTORY, default on)
  --out FILE               JSON results       (BENCH_OUT, default bench/results/latest.json; smoke: smoke.json)
  --allocator A            the server's malloc: system, or jemalloc preloaded as docs/operating.md shows
                                                     (BENCH_ALLOCATOR, default system)
  --profile                run the server with --cpu-prof; profile written beside the results
  --keep                   keep the temporary database and server log
  --timeout S              bound on the whole run (default: computed from the options)
  --postgres auto|none|URL the HTTP rows again on PostgreSQL: auto starts a throwaway cluster from
                           this machine's PostgreSQL binaries (skipped when there are none); a
                           postgres:// URL uses a fresh schema of that database
                                                     (BENCH_POSTGRES, default auto; smoke: none)
  --soak                   the soak row after the others (bench/soak.ts): PATCH at 80% of its measured
                           capacity with readers and 100 streams, per minute; then 1,000 streams' RSS
                                                     (BENCH_SOAK=1; smoke: 20 s minutes)
  --soak-minutes N         minutes of the soak                         (BENCH_SOAK_MINUTES, default 10; smoke 3)`;

function positive(name: string, raw: string | undefined, fallback: number, integer = false): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a non-negative ${integer ? 'integer' : 'number'}, got "${raw}"`);
  }
  return value;
}

export function parseStreams(raw: string): StreamSpec[] {
  if (raw.trim() === 'none' || raw.trim() === '') return [];
  return raw.split(',').map((part) => {
    const match = /^\s*(\d+)\s*x\s*(\d+(?:\.\d+)?)\s*$/i.exec(part);
    if (!match) throw new Error(`--streams: "${part}" is not N×R such as 1000x10`);
    const spec = { streams: Number(match[1]), eventsPerSecond: Number(match[2]) };
    if (spec.streams < 1 || spec.eventsPerSecond <= 0) throw new Error(`--streams: "${part}" needs at least one stream and a positive rate`);
    return spec;
  });
}

function parseRows(raw: string): HttpRowKey[] {
  if (raw.trim() === 'none') return [];
  const rows = raw
    .split(',')
    .map((row) => row.trim())
    .filter(Boolean);
  const unknown = rows.filter((row) => !(HTTP_ROWS as readonly string[]).includes(row));
  if (unknown.length > 0) throw new Error(`--rows: unknown row(s) ${unknown.join(', ')}; known: ${HTTP_ROWS.join(', ')}`);
  // Always in the fixed order: reads first, while the seeded cursor is still inside the retention window.
  return HTTP_ROWS.filter((row) => rows.includes(row));
}

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      smoke: { type: 'boolean', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      rows: { type: 'string' },
      streams: { type: 'string' },
      'stream-duration': { type: 'string' },
      'drain-timeout': { type: 'string' },
      'webhook-rate': { type: 'string' },
      'webhook-duration': { type: 'string' },
      'seed-resources': { type: 'string' },
      'seed-updates': { type: 'string' },
      'log-level': { type: 'string' },
      metrics: { type: 'boolean', default: false },
      'metrics-overhead': { type: 'boolean', default: false },
      rounds: { type: 'string' },
      out: { type: 'string' },
      profile: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      timeout: { type: 'string' },
      postgres: { type: 'string' },
      soak: { type: 'boolean', default: false },
      'soak-minutes': { type: 'string' },
      allocator: { type: 'string' },
      history: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  const smoke = values.smoke || env.BENCH_SMOKE === '1';
  const pick = (flag: string | undefined, variable: string) => flag ?? env[variable];
  const options: Options = {
    smoke,
    duration: positive('--duration', pick(values.duration, 'BENCH_DURATION'), smoke ? 1 : 10),
    warmup: positive('--warmup', pick(values.warmup, 'BENCH_WARMUP'), smoke ? 0 : 2),
    connections: positive('--connections', pick(values.connections, 'BENCH_CONNECTIONS'), smoke ? 10 : 50, true),
    rows: parseRows(pick(values.rows, 'BENCH_ROWS') ?? HTTP_ROWS.join(',')),
    streamScenarios: parseStreams(pick(values.streams, 'BENCH_STREAMS') ?? (smoke ? '20x10' : '1000x10,100x100')),
    streamDuration: positive('--stream-duration', pick(values['stream-duration'], 'BENCH_STREAM_DURATION'), smoke ? 2 : 10),
    drainTimeout: positive('--drain-timeout', pick(values['drain-timeout'], 'BENCH_DRAIN_TIMEOUT'), 5),
    webhookRate: positive('--webhook-rate', pick(values['webhook-rate'], 'BENCH_WEBHOOK_RATE'), smoke ? 20 : 100),
    webhookDuration: positive('--webhook-duration', pick(values['webhook-duration'], 'BENCH_WEBHOOK_DURATION'), smoke ? 2 : 10),
    seedResources: positive('--seed-resources', pick(values['seed-resources'], 'BENCH_SEED_RESOURCES'), smoke ? 60 : 200, true),
    seedUpdates: positive('--seed-updates', pick(values['seed-updates'], 'BENCH_SEED_UPDATES'), smoke ? 200 : 2800, true),
    logLevel: pick(values['log-level'], 'BENCH_LOG_LEVEL') ?? 'info',
    metrics: values.metrics || env.BENCH_METRICS === '1',
    metricsOverhead: values['metrics-overhead'],
    rounds: positive('--rounds', pick(values.rounds, 'BENCH_ROUNDS'), smoke ? 2 : 4, true),
    out: pick(values.out, 'BENCH_OUT') ?? (smoke ? 'bench/results/smoke.json' : 'bench/results/latest.json'),
    profile: values.profile,
    keep: values.keep,
    timeout: positive('--timeout', pick(values.timeout, 'BENCH_TIMEOUT'), 0),
    postgres: pick(values.postgres, 'BENCH_POSTGRES') ?? (smoke ? 'none' : 'auto'),
    soak: values.soak || env.BENCH_SOAK === '1',
    soakMinutes: positive('--soak-minutes', pick(values['soak-minutes'], 'BENCH_SOAK_MINUTES'), smoke ? 3 : 10, true),
    allocator: (pick(values.allocator, 'BENCH_ALLOCATOR') ?? 'system') as Allocator,
    history: (pick(values.history, 'BENCH_HISTORY') ?? 'on') === 'on',
  };
  const history = pick(values.history, 'BENCH_HISTORY');
  if (history !== undefined && !['on', 'none'].includes(history)) throw new Error(`--history must be on or none, got "${history}"`);
  if (!ALLOCATORS.includes(options.allocator)) throw new Error(`--allocator must be ${ALLOCATORS.join(' or ')}, got "${options.allocator}"`);
  if (!['auto', 'none'].includes(options.postgres) && !/^postgres(ql)?:\/\//.test(options.postgres)) {
    throw new Error(`--postgres must be auto, none or a postgres:// URL, got "${options.postgres}"`);
  }
  if (options.metricsOverhead && options.rounds < 2) throw new Error('--rounds must be at least 2 (each server goes first once)');
  if (options.soakMinutes < 1) throw new Error('--soak-minutes must be at least 1');
  if (options.connections < 1) throw new Error('--connections must be at least 1');
  if (options.duration <= 0) throw new Error('--duration must be positive');
  if (options.streamDuration <= 0) throw new Error('--stream-duration must be positive');
  if (options.webhookDuration <= 0) throw new Error('--webhook-duration must be positive');
  if (options.seedResources < 50) throw new Error('--seed-resources must be at least 50 (the list row reads pages of 50)');
  if (options.seedUpdates < 200) throw new Error('--seed-updates must be at least 200 (the event-page row reads pages of 100 from the middle)');
  return options;
}
