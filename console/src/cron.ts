// Reading a cron expression the way the service does: five fields, run by croner (the service's
// own library) in the schedule's time zone; described in words by cronstrue.
import { Cron } from 'croner';
import cronstrue from 'cronstrue';

export interface CronReading {
  description: string;
  nextRuns: Date[];
}

/** Why `timezone` is not a time zone (said under the time zone field, not the expression's), or undefined. */
export function timezoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone || 'UTC' });
    return undefined;
  } catch {
    return `"${timezone}" is not an IANA time zone: use a name such as Europe/Berlin, America/New_York or UTC.`;
  }
}

/**
 * The expression in words and its next runs, or an error message about the expression. While the
 * time zone is not one (timezoneProblem), the words come without the next runs.
 */
export function readCron(expression: string, timezone: string, count = 5): CronReading | { error: string } {
  const trimmed = expression.trim();
  if (trimmed.split(/\s+/).length !== 5) return { error: 'A cron expression has 5 fields: minute hour day-of-month month day-of-week.' };
  try {
    const description = cronstrue.toString(trimmed, { use24HourTimeFormat: true, throwExceptionOnParseError: true });
    // Checked in UTC too: an expression's own mistakes are found whatever the zone.
    const validZone = timezoneProblem(timezone) === undefined;
    const cron = new Cron(trimmed, { timezone: validZone ? timezone || 'UTC' : 'UTC', paused: true });
    if (!validZone) return { description, nextRuns: [] };
    const nextRuns = cron.nextRuns(count);
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
