// Progress, errors and notices: every wait shows progress, every error its message and request id.
import type { ComponentChildren } from 'preact';
import { describeProblem } from '../errors';

export function Busy({ label }: { label: string }) {
  return (
    <p class="busy" role="status">
      <span class="spinner" aria-hidden="true" />
      {label}…
    </p>
  );
}

/** `children`, when given, say what the error's details mean in place of their list (an import names lines, not paths). */
export function ErrorNotice({ error, title, children }: { error: unknown; title?: string; children?: ComponentChildren }) {
  if (error === undefined || error === null) return null;
  const problem = describeProblem(error);
  return (
    <div class="notice notice-error" role="alert">
      <p>
        <strong>{title ?? 'That did not work'}:</strong> {problem.message}
      </p>
      {children}
      {children === undefined && problem.details.length > 0 && (
        <ul>
          {problem.details.map((detail) => (
            <li key={detail.path}>
              <code>{detail.path}</code> {detail.message}
            </li>
          ))}
        </ul>
      )}
      {(problem.requestId || problem.code) && (
        <p class="problem-meta">
          {problem.status !== undefined && <>HTTP {problem.status} · </>}
          {problem.code && (
            <>
              code <code>{problem.code}</code>
            </>
          )}
          {problem.requestId && (
            <>
              {' '}
              · request id <code class="request-id">{problem.requestId}</code>
            </>
          )}
        </p>
      )}
    </div>
  );
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'warning' | 'success'; children: ComponentChildren }) {
  return (
    <div class={`notice notice-${kind}`} role={kind === 'info' ? undefined : 'status'}>
      {children}
    </div>
  );
}
