// The resource editor: saves with If-Match, and on a 412 shows the stored version beside the user's (reload it or save over it).
import { ifMatch, type Resource } from '@devdata/client';
import { useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { ErrorNotice, Notice } from '../components/feedback';
import { FieldError, fieldProps } from '../components/field-error';
import { formatState } from '../components/format';
import { Section } from '../components/page';
import { StateInput, type StateValue } from '../components/state-input';
import { useClient } from '../connection-context';
import { isStatus, parseJsonObject, parseList } from '../errors';
import { useAction } from '../hooks';

interface Draft {
  name: string;
  state: StateValue;
  attributes: string;
  tags: string;
}

function draftOf(resource: Resource): Draft {
  return { name: resource.name, state: resource.state, attributes: JSON.stringify(resource.attributes, null, 2), tags: resource.tags.join(', ') };
}

export function ResourceEditor({ resource, onClose }: { resource: Resource; onClose: () => void }) {
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
          <input
            id="edit-name"
            required
            maxLength={200}
            value={draft.name}
            onInput={(event) => setDraft({ ...draft, name: event.currentTarget.value })}
            {...fieldProps(action.error, '/name', 'edit-name')}
          />
          <FieldError error={action.error} path="/name" id="edit-name" />
        </div>
        <StateInput id="edit-state" type={resource.type} value={draft.state} onChange={(state) => setDraft({ ...draft, state })} error={action.error} />
        <div class="field">
          <label for="edit-attributes">Attributes (JSON object)</label>
          <textarea
            id="edit-attributes"
            rows={4}
            spellcheck={false}
            value={draft.attributes}
            onInput={(event) => setDraft({ ...draft, attributes: event.currentTarget.value })}
            {...fieldProps(action.error, '/attributes', 'edit-attributes')}
          />
          <FieldError error={action.error} path="/attributes" id="edit-attributes" />
        </div>
        <div class="field">
          <label for="edit-tags">Tags</label>
          <input
            id="edit-tags"
            value={draft.tags}
            onInput={(event) => setDraft({ ...draft, tags: event.currentTarget.value })}
            {...fieldProps(action.error, '/tags', 'edit-tags')}
          />
          <FieldError error={action.error} path="/tags" id="edit-tags" />
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
      <DataList
        caption="Your version and the stored version"
        rows={rows}
        rowKey={([field]) => field}
        rowAttributes={([, yours, current]) => (yours !== current ? { class: 'differs' } : {})}
        empty="Nothing to compare."
        columns={[
          { label: 'Field', role: 'name', cell: ([field]) => field },
          { label: 'Your version', cell: ([, yours]) => <pre class="cell">{yours}</pre> },
          { label: `Stored (version ${stored.version})`, cell: ([, , current]) => <pre class="cell">{current}</pre> },
        ]}
      />
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
