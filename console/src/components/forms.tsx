// The end of every form: its submit button (progress while it works, or disabled with the reason
// when the key lacks a scope) and Cancel.
import type { Scope } from '../scopes';
import { GuardedButton } from './scope-gate';

export function FormActions({
  busy,
  label,
  busyLabel,
  onCancel,
  needs,
}: {
  busy: boolean;
  label: string;
  busyLabel: string;
  onCancel?: () => void;
  needs?: readonly Scope[];
}) {
  return (
    <div class="actions">
      {needs ? (
        <GuardedButton needs={needs} type="submit" busy={busy}>
          {busy ? busyLabel : label}
        </GuardedButton>
      ) : (
        <button type="submit" disabled={busy} aria-busy={busy}>
          {busy ? busyLabel : label}
        </button>
      )}
      {onCancel && (
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      )}
    </div>
  );
}
