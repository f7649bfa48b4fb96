// A schedule's times: cron expressions in a time zone, and one-shot times as stored.
import { Cron } from 'croner';
import { invalidField } from '../../domain-errors.js';

export function validTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** The first time of a 5-field cron expression strictly after `after`, in its time zone. */
export function cronNext(cron: string, timezone: string, after: Date): Date | null {
  return new Cron(cron, { timezone, paused: true }).nextRun(after);
}

/** A one-shot time as stored: UTC with milliseconds. Ajv's date-time format lets a few through that Date cannot read (23:59:60). */
export function normalisedAt(at: string): string {
  const time = Date.parse(at);
  if (Number.isNaN(time)) throw invalidField('/at', 'must be an ISO 8601 time');
  return new Date(time).toISOString();
}
