// Other objects by their names, linked to the page that shows them: where a page refers to a key, an
// app, a webhook, a schedule or a resource, it shows the name the developer gave it, not its id.
import type { DevdataClient } from '@devdata/client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useClient, useConnection } from './connection-context';
import { Link, type PagePath, useShown } from './router';
import { scopeReason, type Scope } from './scopes';

/** What a page can refer to; `client` is an app by its OAuth client id (an app acting in the audit log). */
export type ObjectKind = 'resource' | 'api_key' | 'app' | 'client' | 'webhook' | 'schedule';

export interface ObjectRef {
  kind: ObjectKind;
  id: string;
}

interface Named {
  name: string;
  /** The id the object's page is opened on (an app's id for a client id). */
  show: string;
}

const PAGE_OF: Record<ObjectKind, PagePath> = {
  resource: 'resources',
  api_key: 'keys',
  app: 'apps',
  client: 'apps',
  webhook: 'webhooks',
  schedule: 'schedules',
};

/** The scope that reading each kind's names needs; without it ids are shown. */
const SCOPE_OF: Record<ObjectKind, Scope> = {
  resource: 'resources:read',
  api_key: 'keys:manage',
  app: 'apps:manage',
  client: 'apps:manage',
  webhook: 'webhooks:manage',
  schedule: 'schedules:manage',
};

const refKey = (ref: ObjectRef) => `${ref.kind}:${ref.id}`;

/** Reads the names of these kinds (every key, app, webhook or schedule: one list each) or these resources (one each). */
async function readNames(client: DevdataClient, refs: ObjectRef[], signal: AbortSignal): Promise<Map<string, Named>> {
  const names = new Map<string, Named>();
  const kinds = new Set(refs.map((ref) => ref.kind));
  const reads: Array<Promise<void>> = [];
  if (kinds.has('api_key'))
    reads.push(
      client.listApiKeys({ query: { status: 'all' } }, { signal }).then(({ data }) => {
        for (const key of data) names.set(refKey({ kind: 'api_key', id: key.id }), { name: key.name, show: key.id });
      }),
    );
  if (kinds.has('app') || kinds.has('client'))
    reads.push(
      client.listApps(undefined, { signal }).then(({ data }) => {
        for (const app of data) {
          names.set(refKey({ kind: 'app', id: app.id }), { name: app.name, show: app.id });
          names.set(refKey({ kind: 'client', id: app.clientId }), { name: app.name, show: app.id });
        }
      }),
    );
  if (kinds.has('webhook'))
    reads.push(
      client.listWebhooks(undefined, { signal }).then(({ data }) => {
        for (const webhook of data) names.set(refKey({ kind: 'webhook', id: webhook.id }), { name: webhook.name, show: webhook.id });
      }),
    );
  if (kinds.has('schedule'))
    reads.push(
      client.listSchedules(undefined, { signal }).then(({ data }) => {
        for (const schedule of data) names.set(refKey({ kind: 'schedule', id: schedule.id }), { name: schedule.name, show: schedule.id });
      }),
    );
  // Resources one by one (an account may hold many more than a page refers to); a deleted one stays unnamed.
  for (const ref of refs.filter((entry) => entry.kind === 'resource'))
    reads.push(
      client.getResource({ path: { id: ref.id } }, { signal }).then(
        (resource) => {
          if (resource) names.set(refKey(ref), { name: resource.name, show: resource.id });
        },
        () => undefined,
      ),
    );
  // A list the key may not read leaves those ids as they are.
  await Promise.all(reads.map((read) => read.catch(() => undefined)));
  return names;
}

export interface Names {
  /** The object's name and the id its page opens on, or undefined (not read yet, gone, or not readable with this key). */
  lookup: (ref: ObjectRef) => Named | undefined;
}

/** The names of the objects these refs point to, read once for the refs a page shows (and again when new ones appear). */
export function useNames(refs: readonly ObjectRef[]): Names {
  const client = useClient();
  const { key } = useConnection();
  const readable = refs.filter((ref) => scopeReason(key?.credential, [SCOPE_OF[ref.kind]]) === undefined);
  const wanted = [...new Set(readable.map(refKey))].sort().join(' ');
  const [names, setNames] = useState<Map<string, Named>>(new Map());
  const asked = useRef(new Set<string>());
  useEffect(() => {
    const missing = readable.filter((ref) => !asked.current.has(refKey(ref)));
    if (missing.length === 0) return;
    for (const ref of missing) asked.current.add(refKey(ref));
    const controller = new AbortController();
    let read = false;
    void readNames(client, missing, controller.signal).then((found) => {
      read = true;
      if (!controller.signal.aborted) setNames((current) => new Map([...current, ...found]));
    });
    return () => {
      controller.abort();
      // Cut short (the page moved on): asked again when they are shown again.
      if (!read) for (const ref of missing) asked.current.delete(refKey(ref));
    };
  }, [client, wanted]);
  return { lookup: (ref) => names.get(refKey(ref)) };
}

/**
 * An object by its name, linking to the page that shows it; its id while the name is unknown
 * (`fallback`, such as the name an audit record kept, is shown instead when there is one).
 */
export function ObjectLink({ names, kind, id, fallback }: { names: Names; kind: ObjectKind; id: string; fallback?: string }) {
  const named = names.lookup({ kind, id });
  const text = named?.name ?? fallback;
  // A client id is not what the apps page is opened on: without its app, the page itself.
  const show = named?.show ?? (kind === 'client' ? undefined : id);
  return (
    <Link to={PAGE_OF[kind]} show={show}>
      {text ?? <code>{id}</code>}
    </Link>
  );
}

/**
 * For a card or row that a link may have opened the page on (`?show=<id>`): scrolled into view,
 * focused and marked once it is drawn.
 */
export function useShownElement<E extends HTMLElement>(id: string): { ref: { current: E | null }; shown: boolean } {
  const shown = useShown() === id;
  const ref = useRef<E>(null);
  useEffect(() => {
    if (!shown || !ref.current) return;
    ref.current.scrollIntoView({ block: 'center' });
    ref.current.focus({ preventScroll: true });
  }, [shown]);
  return { ref, shown };
}
