// Apps registered for OAuth 2.0: public and confidential, redirect URIs, the client secret shown
// once, rotation, deletion.
import type { App } from '@devdata/client';
import { useState } from 'preact/hooks';
import { ConfirmDialog } from '../components/dialog';
import { FormActions } from '../components/forms';
import { Busy, ErrorNotice } from '../components/feedback';
import { FieldError, fieldProps } from '../components/field-error';
import { Time } from '../components/format';
import { Page, Section } from '../components/page';

import { ScopePicker } from '../components/scope-picker';
import { SecretOnce } from '../components/secret';
import { baseUrl } from '../connection';
import { useClient } from '../connection-context';
import { parseList } from '../errors';
import { useAction, useLoad } from '../hooks';
import { useShownElement } from '../names';
import { APP_GRANTABLE_SCOPES, type Scope } from '../scopes';

export function AppsPage() {
  return (
    <Page
      title="Apps"
      intro="Applications that act for users through OAuth 2.0 (authorization code with PKCE, refresh tokens, client credentials)."
      needs={['apps:manage']}
      what="Managing apps"
    >
      <AppsView />
    </Page>
  );
}

function AppsView() {
  const client = useClient();
  const apps = useLoad((signal) => client.listApps(undefined, { signal }), [client]);
  const [creating, setCreating] = useState(false);
  return (
    <>
      <div class="toolbar">
        <button type="button" onClick={() => setCreating(true)} disabled={creating}>
          Register an app
        </button>
      </div>
      {creating && <RegisterApp onDone={() => setCreating(false)} onCreated={apps.reload} />}
      {apps.loading && <Busy label="Loading apps" />}
      <ErrorNotice error={apps.error} title="The apps could not be read" />
      {apps.data?.data.length === 0 && <p class="empty">No apps registered yet.</p>}
      {apps.data?.data.map((app) => (
        <AppCard key={app.id} app={app} onChanged={apps.reload} />
      ))}
    </>
  );
}

function RegisterApp({ onDone, onCreated }: { onDone: () => void; onCreated: () => void }) {
  const client = useClient();
  const [name, setName] = useState('');
  const [type, setType] = useState<App['type']>('confidential');
  const [redirectUris, setRedirectUris] = useState('');
  const [scopes, setScopes] = useState<Set<Scope>>(new Set());
  const [created, setCreated] = useState<{ clientId: string; clientSecret?: string } | undefined>(undefined);
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const registered = await action.run(() => client.createApp({ body: { name, type, redirectUris: parseList(redirectUris), scopes: [...scopes] } }));
    if (registered) {
      setCreated({ clientId: registered.clientId, clientSecret: registered.clientSecret });
      onCreated();
    }
  };
  if (created) {
    const explanation = `Client id ${created.clientId}. The app authenticates at ${baseUrl}/oauth/token with HTTP Basic (client id and this secret).`;
    if (created.clientSecret) return <SecretOnce title="The app's client secret" secret={created.clientSecret} explanation={explanation} onDone={onDone} />;
    return (
      <Section title="App registered" id="registered-title">
        <p>
          Public app registered with client id <code>{created.clientId}</code>. It has no secret: it proves itself with PKCE.
        </p>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </Section>
    );
  }
  return (
    <Section title="Register an app" id="register-app-title">
      <form class="form" onSubmit={submit}>
        <div class="field">
          <label for="app-name">Name</label>
          <input
            id="app-name"
            required
            maxLength={100}
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
            {...fieldProps(action.error, '/name', 'app-name', 'app-name-hint')}
          />
          <span class="hint" id="app-name-hint">
            Users see it on the approval page.
          </span>
          <FieldError error={action.error} path="/name" id="app-name" />
        </div>
        <fieldset class="field">
          <legend>Type</legend>
          <div class="inline-choices">
            <label>
              <input type="radio" name="app-type" checked={type === 'confidential'} onChange={() => setType('confidential')} /> Confidential (a server that
              keeps a secret)
            </label>
            <label>
              <input type="radio" name="app-type" checked={type === 'public'} onChange={() => setType('public')} /> Public (a browser or mobile app, no secret)
            </label>
          </div>
        </fieldset>
        <div class="field">
          <label for="app-redirects">Redirect URIs</label>
          <textarea
            id="app-redirects"
            rows={3}
            required
            value={redirectUris}
            placeholder="https://app.example.com/callback"
            onInput={(event) => setRedirectUris(event.currentTarget.value)}
            {...fieldProps(action.error, '/redirectUris', 'app-redirects', 'app-redirects-hint')}
          />
          <span class="hint" id="app-redirects-hint">
            One per line (at most 10), matched exactly: https, or http to a loopback host.
          </span>
          <FieldError error={action.error} path="/redirectUris" id="app-redirects" />
        </div>
        <ScopePicker
          legend="Scopes the app may ask for"
          offered={APP_GRANTABLE_SCOPES}
          chosen={scopes}
          onChange={setScopes}
          idPrefix="app-scope"
          error={action.error}
        />
        <ErrorNotice error={action.error} title="The app was not registered" />
        <FormActions busy={action.busy} label="Register app" busyLabel="Registering…" onCancel={onDone} />
      </form>
    </Section>
  );
}

