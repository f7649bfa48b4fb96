// Resources page: the table with type and tag filters and paging, kept current by the live stream, and delete (asked first); it opens the create form, the editor and the import dialog.
import { RESOURCE_TYPES, type DevdataEvent, type Resource, type ResourceType } from '@devdata/client';
import { useRef, useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { ConfirmDialog } from '../components/dialog';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { formatState, Time } from '../components/format';
import { LiveBadge } from '../components/live-badge';
import { Page } from '../components/page';
import { Pager } from '../components/pager';
import { GuardedButton } from '../components/scope-gate';
import { useClient, useConnection } from '../connection-context';
import { parseList } from '../errors';
import { useAction, useLoad } from '../hooks';
import { useLiveEvents } from '../live';
import { Link, useShown } from '../router';
import { scopeReason } from '../scopes';
import { CreateResource } from './resource-create-form';
import { ResourceEditor } from './resource-editor';
import { ImportResources } from './resource-import';
import { ShownResource } from './resource-shown';

const PAGE_SIZE = 25;

interface Filters {
  type: ResourceType | '';
  tags: string[];
}

function matches(resource: Resource, filters: Filters): boolean {
  return (filters.type === '' || resource.type === filters.type) && filters.tags.every((tag) => resource.tags.includes(tag));
}

export function ResourcesPage() {
  return (
    <Page
      title="Resources"
      intro="Named values (sensor readings, switches, text) with their attributes, tags and version. Changes made anywhere appear here live."
      needs={['resources:read']}
      what="Listing resources"
    >
      <ResourcesView />
    </Page>
  );
}

function ResourcesView() {
  const client = useClient();
  const { key } = useConnection();
  const canFollow = scopeReason(key?.credential, ['events:read']) === undefined;
  const [filters, setFilters] = useState<Filters>({ type: '', tags: [] });
  const [typeInput, setTypeInput] = useState<ResourceType | ''>('');
  const [tagInput, setTagInput] = useState('');
  const [offset, setOffset] = useState(0);
  // The list is read once the stream has started, so no change falls between the two.
  const { live, started: streamStarted } = useLiveEvents(client, 'resource.*', canFollow, apply);
  const [newElsewhere, setNewElsewhere] = useState(0);
  const [flashing, setFlashing] = useState<Set<string>>(new Set());
  const [editing, setEditing] = useState<Resource | undefined>(undefined);
  const [deleting, setDeleting] = useState<Resource | undefined>(undefined);
  const [creating, setCreating] = useState(false);
  const [importing, setImporting] = useState(false);
  const shown = useShown();

  const list = useLoad(
    async (signal) =>
      streamStarted
        ? client.listResources(
            { query: { type: filters.type || undefined, tag: filters.tags.length ? filters.tags : undefined, limit: PAGE_SIZE, offset } },
            { signal },
          )
        : undefined,
    [client, filters, offset, streamStarted],
  );
  const filtersRef = useRef(filters);
  filtersRef.current = filters;

  const flash = (id: string) => {
    setFlashing((current) => new Set(current).add(id));
    setTimeout(
      () =>
        setFlashing((current) => {
          const next = new Set(current);
          next.delete(id);
          return next;
        }),
      2000,
    );
  };

  function apply(event: DevdataEvent): void {
    if (event.type !== 'resource.created' && event.type !== 'resource.updated' && event.type !== 'resource.deleted') return;
    const resource = event.data.resource;
    const fits = matches(resource, filtersRef.current);
    list.update((current) => {
      if (!current) return current;
      const index = current.data.findIndex((row) => row.id === resource.id);
      if (event.type === 'resource.deleted') {
        if (index < 0) return current;
        return { ...current, data: current.data.filter((row) => row.id !== resource.id), total: current.total - 1 };
      }
      if (index >= 0) {
        const row = current.data[index] as Resource;
        if (row.version >= resource.version) return current;
        if (!fits) return { ...current, data: current.data.filter((entry) => entry.id !== resource.id), total: current.total - 1 };
        const data = [...current.data];
        data[index] = resource;
        return { ...current, data };
      }
      if (event.type === 'resource.created' && fits) {
        if (current.hasMore || current.data.length >= PAGE_SIZE) {
          setNewElsewhere((count) => count + 1);
          return { ...current, total: current.total + 1, hasMore: true };
        }
        return { ...current, data: [...current.data, resource], total: current.total + 1 };
      }
      return current;
    });
    flash(resource.id);
  }

  const applyFilters = (event: Event) => {
    event.preventDefault();
    setOffset(0);
    setNewElsewhere(0);
    setFilters({ type: typeInput, tags: parseList(tagInput) });
  };

  const page = list.data;
  return (
    <>
      <div class="toolbar">
        {canFollow ? <LiveBadge status={live} /> : <span class="reason">Live updates need the events:read scope, which the connected key does not have.</span>}
        <div class="toolbar-actions">
          <GuardedButton needs={['resources:write']} type="button" onClick={() => setCreating(true)} disabled={creating}>
            New resource
          </GuardedButton>
          {/* Not disabled while the dialog is open: the dialog gives focus back to it when it closes. */}
          <GuardedButton needs={['resources:write']} type="button" class="secondary" onClick={() => setImporting(true)}>
            Import
          </GuardedButton>
        </div>
      </div>
      {importing && (
        <ImportResources
          onClose={() => setImporting(false)}
          onEnded={() => {
            // Thousands of rows may have changed: the page is read again rather than patched by each event.
            setNewElsewhere(0);
            list.reload();
          }}
        />
      )}
      {creating && (
        <CreateResource
          onDone={() => setCreating(false)}
          onCreated={() => {
            setCreating(false);
            // With the stream the new row arrives as its event; without it, read the page again.
            if (!canFollow) list.reload();
          }}
        />
      )}
      {shown && <ShownResource key={shown} id={shown} onEdit={setEditing} />}
      {editing && <ResourceEditor key={editing.id} resource={editing} onClose={() => setEditing(undefined)} />}
      <form class="filters" onSubmit={applyFilters} aria-label="Filter resources">
        <div class="field">
          <label for="filter-type">Type</label>
          <select id="filter-type" value={typeInput} onChange={(event) => setTypeInput(event.currentTarget.value as ResourceType | '')}>
            <option value="">Any type</option>
            {RESOURCE_TYPES.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-tags">Tags</label>
          <input
            id="filter-tags"
            value={tagInput}
            placeholder="greenhouse, north"
            onInput={(event) => setTagInput(event.currentTarget.value)}
            aria-describedby="filter-tags-hint"
          />
          <span class="hint" id="filter-tags-hint">
            Comma-separated; every tag must match.
          </span>
        </div>
        <div class="actions">
          <button type="submit" class="secondary">
            Apply filters
          </button>
        </div>
      </form>
      {newElsewhere > 0 && (
        <Notice kind="info">
          <p>
            {newElsewhere} new resource{newElsewhere > 1 ? 's' : ''} on a later page.
          </p>
        </Notice>
      )}
      {(list.loading || !streamStarted) && <Busy label={streamStarted ? 'Loading resources' : 'Connecting to the live stream'} />}
      <ErrorNotice error={list.error} title="The resources could not be read" />
      {page && (
        <>
          <DataList
            class="resources"
            caption={`Resources ${page.total === 0 ? '' : `${offset + 1}–${offset + page.data.length} of ${page.total}`}`}
            rows={page.data}
            rowKey={(resource) => resource.id}
            rowAttributes={(resource) => ({
              'data-resource-id': resource.id,
              ...(flashing.has(resource.id) ? { class: 'flash' } : {}),
            })}
            empty={`No resources${filters.type || filters.tags.length ? ' match these filters' : ' yet'}.`}
            columns={[
              {
                label: 'Name',
                role: 'name',
                cell: (resource) => (
                  <>
                    {resource.name}
                    <div class="muted small">
                      <code>{resource.id}</code>
                    </div>
                  </>
                ),
              },
              { label: 'Type', cell: (resource) => resource.type },
              { label: 'State', role: 'value', class: 'state', cell: (resource) => formatState(resource.state) },
              {
                label: 'Tags',
                cell: (resource) =>
                  resource.tags.length === 0 ? (
                    <span class="muted">none</span>
                  ) : (
                    resource.tags.map((tag) => (
                      <span key={tag} class="tag">
                        {tag}
                      </span>
                    ))
                  ),
              },
              { label: 'Version', cell: (resource) => resource.version },
              { label: 'Updated', cell: (resource) => <Time value={resource.updatedAt} /> },
              {
                label: 'Actions',
                role: 'actions',
                cell: (resource) => (
                  <>
                    <Link to="resources/history" show={resource.id} class="button-link">
                      History<span class="visually-hidden"> of {resource.name}</span>
                    </Link>
                    <GuardedButton needs={['resources:write']} type="button" class="secondary" onClick={() => setEditing(resource)}>
                      Edit<span class="visually-hidden"> {resource.name}</span>
                    </GuardedButton>
                    <GuardedButton needs={['resources:write']} type="button" class="danger-outline" onClick={() => setDeleting(resource)}>
                      Delete<span class="visually-hidden"> {resource.name}</span>
                    </GuardedButton>
                  </>
                ),
              },
            ]}
          />
          <Pager
            offset={offset}
            count={page.data.length}
            hasMore={page.hasMore}
            pageSize={PAGE_SIZE}
            onChange={(next) => {
              setNewElsewhere(0);
              setOffset(next);
            }}
          />
        </>
      )}
      {deleting && <DeleteResource resource={deleting} onDone={() => setDeleting(undefined)} />}
    </>
  );
}

function DeleteResource({ resource, onDone }: { resource: Resource; onDone: () => void }) {
  const client = useClient();
  const action = useAction();
  const confirm = async () => {
    const done = await action.run(() => client.deleteResource({ path: { id: resource.id } }).then(() => true));
    if (done) onDone();
  };
  return (
    <ConfirmDialog title={`Delete ${resource.name}?`} confirmLabel="Delete resource" busy={action.busy} onConfirm={confirm} onCancel={onDone}>
      <p>
        The resource <code>{resource.id}</code> and its state are deleted for good; a <code>resource.deleted</code> event records it.
      </p>
      <ErrorNotice error={action.error} title="The resource was not deleted" />
    </ConfirmDialog>
  );
}
