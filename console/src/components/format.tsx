// Times and JSON as the console shows them.
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function formatTime(iso: string): string {
  return dateTime.format(new Date(iso));
}

export function Time({ value, empty = '—' }: { value: string | null | undefined; empty?: string }) {
  if (!value) return <span class="muted">{empty}</span>;
  return (
    <time dateTime={value} title={value}>
      {formatTime(value)}
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

/** A state as text: on/off for booleans, the value otherwise. */
export function formatState(state: unknown): string {
  if (state === true) return 'on';
  if (state === false) return 'off';
  return String(state);
}
