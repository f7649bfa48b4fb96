// A webhook's settings as a form: a new webhook (its secret shown once after), or the changes to one
// in a modal dialog (only what differs is sent; the API's refusal shown under the field it names).
import type { DevdataClient, Webhook } from '@devdata/client';
import { useRef, useState } from 'preact/hooks';
import { useModal } from '../components/dialog';
import { ErrorNotice } from '../components/feedback';
import { FieldError, fieldGroupProps, fieldProps } from '../components/field-error';
import { FormActions } from '../components/forms';
import { Section } from '../components/page';
import { SecretOnce } from '../components/secret';
import { useClient } from '../connection-context';
import { parseList } from '../errors';
import { useAction } from '../hooks';

const EVENT_CHOICES = ['resource.created', 'resource.updated', 'resource.deleted', 'schedule.executed', 'custom.*'];
const DEFAULT_EVENTS = ['resource.created', 'resource.updated', 'resource.deleted'];

type UpdateWebhookBody = Parameters<DevdataClient['updateWebhook']>[0]['body'];

interface Draft {
  name: string;
  url: string;
  /** The types among EVENT_CHOICES that are ticked. */
  events: Set<string>;
  /** Every other type, comma-separated (exact custom types). */
  exactCustom: string;
}

function draftOf(webhook: Webhook | undefined): Draft {
  if (!webhook) return { name: '', url: '', events: new Set(DEFAULT_EVENTS), exactCustom: '' };
  return {
    name: webhook.name,
    url: webhook.url,
    events: new Set(webhook.events.filter((type) => EVENT_CHOICES.includes(type))),
    exactCustom: webhook.events.filter((type) => !EVENT_CHOICES.includes(type)).join(', '),
  };
}

function eventsOf(draft: Draft): string[] {
  return [...new Set([...EVENT_CHOICES.filter((type) => draft.events.has(type)), ...parseList(draft.exactCustom)])];
}

/** What a PATCH needs to send: the fields that differ from the webhook as stored. */
function changesOf(webhook: Webhook, draft: Draft): UpdateWebhookBody {
  const changes: UpdateWebhookBody = {};
  if (draft.name.trim() !== webhook.name) changes.name = draft.name;
  if (draft.url !== webhook.url) changes.url = draft.url;
  const events = eventsOf(draft);
  if (events.length !== webhook.events.length || events.some((type) => !webhook.events.includes(type))) changes.events = events;
  return changes;
}

/** The fields of both forms; `prefix` keeps their ids apart when the new-webhook form and an edit are open together. */
function WebhookFields({ prefix, draft, onChange, error }: { prefix: string; draft: Draft; onChange: (draft: Draft) => void; error: unknown }) {
  const id = (field: string) => `${prefix}-${field}`;
  const toggle = (type: string, on: boolean) => {
    const events = new Set(draft.events);
    if (on) events.add(type);
    else events.delete(type);
    onChange({ ...draft, events });
  };
  return (
    <>
      <div class="field">
        <label for={id('name')}>Name</label>
        <input
          id={id('name')}
          required
          maxLength={100}
          value={draft.name}
          onInput={(event) => onChange({ ...draft, name: event.currentTarget.value })}
          {...fieldProps(error, '/name', id('name'))}
        />
        <FieldError error={error} path="/name" id={id('name')} />
      </div>
      <div class="field">
        <label for={id('url')}>Receiver URL</label>
        <input
          id={id('url')}
          type="url"
          required
          value={draft.url}
          placeholder="https://example.com/hooks/devdata"
          onInput={(event) => onChange({ ...draft, url: event.currentTarget.value })}
          {...fieldProps(error, '/url', id('url'), id('url-hint'))}
        />
        <span class="hint" id={id('url-hint')}>
          HTTPS on port 443 to a public address.
        </span>
        <FieldError error={error} path="/url" id={id('url')} />
      </div>
      <fieldset class="field" {...fieldGroupProps(error, '/events', id('custom'))}>
        <legend>Events to deliver</legend>
        <ul class="choices">
          {EVENT_CHOICES.map((type) => (
            <li key={type}>
              <input
                id={id(`event-${type}`)}
                type="checkbox"
                checked={draft.events.has(type)}
                onChange={(event) => toggle(type, event.currentTarget.checked)}
              />
              <label for={id(`event-${type}`)}>
                <code>{type}</code>
              </label>
            </li>
          ))}
        </ul>
      </fieldset>
      <div class="field">
        <label for={id('custom')}>Exact custom types</label>
        <input
          id={id('custom')}
          value={draft.exactCustom}
          placeholder="custom.deploy.finished"
          onInput={(event) => onChange({ ...draft, exactCustom: event.currentTarget.value })}
          {...fieldProps(error, '/events', id('custom'), id('custom-hint'))}
        />
        <span class="hint" id={id('custom-hint')}>
          Comma-separated, when not every custom event should go.
        </span>
        {/* `/events` counts the boxes and these types together: what is wrong with the list is said here (and named by the group above). */}
        <FieldError error={error} path="/events" id={id('custom')} />
      </div>
    </>
  );
}

