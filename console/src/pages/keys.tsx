// API keys: the list with scopes, expiry and last use; create one (scopes limited to the connected
// key's, the secret shown once); revoke, with a warning when it is the key in use.
import type { ApiKey } from '@devdata/client';
import { useEffect, useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { ConfirmDialog } from '../components/dialog';
import { FormActions } from '../components/forms';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { FieldError, fieldProps } from '../components/field-error';
import { Time } from '../components/format';
import { Page, Section } from '../components/page';
import { ScopePicker } from '../components/scope-picker';
import { SecretOnce } from '../components/secret';
import { forgetKey } from '../connection';
import { useClient, useConnection } from '../connection-context';
import { useAction, useLoad } from '../hooks';
import { useShown } from '../router';
import { ALL_SCOPES, type Scope } from '../scopes';

export function KeysPage() {
  return (
    <Page
      title="API keys"
      intro="Keys of this account. A key is shown once, when it is created; only its hash is stored."
      needs={['keys:manage']}
      what="Managing keys"
    >
      <KeysView />
    </Page>
  );
}

function KeysView() {
  const client = useClient();
  const { key: connected } = useConnection();
  // Revoked and expired keys too (the latest to end), so a key that stops working is still there to read.
  const keys = useLoad((signal) => client.listApiKeys({ query: { status: 'all' } }, { signal }), [client]);
  const [creating, setCreating] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | undefined>(undefined);
  const [renaming, setRenaming] = useState<ApiKey | undefined>(undefined);
  const connectedId = connected?.credential.credential.id;
  // A link to a key (from the audit log) opens the page on it.
  const shown = useShown();
  useEffect(() => {
    if (shown && keys.data) document.querySelector(`[data-key-id="${CSS.escape(shown)}"]`)?.scrollIntoView({ block: 'center' });
  }, [shown, keys.data]);
  // Active keys first, each group in creation order.
  const listed = keys.data ? [...keys.data.data].sort((a, b) => Number(a.status !== 'active') - Number(b.status !== 'active')) : [];
  return (
    <>
      <div class="toolbar">
        <button type="button" onClick={() => setCreating(true)} disabled={creating}>
          New key
        </button>
      </div>
      {creating && <CreateKey onDone={() => setCreating(false)} onCreated={keys.reload} />}
      {renaming && (
        <RenameKey
          key={renaming.id}
          apiKey={renaming}
          onDone={() => setRenaming(undefined)}
          onRenamed={() => {
            setRenaming(undefined);
            keys.reload();
          }}
        />
      )}
      {keys.loading && !keys.data && <Busy label="Loading keys" />}
      <ErrorNotice error={keys.error} title="The keys could not be read" />
      {keys.data && (
        <DataList
          caption="Keys: the active ones, then those revoked or expired"
          rows={listed}
          rowKey={(key) => key.id}
          rowAttributes={(key) => ({ 'data-key-id': key.id, ...(key.id === shown ? { class: 'shown' } : key.status === 'active' ? {} : { class: 'ended' }) })}
          empty="No keys."
          columns={[
            {
              label: 'Name',
              role: 'name',
              cell: (key) => (
                <>
                  {key.name}
                  {key.id === connectedId && <span class="pill pill-ok">this console</span>}
                  <div class="muted small">
                    <code>{key.id}</code>
                  </div>
                </>
              ),
            },
            {
              label: 'Status',
              role: 'value',
              cell: (key) => (
                <>
                  <span class={`pill key-status ${STATUS_PILL[key.status]}`}>{key.status}</span>
                  {key.revokedAt && (
                    <div class="muted small">
                      <Time value={key.revokedAt} />
                    </div>
                  )}
                </>
              ),
            },
            {
              label: 'Scopes',
              cell: (key) =>
                key.scopes.length === 0 ? (
                  <span class="muted">none</span>
                ) : (
                  key.scopes.map((scope) => (
                    <span key={scope} class="tag">
                      {scope}
                    </span>
                  ))
                ),
            },
            { label: 'Created', cell: (key) => <Time value={key.createdAt} /> },
            { label: 'Expires', cell: (key) => <Time value={key.expiresAt} /> },
            { label: 'Last used', cell: (key) => <Time value={key.lastUsedAt} empty="never" /> },
            {
              label: 'Actions',
              role: 'actions',
              cell: (key) =>
                key.status === 'active' && (
                  <>
                    <button type="button" class="secondary" onClick={() => setRenaming(key)}>
                      Rename<span class="visually-hidden"> {key.name}</span>
                    </button>
                    <button type="button" class="danger-outline" onClick={() => setRevoking(key)}>
                      Revoke<span class="visually-hidden"> {key.name}</span>
                    </button>
                  </>
                ),
            },
          ]}
        />
      )}
      {revoking && (
        <RevokeKey
          apiKey={revoking}
          inUse={revoking.id === connectedId}
          onDone={(revoked) => {
            setRevoking(undefined);
            if (revoked) keys.reload();
          }}
        />
      )}
    </>
  );
}

const STATUS_PILL: Record<ApiKey['status'], string> = { active: 'pill-ok', revoked: 'pill-bad', expired: 'pill-off' };

/** A new name for a key; what it may do stays what it was issued with. */
function RenameKey({ apiKey, onDone, onRenamed }: { apiKey: ApiKey; onDone: () => void; onRenamed: () => void }) {
  const client = useClient();
  const [name, setName] = useState(apiKey.name);
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    if (name.trim() === apiKey.name) return onDone();
    if (await action.run(() => client.renameApiKey({ path: { id: apiKey.id }, body: { name } }))) onRenamed();
  };
  return (
    <Section title={`Rename ${apiKey.name}`} id="rename-key-title">
      <form class="form" onSubmit={submit}>
        <div class="field">
          <label for="rename-key-name">New name</label>
          <input
            id="rename-key-name"
            required
            maxLength={100}
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
            {...fieldProps(action.error, '/name', 'rename-key-name')}
          />
          <FieldError error={action.error} path="/name" id="rename-key-name" />
        </div>
        <ErrorNotice error={action.error} title="The key was not renamed" />
        <FormActions busy={action.busy} label="Save name" busyLabel="Saving…" onCancel={onDone} needs={['keys:manage']} />
      </form>
    </Section>
  );
}

