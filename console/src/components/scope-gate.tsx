// What the connected key's scopes do not allow: disabled, with the reason beside it.
import type { ButtonHTMLAttributes, ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';
import { useConnection } from '../connection-context';
import { scopeReason, type Scope } from '../scopes';

/** A button that is disabled, with the reason shown, when the key lacks `needs`. */
export function GuardedButton({
  needs,
  children,
  busy,
  disabled,
  ...rest
}: { needs: readonly Scope[]; busy?: boolean; children: ComponentChildren } & ButtonHTMLAttributes) {
  const { key } = useConnection();
  const reason = scopeReason(key?.credential, needs);
  const id = useId();
  return (
    <span class="guarded">
      <button {...rest} disabled={Boolean(reason) || Boolean(busy) || Boolean(disabled)} aria-busy={busy} aria-describedby={reason ? id : undefined}>
        {children}
      </button>
      {reason && (
        <span class="reason" id={id}>
          {reason}
        </span>
      )}
    </span>
  );
}

/** A page or section that needs scopes: its content, or why it cannot be shown. */
export function RequiresScopes({ needs, what, children }: { needs: readonly Scope[]; what: string; children: ComponentChildren }) {
  const { key } = useConnection();
  const reason = scopeReason(key?.credential, needs);
  if (!reason) return <>{children}</>;
  return (
    <div class="notice notice-warning" role="status">
      <p>
        <strong>{what} is not available.</strong> {reason}
      </p>
      {key && <p>A key with more scopes can be issued by the operator, or created on the Keys page by a key that holds them.</p>}
    </div>
  );
}
