// Sign up, the account, what to do next (ask the operator for the first key), connect a key and
// see what its scopes allow.
import { useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { FormActions } from '../components/forms';
import { ErrorNotice, Notice } from '../components/feedback';
import { FieldError, fieldProps } from '../components/field-error';
import { Time } from '../components/format';
import { Page, Section } from '../components/page';
import { CopyButton } from '../components/secret';
import { connectKey, forgetKey, keyRequestCommand, signUp } from '../connection';
import { useConnection } from '../connection-context';
import { useAction } from '../hooks';
import { ObjectLink, useNames } from '../names';
import { Link } from '../router';
import { ALL_SCOPES, SCOPES } from '../scopes';

export function AccountPage() {
  const { session, key } = useConnection();
  if (!session && !key) {
    return (
      <Page title="Welcome to devdata" intro="Store named values, follow every change as an event, push events to your receivers and connect apps.">
        <SignUpForm />
        <Section title="Signed up before?" id="connect-title">
          <p>A session lasts 12 hours and the service has no password sign-in. Connect an API key of your account to go on working without a session.</p>
          <ConnectKeyForm />
        </Section>
      </Page>
    );
  }
  return (
    <Page title="Account">
      {session && (
        <Section title="Your account" id="account-title">
          <dl class="facts">
            <dt>Name</dt>
            <dd>{session.account.name}</dd>
            <dt>E-mail</dt>
            <dd>{session.account.email ?? '—'}</dd>
            <dt>Account id</dt>
            <dd>
              <code>{session.account.id}</code>
            </dd>
            <dt>Signed up</dt>
            <dd>
              <Time value={session.account.createdAt} />
            </dd>
            <dt>Session ends</dt>
            <dd>
              <Time value={session.session.expiresAt} />
            </dd>
          </dl>
        </Section>
      )}
      {key ? <ConnectedKeySection /> : <FirstKeySection />}
    </Page>
  );
}

function SignUpForm() {
  const { setSession } = useConnection();
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await action.run(() => signUp(name, email));
    if (created) setSession(created);
  };
  return (
    <Section title="Sign up" id="signup-title">
      <form onSubmit={submit} class="form">
        <div class="field">
          <label for="signup-name">Name</label>
          <input
            id="signup-name"
            required
            maxLength={100}
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
            autoComplete="name"
            {...fieldProps(action.error, '/name', 'signup-name')}
          />
          <FieldError error={action.error} path="/name" id="signup-name" />
        </div>
        <div class="field">
          <label for="signup-email">E-mail</label>
          <input
            id="signup-email"
            type="email"
            required
            maxLength={254}
            value={email}
            onInput={(event) => setEmail(event.currentTarget.value)}
            autoComplete="email"
            {...fieldProps(action.error, '/email', 'signup-email')}
          />
          <FieldError error={action.error} path="/email" id="signup-email" />
        </div>
        <ErrorNotice error={action.error} title="Signing up failed" />
        <FormActions busy={action.busy} label="Sign up" busyLabel="Signing up…" />
      </form>
    </Section>
  );
}

function ConnectKeyForm() {
  const { session, setKey } = useConnection();
  const [secret, setSecret] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const connected = await action.run(() => connectKey(secret, session));
    if (connected) {
      setSecret('');
      setKey(connected);
    }
  };
  return (
    <form onSubmit={submit} class="form">
      <div class="field">
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          required
          autoComplete="off"
          spellcheck={false}
          placeholder="ddk_…"
          value={secret}
          onInput={(event) => setSecret(event.currentTarget.value)}
          aria-describedby="api-key-hint"
        />
        <p class="hint" id="api-key-hint">
          Kept for this browser tab only (session storage), never saved elsewhere; logging out forgets it.
        </p>
      </div>
      <ErrorNotice error={action.error} title="The key could not be connected" />
      <FormActions busy={action.busy} label="Connect key" busyLabel="Checking the key…" />
    </form>
  );
}

function FirstKeySection() {
  const { session } = useConnection();
  const command = session ? keyRequestCommand(session.account.id) : '';
  return (
    <Section title="Next: your first API key" id="first-key-title">
      <p>
        Signup gives no API key: the operator of this service issues the first one. Send them this command; it prints the key once, as{' '}
        <code>"key":"ddk_…"</code>.
      </p>
      <div class="command">
        <pre tabIndex={0}>
          <code>{command}</code>
        </pre>
        <CopyButton text={command} label="Copy the command" />
      </div>
      <p class="hint">
        <code>--scopes resources:read,events:read</code> narrows it; without it the key holds every scope. Once you have one, more keys can be made on the Keys
        page.
      </p>
      <ConnectKeyForm />
    </Section>
  );
}

/** The connected key by its name, linked to it on the keys page (its id while the key may not read the key list). */
function ConnectedKeyName({ id }: { id: string }) {
  const names = useNames([{ kind: 'api_key', id }]);
  return <ObjectLink names={names} kind="api_key" id={id} fallback="this key" />;
}

function ConnectedKeySection() {
  const { key, setKey } = useConnection();
  if (!key) return null;
  const held = new Set(key.credential.credential.scopes);
  const disconnect = () => {
    forgetKey();
    setKey(undefined);
  };
  return (
    <Section
      title="Connected key"
      id="connected-key-title"
      actions={
        <button type="button" class="secondary" onClick={disconnect}>
          Disconnect key
        </button>
      }
    >
      <dl class="facts">
        <dt>Key</dt>
        <dd>
          <ConnectedKeyName id={key.credential.credential.id} /> (<code>{key.credential.credential.id}</code>)
        </dd>
        <dt>Account</dt>
        <dd>
          {key.credential.account.name} (<code>{key.credential.account.id}</code>)
        </dd>
        <dt>Expires</dt>
        <dd>
          <Time value={key.credential.credential.expiresAt} />
        </dd>
      </dl>
      <DataList
        caption="What the connected key's scopes allow"
        rows={ALL_SCOPES}
        rowKey={(scope) => scope}
        rowAttributes={(scope) => ({ 'data-scope': scope })}
        empty="No scopes."
        columns={[
          { label: 'Scope', role: 'name', cell: (scope) => <code>{scope}</code> },
          { label: 'Allows', cell: (scope) => SCOPES[scope] },
          {
            label: 'This key',
            role: 'value',
            cell: (scope) => (held.has(scope) ? <span class="pill pill-ok">granted</span> : <span class="pill pill-off">not granted</span>),
          },
        ]}
      />
      {held.size < ALL_SCOPES.length && (
        <Notice kind="warning">
          <p>Actions that need a scope this key lacks are disabled, with the reason beside them.</p>
        </Notice>
      )}
      <p>
        Next: <Link to="resources">create a resource</Link>, <Link to="events">watch the events</Link> or <Link to="webhooks">send them to a webhook</Link>.
      </p>
    </Section>
  );
}
