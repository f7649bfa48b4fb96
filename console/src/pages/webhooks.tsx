// Webhooks: create, pause and resume, rotate the signing secret (shown once), the delivery log
// with retries, and how a receiver verifies a delivery.
import { type Webhook, type WebhookDelivery, webhookStatus } from '@devdata/client';
import { useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { ConfirmDialog } from '../components/dialog';
import { FormActions } from '../components/forms';
import { Busy, ErrorNotice } from '../components/feedback';
import { FieldError, fieldProps } from '../components/field-error';
import { Time } from '../components/format';
import { Page, Section } from '../components/page';
import { GuardedButton, RequiresScopes } from '../components/scope-gate';
import { CopyButton, SecretOnce } from '../components/secret';
import { useClient } from '../connection-context';
import { parseList } from '../errors';
import { useAction, useInterval, useLoad } from '../hooks';
import { useShownElement } from '../names';
import { Link } from '../router';

const EVENT_CHOICES = ['resource.created', 'resource.updated', 'resource.deleted', 'schedule.executed', 'custom.*'];
const LOG_REFRESH_MS = 2000;

export const VERIFICATION_SNIPPET = `// Node.js receiver: verify before you trust a delivery.
import { createServer } from 'node:http';
import { verifyWebhook } from '@devdata/client';

createServer(async (request, response) => {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const rawBody = Buffer.concat(chunks); // exactly as received, before JSON.parse
  try {
    const event = await verifyWebhook(rawBody, request.headers['x-service-signature'], process.env.WEBHOOK_SECRET);
    // Store the event; skip an X-Service-Delivery-Id you have already processed.
    response.writeHead(204).end();
  } catch (error) {
    response.writeHead(400).end(error.message); // WebhookVerificationError: not from us, altered or stale
  }
}).listen(3000);`;

export function WebhooksPage() {
  return (
    <Page title="Webhooks" intro="Events pushed to your HTTPS receiver, signed with a secret only you and the service know, retried when the receiver fails.">
      <RequiresScopes needs={['webhooks:manage']} what="Managing webhooks">
        <WebhooksView />
      </RequiresScopes>
      <Section title="Verifying a delivery" id="verify-title">
        <p>
          Each delivery carries <code>X-Service-Signature: t=…,v1=…</code>, an HMAC-SHA256 of <code>{'<t>.<raw body>'}</code> keyed with the webhook's secret
          (the format Stripe uses). Check it on the raw body and refuse old timestamps:
        </p>
        <div class="command">
          <pre tabIndex={0}>
            <code>{VERIFICATION_SNIPPET}</code>
          </pre>
          <CopyButton text={VERIFICATION_SNIPPET} label="Copy the snippet" />
        </div>
        <p class="hint">
          Without the client package: docs/webhook-verification.md in the service's repository has the same check in Node.js, Python, Go and the shell.
        </p>
      </Section>
    </Page>
  );
}

function WebhooksView() {
  const client = useClient();
  const webhooks = useLoad((signal) => client.listWebhooks(undefined, { signal }), [client]);
  const [creating, setCreating] = useState(false);
  return (
    <>
      <div class="toolbar">
        <GuardedButton needs={['webhooks:manage', 'events:read']} type="button" onClick={() => setCreating(true)} disabled={creating}>
          New webhook
        </GuardedButton>
      </div>
      {creating && <CreateWebhook onDone={() => setCreating(false)} onCreated={webhooks.reload} />}
      {webhooks.loading && <Busy label="Loading webhooks" />}
      <ErrorNotice error={webhooks.error} title="The webhooks could not be read" />
      {webhooks.data?.data.length === 0 && <p class="empty">No webhooks yet.</p>}
      {webhooks.data?.data.map((webhook) => (
        <WebhookCard key={webhook.id} webhook={webhook} onChanged={webhooks.reload} />
      ))}
    </>
  );
}

function CreateWebhook({ onDone, onCreated }: { onDone: () => void; onCreated: () => void }) {
  const client = useClient();
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<Set<string>>(new Set(['resource.created', 'resource.updated', 'resource.deleted']));
  const [exactCustom, setExactCustom] = useState('');
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await action.run(() => client.createWebhook({ body: { name, url, events: [...events, ...parseList(exactCustom)] } }));
    if (created) {
      setSecret(created.secret);
      onCreated();
    }
  };
  if (secret) {
    return <SecretOnce title="The webhook's signing secret" secret={secret} explanation="Your receiver verifies each delivery with it." onDone={onDone} />;
  }
  const toggle = (type: string, on: boolean) => {
    const next = new Set(events);
    if (on) next.add(type);
    else next.delete(type);
    setEvents(next);
  };
  return (
    <Section title="New webhook" id="create-webhook-title">
      <form class="form" onSubmit={submit}>
        <div class="field">
          <label for="webhook-name">Name</label>
          <input
            id="webhook-name"
            required
            maxLength={100}
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
            {...fieldProps(action.error, '/name', 'webhook-name')}
          />
          <FieldError error={action.error} path="/name" id="webhook-name" />
        </div>
        <div class="field">
          <label for="webhook-url">Receiver URL</label>
          <input
            id="webhook-url"
            type="url"
            required
            value={url}
            placeholder="https://example.com/hooks/devdata"
            onInput={(event) => setUrl(event.currentTarget.value)}
            {...fieldProps(action.error, '/url', 'webhook-url', 'webhook-url-hint')}
          />
          <span class="hint" id="webhook-url-hint">
            HTTPS on port 443 to a public address.
          </span>
          <FieldError error={action.error} path="/url" id="webhook-url" />
        </div>
        <fieldset class="field">
          <legend>Events to deliver</legend>
          <ul class="choices">
            {EVENT_CHOICES.map((type) => (
              <li key={type}>
                <input
                  id={`webhook-event-${type}`}
                  type="checkbox"
                  checked={events.has(type)}
                  onChange={(event) => toggle(type, event.currentTarget.checked)}
                />
                <label for={`webhook-event-${type}`}>
                  <code>{type}</code>
                </label>
              </li>
            ))}
          </ul>
        </fieldset>
        <div class="field">
          <label for="webhook-custom">Exact custom types</label>
          <input
            id="webhook-custom"
            value={exactCustom}
            placeholder="custom.deploy.finished"
            onInput={(event) => setExactCustom(event.currentTarget.value)}
            {...fieldProps(action.error, '/events', 'webhook-custom', 'webhook-custom-hint')}
          />
          <span class="hint" id="webhook-custom-hint">
            Comma-separated, when not every custom event should go.
          </span>
          {/* `/events` counts the boxes and these types together: what is wrong with the list is said here. */}
          <FieldError error={action.error} path="/events" id="webhook-custom" />
        </div>
        <ErrorNotice error={action.error} title="The webhook was not created" />
        <FormActions busy={action.busy} label="Create webhook" busyLabel="Creating…" onCancel={onDone} />
      </form>
    </Section>
  );
}

