// Environment → typed, validated configuration (docs/decisions.md: "Operator CLI").
// Every variable is validated up front so a typo fails the start, not the first request.

import ipaddr from 'ipaddr.js';
import { defaultKeyFile } from './platform/secrets-key.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
/** LOG_FORMAT: JSON lines, lines for people, or (auto) lines for people when standard output is a terminal. */
const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormatSetting = (typeof LOG_FORMATS)[number];

export const DEFAULT_DATABASE_URL = 'sqlite:./data/devdata.db';
/** What DATABASE_URL takes, as its refusal and the CLI's help say it. */
export const DATABASE_URL_FORMS = 'sqlite:<path>, sqlite::memory: or postgres://…';

export interface Config {
  port: number;
  host: string;
  baseUrl: string;
  /** False when BASE_URL was not set: the server then derives it from the port it listens on. */
  baseUrlExplicit: boolean;
  databaseUrl: string;
  /**
   * Whether a SQLite file's missing directory is made (DATABASE_CREATE, `--create-database`); always
   * for the default DATABASE_URL, so a fresh clone starts. Otherwise the CLI refuses to start.
   */
  databaseCreate: boolean;
  rateLimitPerMinute: number;
  /** Counted besides each credential's, so minting keys does not multiply an account's allowance. */
  rateLimitAccountPerMinute: number;
  rateLimitAnonPerMinute: number;
  eventRetention: number;
  webhookRetrySchedule: number[];
  webhookAllowPrivateTargets: boolean;
  /** How long a claimed delivery stays claimed: a crashed process's deliveries are retried after it. */
  webhookLeaseSeconds: number;
  /** The limit of one delivery attempt: 10 s; tests shorten it (WEBHOOK_TIMEOUT_MS). */
  webhookTimeoutMs: number;
  /** WEBHOOK_DISABLE_AFTER_HOURS: a webhook none of whose deliveries succeeded this long is disabled (0: never). */
  webhookDisableAfterHours: number;
  accessTokenTtlSeconds: number;
  signupCapacity: number;
  developerSessionTtlSeconds: number;
  streamLimitPerAccount: number;
  /** SECRETS_KEY: the 32-byte AES-256-GCM key of webhook signing secrets, when the operator gives it. */
  secretsKey: Buffer | undefined;
  /**
   * Where the service keeps its own key when SECRETS_KEY is not set (made at first start):
   * SECRETS_KEY_FILE, else secrets.key beside the SQLite file, else ./data/secrets.key; none for
   * sqlite::memory:, whose secrets live only as long as the process.
   */
  secretsKeyFile: string | undefined;
  logLevel: LogLevel;
  logFormat: LogFormatSetting;
  /**
   * Whose X-Forwarded-For to believe for the client address: nobody (false), any peer (true), or
   * only peers at these addresses or CIDR ranges (the reverse proxy's).
   */
  trustProxy: boolean | string[];
  /** How often in-memory usage counters are written to storage. */
  usageFlushIntervalMs: number;
  /** How often every account is swept for events beyond the retention window, old delivery history is deleted and expired connections are ended. */
  retentionIntervalMs: number;
  /** How often the accounts written since the last time lose the events beyond their retention window. */
  pruneIntervalMs: number;
  /** Whether every accepted state is kept as a history point (HISTORY, `on` by default; `off` for a comparison). */
  historyEnabled: boolean;
  /** Days the raw points are kept (HISTORY_RETENTION_DAYS). */
  historyRetentionDays: number;
  /** Days the hourly aggregates are kept (HISTORY_ROLLUP_DAYS), at least the raw points' days. */
  historyRollupDays: number;
  /** How often history's housekeeping runs: aggregates built, old points and deleted resources' history removed. */
  historyIntervalMs: number;
  /** The metrics listener: METRICS_HOST (loopback by default) and METRICS_PORT; off when the port is not set. */
  metrics: { host: string; port: number } | undefined;
}

