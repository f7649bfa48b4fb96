// Resources: the table with type and tag filters and paging, kept current by the live stream;
// create, edit (412 conflicts shown with both versions), delete.
import { ifMatch, RESOURCE_TYPES, type DevdataEvent, type Resource, type ResourceType } from '@devdata/client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ConfirmDialog } from '../components/dialog';
import { FormActions } from '../components/forms';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { formatState, Time } from '../components/format';
import { LiveBadge } from '../components/live-badge';
import { Page, Section } from '../components/page';
import { GuardedButton } from '../components/scope-gate';
import { defaultState, StateInput, type StateValue } from '../components/state-input';
import { useClient, useConnection } from '../connection-context';
import { isStatus, parseJsonObject, parseList } from '../errors';
import { useAction, useLoad } from '../hooks';
import { followEvents, type LiveStatus } from '../live';
import { scopeReason } from '../scopes';

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
  const [live, setLive] = useState<LiveStatus>({ state: 'connecting' });
  // The list is read once the stream has started, so no change falls between the two.
  const [streamStarted, setStreamStarted] = useState(!canFollow);
  const [newElsewhere, setNewElsewhere] = useState(0);
  const [flashing, setFlashing] = useState<Set<string>>(new Set());
  const [editing, setEditing] = useState<Resource | undefined>(undefined);
  const [deleting, setDeleting] = useState<Resource | undefined>(undefined);
  const [creating, setCreating] = useState(false);

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

  const apply = (event: DevdataEvent) => {
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
  };
  const applyRef = useRef(apply);
  applyRef.current = apply;

  useEffect(() => {
    if (!canFollow) return;
    const controller = new AbortController();
    followEvents(client, {
      type: 'resource.*',
      signal: controller.signal,
      onEvent: (event) => applyRef.current(event),
      onStatus: (status) => {
        setLive(status);
        // Without the stream the table is still worth reading.
        if (status.state === 'stopped') setStreamStarted(true);
      },
      onStart: () => setStreamStarted(true),
    });
    return () => controller.abort();
  }, [client, canFollow]);

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
        <GuardedButton needs={['resources:write']} type="button" onClick={() => setCreating(true)} disabled={creating}>
          New resource
        </GuardedButton>
      </div>
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
          <div class="table-wrap" tabIndex={0}>
            <table class="resources">
              <caption>Resources {page.total === 0 ? '' : `${offset + 1}–${offset + page.data.length} of ${page.total}`}</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">State</th>
                  <th scope="col">Tags</th>
                  <th scope="col">Version</th>
                  <th scope="col">Updated</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {page.data.length === 0 && (
                  <tr>
                    <td colSpan={7} class="empty">
                      No resources{filters.type || filters.tags.length ? ' match these filters' : ' yet'}.
                    </td>
                  </tr>
                )}
                {page.data.map((resource) => (
                  <tr key={resource.id} class={flashing.has(resource.id) ? 'flash' : undefined} data-resource-id={resource.id}>
                    <th scope="row">
                      {resource.name}
                      <div class="muted small">
                        <code>{resource.id}</code>
                      </div>
                    </th>
                    <td>{resource.type}</td>
                    <td class="state">{formatState(resource.state)}</td>
                    <td>
                      {resource.tags.map((tag) => (
                        <span key={tag} class="tag">
                          {tag}
                        </span>
                      ))}
                    </td>
                    <td>{resource.version}</td>
                    <td>
                      <Time value={resource.updatedAt} />
                    </td>
                    <td class="row-actions">
                      <GuardedButton needs={['resources:write']} type="button" class="secondary" onClick={() => setEditing(resource)}>
                        Edit<span class="visually-hidden"> {resource.name}</span>
                      </GuardedButton>
                      <GuardedButton needs={['resources:write']} type="button" class="danger-outline" onClick={() => setDeleting(resource)}>
                        Delete<span class="visually-hidden"> {resource.name}</span>
                      </GuardedButton>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
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

export function Pager({
  offset,
  count,
  hasMore,
  pageSize,
  onChange,
}: {
  offset: number;
  count: number;
  hasMore: boolean;
  pageSize: number;
  onChange: (offset: number) => void;
}) {
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={offset === 0} onClick={() => onChange(Math.max(0, offset - pageSize))}>
        Previous page
      </button>
      <span>Page {Math.floor(offset / pageSize) + 1}</span>
      <button type="button" class="secondary" disabled={!hasMore} onClick={() => onChange(offset + count)}>
        Next page
      </button>
    </nav>
  );
}

function CreateResource({ onDone, onCreated }: { onDone: () => void; onCreated: () => void }) {
  const client = useClient();
  const [name, setName] = useState('');
  const [type, setType] = useState<ResourceType>('sensor');
  const [state, setState] = useState<StateValue>(defaultState('sensor'));
  const [attributes, setAttributes] = useState('{}');
  const [tags, setTags] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await action.run(async () => {
      if (typeof state === 'number' && Number.isNaN(state)) throw new Error('The state must be a number');
      return client.createResource({ body: { name, type, state, attributes: parseJsonObject(attributes, 'Attributes'), tags: parseList(tags) } });
    });
    if (created) onCreated();
  };
  return (
    <Section title="New resource" id="create-resource-title">
      <form class="form" onSubmit={submit}>
        <div class="field">
          <label for="create-name">Name</label>
          <input id="create-name" required maxLength={200} value={name} onInput={(event) => setName(event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="create-type">Type</label>
          <select
            id="create-type"
            value={type}
            onChange={(event) => {
              const next = event.currentTarget.value as ResourceType;
              setType(next);
              setState(defaultState(next));
            }}
          >
            {RESOURCE_TYPES.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
        </div>
        <StateInput id="create-state" type={type} value={state} onChange={setState} />
        <div class="field">
          <label for="create-attributes">Attributes (JSON object)</label>
          <textarea id="create-attributes" rows={3} value={attributes} onInput={(event) => setAttributes(event.currentTarget.value)} spellcheck={false} />
        </div>
        <div class="field">
          <label for="create-tags">Tags</label>
          <input id="create-tags" value={tags} placeholder="greenhouse, north" onInput={(event) => setTags(event.currentTarget.value)} />
        </div>
        <ErrorNotice error={action.error} title="The resource was not created" />
        <FormActions busy={action.busy} label="Create resource" busyLabel="Creating…" onCancel={onDone} />
      </form>
    </Section>
  );
}

interface Draft {
  name: string;
  state: StateValue;
  attributes: string;
  tags: string;
}

function draftOf(resource: Resource): Draft {
  return { name: resource.name, state: resource.state, attributes: JSON.stringify(resource.attributes, null, 2), tags: resource.tags.join(', ') };
}

function ResourceEditor({ resource, onClose }: { resource: Resource; onClose: () => void }) {
  const client = useClient();
  const [base, setBase] = useState(resource);
  const [draft, setDraft] = useState<Draft>(() => draftOf(resource));
  const [conflict, setConflict] = useState<Resource | undefined>(undefined);
  const [saved, setSaved] = useState(false);
  const action = useAction();

  const save = async (version: number) => {
    setSaved(false);
    const result = await action.run(async () => {
      if (typeof draft.state === 'number' && Number.isNaN(draft.state)) throw new Error('The state must be a number');
      const body = { name: draft.name, state: draft.state, attributes: parseJsonObject(draft.attributes, 'Attributes'), tags: parseList(draft.tags) };
      try {
        return await client.updateResource({ path: { id: resource.id }, header: { 'if-match': ifMatch(version) }, body });
      } catch (error) {
        if (isStatus(error, 412)) {
          const current = await client.getResource({ path: { id: resource.id } });
          if (current) setConflict(current);
        }
        throw error;
      }
    });
    if (result) {
      setBase(result);
      setDraft(draftOf(result));
      setConflict(undefined);
      setSaved(true);
    }
  };

  const reloadStored = () => {
    if (!conflict) return;
    setBase(conflict);
    setDraft(draftOf(conflict));
    setConflict(undefined);
    action.clear();
  };

  return (
    <Section title={`Edit ${resource.name}`} id="edit-resource-title">
      <form
        class="form"
        onSubmit={(event) => {
          event.preventDefault();
          void save(base.version);
        }}
      >
        <p class="hint">
          Editing version {base.version} of <code>{resource.id}</code> ({resource.type}). Saving sends <code>If-Match: "{base.version}"</code>: a change made
          elsewhere in the meantime is not overwritten silently.
        </p>
        <div class="field">
          <label for="edit-name">Name</label>
          <input id="edit-name" required maxLength={200} value={draft.name} onInput={(event) => setDraft({ ...draft, name: event.currentTarget.value })} />
        </div>
        <StateInput id="edit-state" type={resource.type} value={draft.state} onChange={(state) => setDraft({ ...draft, state })} />
        <div class="field">
          <label for="edit-attributes">Attributes (JSON object)</label>
          <textarea
            id="edit-attributes"
            rows={4}
            spellcheck={false}
            value={draft.attributes}
            onInput={(event) => setDraft({ ...draft, attributes: event.currentTarget.value })}
          />
        </div>
        <div class="field">
          <label for="edit-tags">Tags</label>
          <input id="edit-tags" value={draft.tags} onInput={(event) => setDraft({ ...draft, tags: event.currentTarget.value })} />
        </div>
        {conflict ? (
          <ConflictView
            mine={draft}
            stored={conflict}
            error={action.error}
            onReload={reloadStored}
            onOverwrite={() => void save(conflict.version)}
            busy={action.busy}
          />
        ) : (
          <ErrorNotice error={action.error} title="The change was not saved" />
        )}
        {saved && <Notice kind="success">Saved: version {base.version}.</Notice>}
        <div class="actions">
          <button type="submit" disabled={action.busy || conflict !== undefined} aria-busy={action.busy}>
            {action.busy ? 'Saving…' : 'Save changes'}
          </button>
          <button type="button" class="secondary" onClick={onClose}>
            Close
          </button>
        </div>
      </form>
    </Section>
  );
}

function ConflictView({
  mine,
  stored,
  error,
  onReload,
  onOverwrite,
  busy,
}: {
  mine: Draft;
  stored: Resource;
  error: unknown;
  onReload: () => void;
  onOverwrite: () => void;
  busy: boolean;
}) {
  const theirs = draftOf(stored);
  const rows: Array<[string, string, string]> = [
    ['Name', mine.name, theirs.name],
    ['State', formatState(mine.state), formatState(theirs.state)],
    ['Attributes', mine.attributes, theirs.attributes],
    ['Tags', mine.tags, theirs.tags],
  ];
  return (
    <div class="conflict" role="alert">
      <h3>Changed elsewhere: version {stored.version} is stored now</h3>
      <p>Your change was not saved (412 precondition failed). Compare the two and choose.</p>
      <ErrorNotice error={error} title="Conflict" />
      <div class="table-wrap" tabIndex={0}>
        <table>
          <caption>Your version and the stored version</caption>
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Your version</th>
              <th scope="col">Stored (version {stored.version})</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(([field, yours, current]) => (
              <tr key={field} class={yours !== current ? 'differs' : undefined}>
                <th scope="row">{field}</th>
                <td>
                  <pre class="cell">{yours}</pre>
                </td>
                <td>
                  <pre class="cell">{current}</pre>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div class="actions">
        <button type="button" onClick={onReload}>
          Reload the stored version
        </button>
        <button type="button" class="secondary" onClick={onOverwrite} disabled={busy}>
          Save mine over version {stored.version}
        </button>
      </div>
    </div>
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