function WebhookCard({ webhook, onChanged }: { webhook: Webhook; onChanged: () => void }) {
  const client = useClient();
  // A link to the webhook (an event's delivery) opens the page on it with its deliveries.
  const { ref, shown } = useShownElement<HTMLElement>(webhook.id);
  const [showLog, setShowLog] = useState(shown);
  const [confirm, setConfirm] = useState<'rotate' | 'delete' | undefined>(undefined);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const action = useAction();
  const titleId = `webhook-${webhook.id}-title`;
  const setEnabled = async (enabled: boolean) => {
    if (await action.run(() => client.updateWebhook({ path: { id: webhook.id }, body: { enabled } }))) onChanged();
  };
  const rotate = async () => {
    const rotated = await action.run(() => client.rotateWebhookSecret({ path: { id: webhook.id } }));
    setConfirm(undefined);
    if (rotated) setSecret(rotated.secret);
  };
  const remove = async () => {
    const removed = await action.run(() => client.deleteWebhook({ path: { id: webhook.id } }).then(() => true));
    setConfirm(undefined);
    if (removed) onChanged();
  };
  const paused = !webhook.enabled || webhook.disabledReason !== null;
  return (
    <section class={shown ? 'card shown' : 'card'} aria-labelledby={titleId} data-webhook-id={webhook.id} ref={ref} tabIndex={-1}>
      <div class="card-head">
        <h2 id={titleId}>{webhook.name}</h2>
        <span class={paused ? 'pill pill-off' : 'pill pill-ok'}>{webhookStatus(webhook)}</span>
      </div>
      <dl class="facts">
        <dt>URL</dt>
        <dd class="break">
          <code>{webhook.url}</code>
        </dd>
        <dt>Events</dt>
        <dd>
          {webhook.events.map((type) => (
            <span key={type} class="tag">
              {type}
            </span>
          ))}
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{webhook.id}</code>
        </dd>
        <dt>Created</dt>
        <dd>
          <Time value={webhook.createdAt} />
        </dd>
      </dl>
      <div class="actions">
        {paused ? (
          <GuardedButton needs={['webhooks:manage', 'events:read']} type="button" class="secondary" busy={action.busy} onClick={() => setEnabled(true)}>
            Resume<span class="visually-hidden"> {webhook.name}</span>
          </GuardedButton>
        ) : (
          <button type="button" class="secondary" disabled={action.busy} onClick={() => setEnabled(false)}>
            Pause<span class="visually-hidden"> {webhook.name}</span>
          </button>
        )}
        {/* The new secret can sign any event, so the server asks for events:read too. */}
        <GuardedButton needs={['webhooks:manage', 'events:read']} type="button" class="secondary" onClick={() => setConfirm('rotate')}>
          Rotate secret<span class="visually-hidden"> of {webhook.name}</span>
        </GuardedButton>
        <button type="button" class="secondary" aria-expanded={showLog} onClick={() => setShowLog(!showLog)}>
          {showLog ? 'Hide deliveries' : 'Show deliveries'}
          <span class="visually-hidden"> of {webhook.name}</span>
        </button>
        <button type="button" class="danger-outline" onClick={() => setConfirm('delete')}>
          Delete<span class="visually-hidden"> {webhook.name}</span>
        </button>
      </div>
      {webhook.disabledReason && <p class="hint">Resuming it makes the connected key the credential it delivers on.</p>}
      {action.busy && <Busy label="Working" />}
      <ErrorNotice error={action.error} title="The webhook was not changed" />
      {secret && (
        <SecretOnce
          title="The new signing secret"
          secret={secret}
          explanation="Deliveries are signed with it from their next attempt on."
          onDone={() => setSecret(undefined)}
        />
      )}
      {confirm === 'rotate' && (
        <ConfirmDialog
          title={`Rotate the secret of ${webhook.name}?`}
          confirmLabel="Rotate secret"
          busy={action.busy}
          onConfirm={rotate}
          onCancel={() => setConfirm(undefined)}
        >
          <p>The old secret stops being used at once: update your receiver with the new one.</p>
        </ConfirmDialog>
      )}
      {confirm === 'delete' && (
        <ConfirmDialog
          title={`Delete ${webhook.name}?`}
          confirmLabel="Delete webhook"
          busy={action.busy}
          onConfirm={remove}
          onCancel={() => setConfirm(undefined)}
        >
          <p>Nothing more is delivered to {webhook.url}, and its delivery log is gone.</p>
        </ConfirmDialog>
      )}
      {showLog && <DeliveryLog webhookId={webhook.id} />}
    </section>
  );
}

