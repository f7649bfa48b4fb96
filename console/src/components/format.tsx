// Times and JSON as the console shows them.
import { useNarrow } from '../narrow';

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
const clockOnly = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });
const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const weekdayTime = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit' });
const dayMonth = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short' });
const dayMonthYear = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', year: 'numeric' });
const DAY_MS = 86_400_000;

export function formatTime(iso: string): string {
  return dateTime.format(new Date(iso));
}

/** A time in a few characters: `14:03` today, `Tue 14:03` within six days either way, `12 Mar` this year, `12 Mar 2024` otherwise. */
export function formatShortTime(iso: string, now = new Date()): string {
  const date = new Date(iso);
  if (date.toDateString() === now.toDateString()) return timeOfDay.format(date);
  if (Math.abs(date.getTime() - now.getTime()) < 6 * DAY_MS) return weekdayTime.format(date);
  return (date.getFullYear() === now.getFullYear() ? dayMonth : dayMonthYear).format(date);
}

/** A time, short where the content is narrow; the exact instant (ISO 8601) is its `datetime` and `title`. */
export function Time({ value, empty = '—' }: { value: string | null | undefined; empty?: string }) {
  const narrow = useNarrow();
  if (!value) return <span class="muted">{empty}</span>;
  return (
    <time dateTime={value} title={value}>
      {narrow ? (
        formatShortTime(value)
      ) : (
        // The date and the clock apart, so that a narrow column breaks between them.
        <>
          <span class="time-part">{dateOnly.format(new Date(value))}</span> <span class="time-part">{clockOnly.format(new Date(value))}</span>
        </>
      )}
    </time>
  );
}

export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  return (
    <pre class="json" aria-label={label} tabIndex={0}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

// The words for a state are the client's, so that the CLI says the same.
export { formatState } from '@devdata/client';
