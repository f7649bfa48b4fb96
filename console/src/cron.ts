// Reading a cron expression the way the service does: five fields, run by croner (the service's
// own library) in the schedule's time zone; described in words by cronstrue.
import { Cron } from 'croner';
import cronstrue from 'cronstrue';

export interface CronReading {
  description: string;
  nextRuns: Date[];
}

/** The expression in words and its next runs, or an error message. */
export function readCron(expression: string, timezone: string, count = 5): CronReading | { error: string } {
  const trimmed = expression.trim();
  if (trimmed.split(/\s+/).length !== 5) return { error: 'A cron expression has 5 fields: minute hour day-of-month month day-of-week.' };
  try {
    const description = cronstrue.toString(trimmed, { use24HourTimeFormat: true, throwExceptionOnParseError: true });
    const nextRuns = new Cron(trimmed, { timezone: timezone || 'UTC', paused: true }).nextRuns(count);
    if (nextRuns.length === 0) return { error: 'This expression never matches a time (for example 30 February).' };
    return { description: `${description} (${timezone || 'UTC'})`, nextRuns };
  } catch (error) {
    return { error: `Not a valid cron expression: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** The IANA time zones the browser knows, for the time zone field's suggestions. */
export function knownTimezones(): string[] {
  return typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : ['UTC'];
}
