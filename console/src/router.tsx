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

/** Pages opened from another page rather than from the navigation, each under the entry it belongs to. */
export const SUBPAGES = [{ path: 'resources/history', title: 'Resource history', under: 'resources' }] as const;

export type PagePath = (typeof PAGES)[number]['path'] | (typeof SUBPAGES)[number]['path'];

/** The navigation entry a page stands under: itself, or a sub-page's parent. */
export function sectionOf(path: PagePath): PagePath {
  return SUBPAGES.find((page) => page.path === path)?.under ?? path;
}

export function titleOf(path: PagePath): string {
  return [...PAGES, ...SUBPAGES].find((page) => page.path === path)?.title ?? '';
}

const BASE = '/console';

function currentPage(): PagePath {
  const rest = window.location.pathname.slice(BASE.length).replace(/^\/+|\/+$/g, '');
  return [...PAGES, ...SUBPAGES].find((page) => page.path === rest)?.path ?? '';
}

/** A page's address; with `show`, the page opens on that object (`?show=<id>`: a resource, a key, an event, …). */
export function hrefOf(path: PagePath, show?: string | number): string {
  const page = path === '' ? `${BASE}/` : `${BASE}/${path}`;
  return show === undefined ? page : `${page}?show=${encodeURIComponent(String(show))}`;
}

const listeners = new Set<() => void>();

export function navigate(path: PagePath, show?: string | number): void {
  window.history.pushState(null, '', hrefOf(path, show));
  for (const listener of listeners) listener();
}

/** A value read from the address, kept current as the console moves between pages. */
function useFromLocation<T>(read: () => T): T {
  const [value, setValue] = useState(read);
  useEffect(() => {
    const update = () => setValue(read());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return value;
}

export function useCurrentPage(): PagePath {
  return useFromLocation(currentPage);
}

/** The object the page was opened on (`?show=`), if any. */
export function useShown(): string | undefined {
  return useFromLocation(() => new URLSearchParams(window.location.search).get('show') ?? undefined);
}

export function Link({
  to,
  show,
  children,
  class: className,
  current,
}: {
  to: PagePath;
  show?: string | number;
  children: ComponentChildren;
  class?: string;
  /** `page`: the link is to this page; `section`: to the entry this page stands under. */
  current?: 'page' | 'section';
}) {
  const onClick = (event: MouseEvent) => {
    // A new tab or window keeps the browser's own behaviour.
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to, show);
  };
  return (
    <a href={hrefOf(to, show)} onClick={onClick} class={className} aria-current={current === 'section' ? 'true' : current}>
      {children}
    </a>
  );
}