function AppCard({ app, onChanged }: { app: App; onChanged: () => void }) {
  const client = useClient();
  const [confirm, setConfirm] = useState<'rotate' | 'delete' | undefined>(undefined);
  const [editing, setEditing] = useState(false);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const action = useAction();
  const { ref, shown } = useShownElement<HTMLElement>(app.id);
  const titleId = `app-${app.id}-title`;
  const rotate = async () => {
    const rotated = await action.run(() => client.rotateAppSecret({ path: { id: app.id } }));
    setConfirm(undefined);
    if (rotated?.clientSecret) setSecret(rotated.clientSecret);
  };
  const remove = async () => {
    const removed = await action.run(() => client.deleteApp({ path: { id: app.id } }).then(() => true));
    setConfirm(undefined);
    if (removed) onChanged();
  };
  return (
    <section class={shown ? 'card shown' : 'card'} aria-labelledby={titleId} data-app-id={app.id} ref={ref} tabIndex={-1}>
      <div class="card-head">
        <h2 id={titleId}>{app.name}</h2>
        <span class="pill">{app.type}</span>
      </div>
      <dl class="facts">
        <dt>Client id</dt>
        <dd>
          <code>{app.clientId}</code>
        </dd>
        <dt>Redirect URIs</dt>
        <dd>
          <ul class="plain">
            {app.redirectUris.map((uri) => (
              <li key={uri} class="break">
                <code>{uri}</code>
              </li>
            ))}
          </ul>
        </dd>
        <dt>Scopes</dt>
        <dd>
          {app.scopes.length === 0 ? (
            <span class="muted">none</span>
          ) : (
            app.scopes.map((scope) => (
              <span key={scope} class="tag">
                {scope}
              </span>
            ))
          )}
        </dd>
        <dt>Registered</dt>
        <dd>
          <Time value={app.createdAt} />
        </dd>
      </dl>
      {editing && (
        <EditApp
          app={app}
          onDone={() => setEditing(false)}
          onSaved={() => {
            setEditing(false);
            onChanged();
          }}
        />
      )}
      <div class="actions">
        {!editing && (
          <button type="button" class="secondary" onClick={() => setEditing(true)}>
            Edit<span class="visually-hidden"> {app.name}</span>
          </button>
        )}
        {app.type === 'confidential' && (
          <button type="button" class="secondary" onClick={() => setConfirm('rotate')}>
            Rotate secret<span class="visually-hidden"> of {app.name}</span>
          </button>
        )}
        <button type="button" class="danger-outline" onClick={() => setConfirm('delete')}>
          Delete<span class="visually-hidden"> {app.name}</span>
        </button>
      </div>
      {action.busy && <Busy label="Working" />}
      <ErrorNotice error={action.error} title="The app was not changed" />
      {secret && <SecretOnce title="The new client secret" secret={secret} explanation="The old secret no longer works." onDone={() => setSecret(undefined)} />}
      {confirm === 'rotate' && (
        <ConfirmDialog
          title={`Rotate the secret of ${app.name}?`}
          confirmLabel="Rotate secret"
          busy={action.busy}
          onConfirm={rotate}
          onCancel={() => setConfirm(undefined)}
        >
          <p>The current client secret stops working at once: the app needs the new one to get tokens.</p>
        </ConfirmDialog>
      )}
      {confirm === 'delete' && (
        <ConfirmDialog title={`Delete ${app.name}?`} confirmLabel="Delete app" busy={action.busy} onConfirm={remove} onCancel={() => setConfirm(undefined)}>
          <p>Its connections and tokens end at once, and webhooks they authorized stop.</p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** An app's name, redirect URIs and scopes; only what changed is sent (a change of scopes makes the connected key the one its client credentials rest on). */
function EditApp({ app, onDone, onSaved }: { app: App; onDone: () => void; onSaved: () => void }) {
  const client = useClient();
  const [name, setName] = useState(app.name);
  const [redirectUris, setRedirectUris] = useState(app.redirectUris.join('\n'));
  const [scopes, setScopes] = useState<Set<Scope>>(new Set(app.scopes as Scope[]));
  const action = useAction();
  const idPrefix = `app-${app.id}`;
  const submit = async (event: Event) => {
    event.preventDefault();
    const uris = parseList(redirectUris);
    const chosen = APP_GRANTABLE_SCOPES.filter((scope) => scopes.has(scope));
    const changes = {
      ...(name.trim() !== app.name ? { name } : {}),
      ...(uris.join('\n') !== app.redirectUris.join('\n') ? { redirectUris: uris } : {}),
      ...(chosen.join(' ') !== APP_GRANTABLE_SCOPES.filter((scope) => app.scopes.includes(scope)).join(' ') ? { scopes: chosen } : {}),
    };
    // Nothing changed: nothing to send (a PATCH without fields is refused).
    if (Object.keys(changes).length === 0) return onDone();
    if (await action.run(() => client.updateApp({ path: { id: app.id }, body: changes }))) onSaved();
  };
  return (
    <form class="form" onSubmit={submit} aria-label={`Edit ${app.name}`}>
      <div class="field">
        <label for={`${idPrefix}-name`}>Name</label>
        <input
          id={`${idPrefix}-name`}
          required
          maxLength={100}
          value={name}
          onInput={(event) => setName(event.currentTarget.value)}
          {...fieldProps(action.error, '/name', `${idPrefix}-name`)}
        />
        <FieldError error={action.error} path="/name" id={`${idPrefix}-name`} />
      </div>
      <div class="field">
        <label for={`${idPrefix}-redirects`}>Redirect URIs</label>
        <textarea
          id={`${idPrefix}-redirects`}
          rows={3}
          required
          value={redirectUris}
          onInput={(event) => setRedirectUris(event.currentTarget.value)}
          {...fieldProps(action.error, '/redirectUris', `${idPrefix}-redirects`)}
        />
        <FieldError error={action.error} path="/redirectUris" id={`${idPrefix}-redirects`} />
      </div>
      <ScopePicker
        legend="Scopes the app may ask for"
        offered={APP_GRANTABLE_SCOPES}
        chosen={scopes}
        onChange={setScopes}
        idPrefix={`${idPrefix}-scope`}
        error={action.error}
      />
      <ErrorNotice error={action.error} title="The app was not changed" />
      <FormActions busy={action.busy} label="Save changes" busyLabel="Saving…" onCancel={onDone} />
    </form>
  );
}