export function CreateWebhook({ onDone, onCreated }: { onDone: () => void; onCreated: () => void }) {
  const client = useClient();
  const [draft, setDraft] = useState<Draft>(() => draftOf(undefined));
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await action.run(() => client.createWebhook({ body: { name: draft.name, url: draft.url, events: eventsOf(draft) } }));
    if (created) {
      setSecret(created.secret);
      onCreated();
    }
  };
  if (secret) {
    return <SecretOnce title="The webhook's signing secret" secret={secret} explanation="Your receiver verifies each delivery with it." onDone={onDone} />;
  }
  return (
    <Section title="New webhook" id="create-webhook-title">
      <form class="form" onSubmit={submit}>
        <WebhookFields prefix="webhook" draft={draft} onChange={setDraft} error={action.error} />
        <ErrorNotice error={action.error} title="The webhook was not created" />
        <FormActions busy={action.busy} label="Create webhook" busyLabel="Creating…" onCancel={onDone} />
      </form>
    </Section>
  );
}

/** A modal dialog changing the webhook's name, URL and events; focus goes back to its opener when it closes. */
export function EditWebhook({ webhook, onClose, onSaved }: { webhook: Webhook; onClose: () => void; onSaved: (webhook: Webhook) => void }) {
  const client = useClient();
  const dialog = useRef<HTMLDialogElement>(null);
  const [draft, setDraft] = useState<Draft>(() => draftOf(webhook));
  const action = useAction();
  useModal(dialog);
  const titleId = `edit-${webhook.id}-title`;
  const submit = async (event: Event) => {
    event.preventDefault();
    const changes = changesOf(webhook, draft);
    // Nothing changed: nothing to send (a PATCH without fields is refused).
    if (Object.keys(changes).length === 0) {
      onClose();
      return;
    }
    const saved = await action.run(() => client.updateWebhook({ path: { id: webhook.id }, body: changes }));
    if (saved) {
      onSaved(saved);
      onClose();
    }
  };
  return (
    <dialog
      ref={dialog}
      class="edit-webhook"
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <h2 id={titleId}>Edit {webhook.name}</h2>
      <form class="form" onSubmit={submit}>
        <WebhookFields prefix={`edit-${webhook.id}`} draft={draft} onChange={setDraft} error={action.error} />
        <p class="hint">Changing where or what it delivers makes the connected key the credential it delivers on.</p>
        <ErrorNotice error={action.error} title="The webhook was not changed" />
        <FormActions busy={action.busy} label="Save changes" busyLabel="Saving…" onCancel={onClose} needs={['webhooks:manage', 'events:read']} />
      </form>
    </dialog>
  );
}
