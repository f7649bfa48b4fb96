// A page's frame: its heading (focused when the page is opened, so a screen reader announces it)
// and title.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import type { Scope } from '../scopes';
import { RequiresScopes } from './scope-gate';

/** With `needs`, the content shows only when the key holds those scopes (else why not, as `what`). */
export function Page({
  title,
  intro,
  needs,
  what,
  children,
}: {
  title: string;
  intro?: ComponentChildren;
  needs?: readonly Scope[];
  what?: string;
  children: ComponentChildren;
}) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · devdata console`;
    heading.current?.focus({ preventScroll: true });
  }, [title]);
  return (
    <>
      <h1 tabIndex={-1} ref={heading}>
        {title}
      </h1>
      {intro && <p class="intro">{intro}</p>}
      {needs ? (
        <RequiresScopes needs={needs} what={what ?? title}>
          {children}
        </RequiresScopes>
      ) : (
        children
      )}
    </>
  );
}

export function Section({ title, id, children, actions }: { title: string; id: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card" aria-labelledby={id}>
      <div class="card-head">
        <h2 id={id}>{title}</h2>
        {actions && <div class="card-actions">{actions}</div>}
      </div>
      {children}
    </section>
  );
}