/** Every environment variable the service reads (tests and the benchmark clear them to decide for themselves). */
export const CONFIG_VARIABLES = [
  'PORT',
  'HOST',
  'BASE_URL',
  'DATABASE_URL',
  'DATABASE_CREATE',
  'RATE_LIMIT_PER_MINUTE',
  'RATE_LIMIT_ACCOUNT_PER_MINUTE',
  'RATE_LIMIT_ANON_PER_MINUTE',
  'EVENT_RETENTION',
  'WEBHOOK_RETRY_SCHEDULE',
  'WEBHOOK_ALLOW_PRIVATE_TARGETS',
  'WEBHOOK_TIMEOUT_MS',
  'WEBHOOK_DISABLE_AFTER_HOURS',
  'WEBHOOK_LEASE_SECONDS',
  'ACCESS_TOKEN_TTL_SECONDS',
  'SIGNUP_CAPACITY',
  'DEVELOPER_SESSION_TTL_SECONDS',
  'STREAM_LIMIT_PER_ACCOUNT',
  'SECRETS_KEY',
  'SECRETS_KEY_FILE',
  'LOG_LEVEL',
  'LOG_FORMAT',
  'TRUST_PROXY',
  'USAGE_FLUSH_INTERVAL_MS',
  'RETENTION_INTERVAL_MS',
  'PRUNE_INTERVAL_MS',
  'METRICS_HOST',
  'METRICS_PORT',
  'HISTORY',
  'HISTORY_RETENTION_DAYS',
  'HISTORY_ROLLUP_DAYS',
  'HISTORY_INTERVAL_MS',
] as const;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const MAX_ACCESS_TOKEN_TTL_SECONDS = 900;
/**
 * Default PRUNE_INTERVAL_MS: about a second's writes deleted each time. A minute's deletions in one
 * run made that minute's latency worse than the others' (bench/HISTORY.md, "Long runs").
 */
const PRUNE_INTERVAL_MS = 1000;
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A number of hours, fractions allowed (tests use seconds' worth), at least 0. */
function hours(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !Number.isFinite(value)) throw new ConfigError(`${name} must be a number of hours (0 or more), got "${raw}"`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function retrySchedule(env: Env): number[] {
  const raw = env.WEBHOOK_RETRY_SCHEDULE ?? '0,5,300,1800,7200';
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.length !== 5 || parts.some((part) => !/^\d+(\.\d+)?$/.test(part))) {
    throw new ConfigError(`WEBHOOK_RETRY_SCHEDULE must be five comma-separated non-negative numbers of seconds, got "${raw}"`);
  }
  return parts.map(Number);
}

function secretsKey(env: Env): Buffer | undefined {
  const raw = env.SECRETS_KEY;
  if (raw === undefined || raw === '') return undefined;
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError('SECRETS_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)');
  return key;
}

function databaseUrl(env: Env): string {
  const url = env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  if (!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(url)) {
    // Only the scheme of what was given: the rest of a URL may hold a password.
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0];
    const given = scheme ? `"${scheme}…"` : `"${url}"`;
    throw new ConfigError(`DATABASE_URL must be ${DATABASE_URL_FORMS}, got ${given}`);
  }
  return url;
}

/** The file a DATABASE_URL names: none for PostgreSQL and for sqlite::memory:. */
export function sqliteFile(databaseUrl: string): string | undefined {
  if (!databaseUrl.startsWith('sqlite:') || databaseUrl === 'sqlite::memory:') return undefined;
  return databaseUrl.slice('sqlite:'.length);
}

function logFormat(env: Env): LogFormatSetting {
  const raw = env.LOG_FORMAT?.trim().toLowerCase();
  if (raw === undefined || raw === '') return 'auto';
  if (!(LOG_FORMATS as readonly string[]).includes(raw)) throw new ConfigError(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, got "${env.LOG_FORMAT}"`);
  return raw as LogFormatSetting;
}

function baseUrl(env: Env, port: number): string {
  const raw = env.BASE_URL ?? `http://localhost:${port}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`BASE_URL must be an absolute URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('BASE_URL must use http or https');
  // The issuer identifier must not end in a slash (RFC 8414 §2 compares it as a string).
  return raw.replace(/\/+$/, '');
}

/** TRUST_PROXY: true or false, or the proxy's addresses and CIDR ranges, comma-separated. */
function trustProxy(env: Env): boolean | string[] {
  const raw = env.TRUST_PROXY?.trim() ?? '';
  if (!/[.:/]/.test(raw)) return boolean(env, 'TRUST_PROXY', false);
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const valid = entry.includes('/') ? isValidCidr(entry) : ipaddr.IPv4.isValidFourPartDecimal(entry) || ipaddr.IPv6.isValid(entry);
    if (!valid) throw new ConfigError(`TRUST_PROXY must be true, false, or addresses and CIDR ranges of the proxy (127.0.0.1,10.0.0.0/8), got "${entry}"`);
  }
  return entries;
}

function isValidCidr(entry: string): boolean {
  try {
    ipaddr.parseCIDR(entry);
    return true;
  } catch {
    return false;
  }
}