const NO_SCOPE_PROBLEM = 'Choose at least one scope: a key without scopes can only read whose key it is (GET /api/v1/auth/me).';

function CreateKey({ onDone, onCreated }: { onDone: () => void; onCreated: () => void }) {
  const client = useClient();
  const { key } = useConnection();
  const [name, setName] = useState('');
  const [days, setDays] = useState(90);
  const [scopes, setScopes] = useState<Set<Scope>>(new Set());
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const [noScope, setNoScope] = useState(false);
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    // A key without scopes can only say whose it is (GET /api/v1/auth/me): almost always a slip.
    setNoScope(scopes.size === 0);
    if (scopes.size === 0) return;
    const created = await action.run(() => client.createApiKey({ body: { name, scopes: [...scopes], expiresInDays: days } }));
    if (created) {
      setSecret(created.key);
      onCreated();
    }
  };
  if (secret) {
    return <SecretOnce title="Your new API key" secret={secret} explanation="Use it as Authorization: Bearer <key>." onDone={onDone} />;
  }
  const keyExpiry = key?.credential.credential.expiresAt;
  return (
    <Section title="New key" id="create-key-title">
      <form class="form" onSubmit={submit}>
        <div class="field">
          <label for="key-name">Name</label>
          <input
            id="key-name"
            required
            maxLength={100}
            value={name}
            placeholder="ci"
            onInput={(event) => setName(event.currentTarget.value)}
            {...fieldProps(action.error, '/name', 'key-name')}
          />
          <FieldError error={action.error} path="/name" id="key-name" />
        </div>
        <div class="field">
          <label for="key-days">Expires in (days)</label>
          <input
            id="key-days"
            type="number"
            min={1}
            max={365}
            required
            value={days}
            onInput={(event) => setDays(event.currentTarget.valueAsNumber)}
            {...fieldProps(action.error, '/expiresInDays', 'key-days', 'key-days-hint')}
          />
          <span class="hint" id="key-days-hint">
            1-365; never later than the connected key itself{keyExpiry ? ` (${new Date(keyExpiry).toLocaleDateString()})` : ''}.
          </span>
          <FieldError error={action.error} path="/expiresInDays" id="key-days" />
        </div>
        <ScopePicker
          legend="Scopes"
          offered={ALL_SCOPES}
          chosen={scopes}
          onChange={(chosen) => {
            setScopes(chosen);
            if (chosen.size > 0) setNoScope(false);
          }}
          idPrefix="key-scope"
          problem={noScope ? NO_SCOPE_PROBLEM : undefined}
          error={action.error}
        />
        <ErrorNotice error={action.error} title="The key was not created" />
        <FormActions busy={action.busy} label="Create key" busyLabel="Creating…" onCancel={onDone} needs={['keys:manage']} />
      </form>
    </Section>
  );
}

function RevokeKey({ apiKey, inUse, onDone }: { apiKey: ApiKey; inUse: boolean; onDone: (revoked: boolean) => void }) {
  const client = useClient();
  const { setKey } = useConnection();
  const action = useAction();
  const confirm = async () => {
    const revoked = await action.run(() => client.revokeApiKey({ path: { id: apiKey.id } }).then(() => true));
    if (!revoked) return;
    if (inUse) {
      // The console's own key stops working with the next request: forget it now.
      forgetKey();
      setKey(undefined);
      return;
    }
    onDone(true);
  };
  return (
    <ConfirmDialog title={`Revoke ${apiKey.name}?`} confirmLabel="Revoke key" busy={action.busy} onConfirm={confirm} onCancel={() => onDone(false)}>
      <p>
        Every request with <code>{apiKey.id}</code> is refused from now on, and webhooks it authorized stop delivering. This cannot be undone.
      </p>
      {inUse && (
        <Notice kind="warning">
          <p>
            <strong>This is the key this console is using.</strong> Revoking it disconnects the console; you will need another key to go on.
          </p>
        </Notice>
      )}
      <ErrorNotice error={action.error} title="The key was not revoked" />
    </ConfirmDialog>
  );
}