function lastAttempt(delivery: WebhookDelivery) {
  return delivery.attempts.at(-1);
}

function DeliveryLog({ webhookId }: { webhookId: string }) {
  const client = useClient();
  const deliveries = useLoad((signal) => client.listWebhookDeliveries({ path: { id: webhookId } }, { signal }), [client, webhookId]);
  const retry = useAction();
  // Kept current while open: deliveries happen in the background.
  useInterval(deliveries.reload, LOG_REFRESH_MS);
  const retryDelivery = async (deliveryId: string) => {
    if (await retry.run(() => client.retryWebhookDelivery({ path: { id: webhookId, deliveryId } }))) deliveries.reload();
  };
  return (
    <div class="delivery-log">
      <h3>Deliveries</h3>
      {deliveries.loading && deliveries.data === undefined && <Busy label="Loading deliveries" />}
      <ErrorNotice error={deliveries.error} title="The deliveries could not be read" />
      <ErrorNotice error={retry.error} title="The delivery was not retried" />
      {deliveries.data && (
        <DataList
          caption={`Pending and the latest completed deliveries, newest first (refreshed every ${LOG_REFRESH_MS / 1000} s)`}
          rows={deliveries.data.data}
          rowKey={(delivery) => delivery.id}
          rowAttributes={(delivery) => ({ 'data-delivery-id': delivery.id })}
          empty="No deliveries yet: they appear when a matching event happens."
          columns={[
            {
              label: 'Event',
              role: 'name',
              cell: (delivery) => (
                <>
                  <Link to="events" show={delivery.eventId}>
                    #{delivery.eventId}
                  </Link>{' '}
                  <code>{delivery.eventType}</code>
                </>
              ),
            },
            {
              label: 'Status',
              role: 'value',
              cell: (delivery) => (
                <span class={`pill ${delivery.status === 'succeeded' ? 'pill-ok' : delivery.status === 'failed' ? 'pill-bad' : ''}`}>{delivery.status}</span>
              ),
            },
            {
              label: 'Attempts',
              cell: (delivery) =>
                delivery.attempts.length === 0 ? (
                  '0'
                ) : (
                  <details>
                    <summary>{delivery.attempts.length}</summary>
                    <ol class="attempts">
                      {delivery.attempts.map((attempt) => (
                        <li key={attempt.attempt}>
                          <Time value={attempt.at} />: {attempt.responseStatus ?? 'no response'} in {attempt.durationMs} ms
                          {attempt.error ? ` (${attempt.error})` : ''}
                        </li>
                      ))}
                    </ol>
                  </details>
                ),
            },
            {
              label: 'Response',
              class: 'response',
              cell: (delivery) => {
                const last = lastAttempt(delivery);
                return last ? (last.responseStatus ?? last.error ?? 'no response') : '—';
              },
            },
            { label: 'Created', cell: (delivery) => <Time value={delivery.createdAt} /> },
            { label: 'Next attempt', cell: (delivery) => <Time value={delivery.nextAttemptAt} /> },
            {
              label: 'Actions',
              role: 'actions',
              cell: (delivery) =>
                delivery.status !== 'pending' && (
                  <button type="button" class="secondary" disabled={retry.busy} onClick={() => retryDelivery(delivery.id)}>
                    Retry<span class="visually-hidden"> delivery of event {delivery.eventId}</span>
                  </button>
                ),
            },
          ]}
        />
      )}
    </div>
  );
}
