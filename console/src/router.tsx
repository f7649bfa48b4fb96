// The console's pages under /console/…: real paths (the service answers every one with the page),
// moved between with the History API.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const PAGES = [
  { path: '', title: 'Account' },
  { path: 'resources', title: 'Resources' },
  { path: 'events', title: 'Events' },
  { path: 'keys', title: 'Keys' },
  { path: 'webhooks', title: 'Webhooks' },
  { path: 'apps', title: 'Apps' },
  { path: 'schedules', title: 'Schedules' },
  { path: 'usage', title: 'Usage' },
  { path: 'audit', title: 'Audit log' },
] as const;

export type PagePath = (typeof PAGES)[number]['path'];

const BASE = '/console';

function currentPage(): PagePath {
  const rest = window.location.pathname.slice(BASE.length).replace(/^\/+|\/+$/g, '');
  return PAGES.find((page) => page.path === rest)?.path ?? '';
}

export function hrefOf(path: PagePath): string {
  return path === '' ? `${BASE}/` : `${BASE}/${path}`;
}

const listeners = new Set<() => void>();

export function navigate(path: PagePath): void {
  window.history.pushState(null, '', hrefOf(path));
  for (const listener of listeners) listener();
}

export function useCurrentPage(): PagePath {
  const [page, setPage] = useState(currentPage);
  useEffect(() => {
    const update = () => setPage(currentPage());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return page;
}

export function Link({ to, children, class: className, current }: { to: PagePath; children: ComponentChildren; class?: string; current?: boolean }) {
  const onClick = (event: MouseEvent) => {
    // A new tab or window keeps the browser's own behaviour.
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a href={hrefOf(to)} onClick={onClick} class={className} aria-current={current ? 'page' : undefined}>
      {children}
    </a>
  );
}
