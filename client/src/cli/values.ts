// Reading the command line's values: the client of --url and --api-key, numbers, JSON, lists,
// a resource's state, If-Match, times (a duration ago or an ISO time); and Ctrl-C.
import { DevdataClient, ifMatch } from '../client.js';
import { RESOURCE_TYPES } from '../generated/values.js';
import { stateFromText, unreadableState } from '../import-rows.js';
import type { ResourceState, ResourceType } from '../types.js';
import { UsageError, type Values } from './command.js';

export function clientFor(values: Values): DevdataClient {
  const baseUrl = stringValue(values, 'url') ?? process.env.DEVDATA_URL ?? 'http://localhost:8080';
  try {
    new URL(baseUrl);
  } catch {
    throw new UsageError(`--url is not a URL: ${baseUrl}`);
  }
  const apiKey = stringValue(values, 'api-key') ?? process.env.DEVDATA_API_KEY;
  if (!apiKey) throw new UsageError('no credential: pass --api-key or set DEVDATA_API_KEY');
  return new DevdataClient({ baseUrl, apiKey });
}

export function stringValue(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A value the command requires (declared `required`, so present once parsed). */
export function requiredValue(values: Values, name: string): string {
  return stringValue(values, name) as string;
}

export function integerValue(values: Values, name: string): number | undefined {
  const value = stringValue(values, name);
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value)) throw new UsageError(`--${name} must be a non-negative integer, not "${value}"`);
  return Number(value);
}

/** A JSON object: --data, --attributes. */
export function jsonObjectValue(values: Values, name: string): Record<string, unknown> | undefined {
  const value = stringValue(values, name);
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new UsageError(`--${name} is not JSON: ${value}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError(`--${name} must be a JSON object, such as '{"unit":"°C"}'`);
  return parsed as Record<string, unknown>;
}

/** A comma-separated list: "a,b" → ["a", "b"]; "" → [] (to clear a list). */
export function listValue(values: Values, name: string): string[] | undefined {
  return stringValue(values, name)
    ?.split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

export function resourceTypeValue(values: Values, name: string): ResourceType | undefined {
  const type = stringValue(values, name);
  if (type !== undefined && !(RESOURCE_TYPES as readonly string[]).includes(type))
    throw new UsageError(`--${name} must be one of ${RESOURCE_TYPES.join(', ')}, not "${type}"`);
  return type as ResourceType | undefined;
}

/** A state typed on the command line, read as the resource's type needs it (as an import file's CSV cell is). */
export function stateFor(type: ResourceType, text: string): ResourceState {
  const state = stateFromText(type, text);
  if (state === undefined) throw new UsageError(unreadableState(type, text));
  return state;
}

const DURATION_UNITS_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d{1,9})([smhd])$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * A moment as an ISO string: a duration before `now` (30m, 24h, 7d; s, m, h or d) or an ISO 8601
 * time (2026-01-31, 2026-01-31T12:00Z; without a zone, the local time as Date reads it).
 */
export function timeValue(values: Values, name: string, now: number): string | undefined {
  const value = stringValue(values, name);
  if (value === undefined) return undefined;
  const duration = DURATION.exec(value);
  const time = duration
    ? new Date(now - Number(duration[1]) * DURATION_UNITS_MS[duration[2] as keyof typeof DURATION_UNITS_MS])
    : new Date(ISO_TIME.test(value) ? Date.parse(value) : Number.NaN);
  // Not a time, or one beyond what a Date holds (100,000,000 days either side of 1970).
  if (Number.isNaN(time.getTime()))
    throw new UsageError(`--${name} takes a duration ago such as 30m, 24h or 7d, or an ISO 8601 time such as 2026-01-31T12:00Z, not "${value}"`);
  return time.toISOString();
}

/** --if-match N (or the ETag "N"): the If-Match header for that resource version. */
export function ifMatchHeader(values: Values): { 'if-match'?: string } {
  const value = stringValue(values, 'if-match');
  if (value === undefined) return {};
  const version = /^"?(\d{1,15})"?$/.exec(value)?.[1];
  if (version === undefined) throw new UsageError(`--if-match takes a resource version, such as 3, not "${value}"`);
  return { 'if-match': ifMatch(Number(version)) };
}

/** --enable / --disable: the `enabled` field of an update, when one was given. */
export function enabledValue(values: Values): { enabled?: boolean } {
  if (values.enable && values.disable) throw new UsageError('--enable and --disable exclude each other');
  return values.enable ? { enabled: true } : values.disable ? { enabled: false } : {};
}

/** Refuses an update that changes nothing. */
export function someChange(body: object, flags: string): void {
  if (Object.keys(body).length === 0) throw new UsageError(`nothing to change: give at least one of ${flags}`);
}

/** Aborted on the first Ctrl-C (or SIGTERM); a second one ends the process at once. */
export function interruption(): AbortSignal {
  const controller = new AbortController();
  const stop = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
  };
  process.on('SIGINT', stop).on('SIGTERM', stop);
  return controller.signal;
}
