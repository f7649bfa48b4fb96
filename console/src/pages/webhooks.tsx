// Webhooks: create, edit, pause and resume, send a test, rotate the signing secret (shown once),
// why the service stopped one and how to resume it, the delivery inspector with its resend tools
// (webhook-deliveries.tsx), and how a receiver verifies a delivery.
import { type Webhook, webhookStatus } from '@devdata/client';
import { useState } from 'preact/hooks';
import { ConfirmDialog } from '../components/dialog';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { Time } from '../components/format';
import { Page, Section } from '../components/page';
import { GuardedButton, RequiresScopes } from '../components/scope-gate';
import { CopyButton, SecretOnce } from '../components/secret';
import { useClient } from '../connection-context';
import { useAction, useLoad } from '../hooks';
import { useShownElement } from '../names';
import { DeliveryLog } from './webhook-deliveries';
import { CreateWebhook, EditWebhook } from './webhook-form';

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
          Without the client package: docs/webhook-verification.md in the service's repository has the same check in Node.js, Python, Go and the shell. Each
          delivery also carries the Standard Webhooks headers (<code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>), which
          the standardwebhooks and Svix libraries verify with the same secret.
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

function WebhookCard({ webhook, onChanged }: { webhook: Webhook; onChanged: () => void }) {
  const client = useClient();
  // A link to the webhook (an event's delivery) opens the page on it with its deliveries.
  const { ref, shown } = useShownElement<HTMLElement>(webhook.id);
  const [showLog, setShowLog] = useState(shown);
  const [confirm, setConfirm] = useState<'rotate' | 'delete' | undefined>(undefined);
  const [editing, setEditing] = useState(false);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  /** The test delivery just queued: the log opens on it. */
  const [tested, setTested] = useState<{ id: string; at: number } | undefined>(undefined);
  const action = useAction();
  const testing = useAction();
  const titleId = `webhook-${webhook.id}-title`;
  const setEnabled = async (enabled: boolean) => {
    if (await action.run(() => client.updateWebhook({ path: { id: webhook.id }, body: { enabled } }))) onChanged();
  };
  const sendTest = async () => {
    setTested(undefined);
    const sent = await testing.run(() => client.testWebhook({ path: { id: webhook.id } }));
    if (!sent) return;
    setTested({ id: sent.deliveryId, at: Date.now() });
    setShowLog(true);
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
        {webhook.heldUntil && (
          <>
            <dt>Held until</dt>
            <dd>
              <Time value={webhook.heldUntil} /> (the receiver asked for no requests before then)
            </dd>
          </>
        )}
        {webhook.failingSince && (
          <>
            <dt>Failing since</dt>
            <dd>
              <Time value={webhook.failingSince} /> (no delivery has succeeded since)
            </dd>
          </>
        )}
        <dt>Created</dt>
        <dd>
          <Time value={webhook.createdAt} />
        </dd>
      </dl>
      {webhook.disabledReason && <StoppedNotice reason={webhook.disabledReason} />}
      <div class="actions">
        {/* Not disabled while the dialog is open: the dialog gives focus back to it when it closes. */}
        <GuardedButton needs={['webhooks:manage', 'events:read']} type="button" class="secondary" onClick={() => setEditing(true)}>
          Edit<span class="visually-hidden"> {webhook.name}</span>
        </GuardedButton>
        {paused ? (
          <GuardedButton needs={['webhooks:manage', 'events:read']} type="button" class="secondary" busy={action.busy} onClick={() => setEnabled(true)}>
            Resume<span class="visually-hidden"> {webhook.name}</span>
          </GuardedButton>
        ) : (
          <button type="button" class="secondary" disabled={action.busy} onClick={() => setEnabled(false)}>
            Pause<span class="visually-hidden"> {webhook.name}</span>
          </button>
        )}
        <button type="button" class="secondary" disabled={testing.busy} aria-busy={testing.busy} onClick={sendTest}>
          Send test<span class="visually-hidden"> to {webhook.name}</span>
        </button>
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
      {action.busy && <Busy label="Working" />}
      <ErrorNotice error={action.error} title="The webhook was not changed" />
      <ErrorNotice error={testing.error} title="The test was not sent" />
      {tested && (
        <Notice kind="success">
          Test delivery <code>{tested.id}</code> queued{paused ? ' (sent even while the webhook is not active)' : ''}: it is marked among the deliveries below.
        </Notice>
      )}
      {secret && (
        <SecretOnce
          title="The new signing secret"
          secret={secret}
          explanation="Deliveries are signed with it from their next attempt on."
          onDone={() => setSecret(undefined)}
        />
      )}
      {editing && (
        <EditWebhook
          webhook={webhook}
          onClose={() => setEditing(false)}
          onSaved={() => {
            action.clear();
            onChanged();
          }}
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
      {showLog && <DeliveryLog webhook={webhook} focus={tested} />}
    </section>
  );
}

/** Why the service stopped the webhook, and the way back. */
function StoppedNotice({ reason }: { reason: NonNullable<Webhook['disabledReason']> }) {
  if (reason === 'credential_revoked' || reason === 'credential_expired') {
    return (
      <Notice kind="warning">
        <p>
          <strong>Stopped: the key or app connection that authorized it {reason === 'credential_revoked' ? 'was revoked' : 'expired'}.</strong> Nothing is sent
          on the authority of a credential that ended, and its queue was cleared.
        </p>
        <p>
          <strong>Resume</strong> makes the connected key the credential it delivers on; then <strong>Replay from a cursor</strong> (under its deliveries) sends
          the events it missed.
        </p>
      </Notice>
    );
  }
  return (
    <Notice kind="warning">
      {reason === 'receiver_gone' ? (
        <p>
          <strong>Stopped: the receiver answered 410 Gone.</strong> That answer says the endpoint no longer exists, so the service stopped delivering to it.
        </p>
      ) : (
        <p>
          <strong>Stopped: no delivery succeeded for too long.</strong> None of its deliveries succeeded for the operator's WEBHOOK_DISABLE_AFTER_HOURS (72
          hours unless changed), and at least 5 ended failed, so the service stopped trying.
        </p>
      )}
      <p>
        Its events still queue while it is stopped (up to 1,000 waiting; past that they are dropped and the gap is recorded), and are sent when it is resumed.
        To resume:
      </p>
      <ol>
        <li>
          Fix the receiver, or <strong>Edit</strong> its URL.
        </li>
        <li>
          <strong>Send test</strong>: a test is sent even while the webhook is stopped; its attempt shows the answer.
        </li>
        <li>
          <strong>Resume</strong>: what waited is sent, on the authority of the connected key.
        </li>
        <li>
          Under its deliveries, <strong>Recover failed deliveries</strong> since before the trouble began, and <strong>Replay from a cursor</strong> for any
          events the full queue dropped.
        </li>
      </ol>
    </Notice>
  );
}