/** Off unless METRICS_PORT is set; never the public port (the metrics are for the operator only). */
function metrics(env: Env, port: number): Config['metrics'] {
  if (env.METRICS_PORT === undefined || env.METRICS_PORT === '') {
    if (env.METRICS_HOST) throw new ConfigError('METRICS_HOST is set but METRICS_PORT is not: set METRICS_PORT (for example 9464) to serve metrics');
    return undefined;
  }
  const metricsPort = integer(env, 'METRICS_PORT', 0, 0, 65535);
  if (metricsPort !== 0 && metricsPort === port) throw new ConfigError(`METRICS_PORT must differ from PORT (${port}): metrics never share the public port`);
  return { host: env.METRICS_HOST || '127.0.0.1', port: metricsPort };
}

/** The lease must outlast an attempt, so a live claim never runs out mid-attempt. */
function webhookLeaseSeconds(env: Env, timeoutMs: number): number {
  const seconds = integer(env, 'WEBHOOK_LEASE_SECONDS', 30, 1, 3600);
  if (seconds * 1000 <= timeoutMs) throw new ConfigError(`WEBHOOK_LEASE_SECONDS must exceed the attempt timeout (${timeoutMs} ms), got ${seconds}`);
  return seconds;
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const webhookTimeoutMs = integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 10_000);
  const logLevel = (env.LOG_LEVEL ?? 'info') as LogLevel;
  const database = databaseUrl(env);
  const rateLimitPerMinute = integer(env, 'RATE_LIMIT_PER_MINUTE', 600, 1);
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  return {
    port,
    host: env.HOST ?? '127.0.0.1',
    baseUrl: baseUrl(env, port),
    baseUrlExplicit: env.BASE_URL !== undefined && env.BASE_URL !== '',
    databaseUrl: database,
    databaseCreate: boolean(env, 'DATABASE_CREATE', false) || database === DEFAULT_DATABASE_URL,
    rateLimitPerMinute,
    // The default follows the credential's allowance: room for ten busy keys of one account.
    rateLimitAccountPerMinute: integer(env, 'RATE_LIMIT_ACCOUNT_PER_MINUTE', Math.min(10 * rateLimitPerMinute, Number.MAX_SAFE_INTEGER), 1),
    rateLimitAnonPerMinute: integer(env, 'RATE_LIMIT_ANON_PER_MINUTE', 60, 1),
    eventRetention: integer(env, 'EVENT_RETENTION', 10000, 1),
    webhookRetrySchedule: retrySchedule(env),
    webhookAllowPrivateTargets: boolean(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    webhookLeaseSeconds: webhookLeaseSeconds(env, webhookTimeoutMs),
    webhookTimeoutMs,
    webhookDisableAfterHours: hours(env, 'WEBHOOK_DISABLE_AFTER_HOURS', 72),
    accessTokenTtlSeconds: Math.min(integer(env, 'ACCESS_TOKEN_TTL_SECONDS', 900, 1), MAX_ACCESS_TOKEN_TTL_SECONDS),
    signupCapacity: integer(env, 'SIGNUP_CAPACITY', 10000, 0),
    developerSessionTtlSeconds: integer(env, 'DEVELOPER_SESSION_TTL_SECONDS', 43_200, 1, 43_200),
    streamLimitPerAccount: integer(env, 'STREAM_LIMIT_PER_ACCOUNT', 20, 1),
    secretsKey: secretsKey(env),
    secretsKeyFile: defaultKeyFile(database, env.SECRETS_KEY_FILE),
    logLevel,
    logFormat: logFormat(env),
    trustProxy: trustProxy(env),
    usageFlushIntervalMs: integer(env, 'USAGE_FLUSH_INTERVAL_MS', 5000, 10, 86_400_000),
    retentionIntervalMs: integer(env, 'RETENTION_INTERVAL_MS', 60_000, 10, 86_400_000),
    pruneIntervalMs: integer(env, 'PRUNE_INTERVAL_MS', PRUNE_INTERVAL_MS, 10, 86_400_000),
    metrics: metrics(env, port),
    ...history(env),
  };
}

function history(env: Env): Pick<Config, 'historyEnabled' | 'historyRetentionDays' | 'historyRollupDays' | 'historyIntervalMs'> {
  const historyRetentionDays = integer(env, 'HISTORY_RETENTION_DAYS', 30, 1, 3650);
  const historyRollupDays = integer(env, 'HISTORY_ROLLUP_DAYS', Math.max(400, historyRetentionDays), 1, 36500);
  if (historyRollupDays < historyRetentionDays) {
    throw new ConfigError(`HISTORY_ROLLUP_DAYS (${historyRollupDays}) must be at least HISTORY_RETENTION_DAYS (${historyRetentionDays})`);
  }
  return {
    historyEnabled: boolean(env, 'HISTORY', true),
    historyRetentionDays,
    historyRollupDays,
    historyIntervalMs: integer(env, 'HISTORY_INTERVAL_MS', 60_000, 10, 86_400_000),
  };
}
