// The console's frame: who is signed in, the navigation, and the page of the current path.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ErrorNotice, Busy } from './components/feedback';
import { logOut as endSession, readSession, restoreKey, type ConnectedKey, type DeveloperSession } from './connection';
import { ConnectionContext, useConnection, type ConnectionState } from './connection-context';
import { useAction } from './hooks';
import { NarrowProvider } from './narrow';
import { Link, PAGES, navigate, sectionOf, titleOf, useCurrentPage, type PagePath } from './router';
import { AccountPage } from './pages/account';
import { ResourcesPage } from './pages/resources';
import { ResourceHistoryPage } from './pages/resource-history';
import { EventsPage } from './pages/events';
import { KeysPage } from './pages/keys';
import { WebhooksPage } from './pages/webhooks';
import { AppsPage } from './pages/apps';
import { SchedulesPage } from './pages/schedules';
import { UsagePage } from './pages/usage';
import { AuditPage } from './pages/audit';

const PAGE_COMPONENTS: Record<PagePath, () => preact.JSX.Element> = {
  '': AccountPage,
  resources: ResourcesPage,
  'resources/history': ResourceHistoryPage,
  events: EventsPage,
  keys: KeysPage,
  webhooks: WebhooksPage,
  apps: AppsPage,
  schedules: SchedulesPage,
  usage: UsagePage,
  audit: AuditPage,
};

export function App() {
  const [starting, setStarting] = useState(true);
  const [startError, setStartError] = useState<unknown>(undefined);
  const [session, setSession] = useState<DeveloperSession | undefined>(undefined);
  const [key, setKey] = useState<ConnectedKey | undefined>(undefined);
  const page = useCurrentPage();
  const content = useRef<HTMLElement>(null);

  useEffect(() => {
    (async () => {
      const current = await readSession();
      setSession(current);
      setKey(await restoreKey(current));
    })().then(
      () => setStarting(false),
      (error: unknown) => {
        setStartError(error);
        setStarting(false);
      },
    );
  }, []);

  const logOut = useCallback(async () => {
    await endSession();
    setKey(undefined);
    setSession(undefined);
    navigate('');
  }, []);

  const state: ConnectionState = { session, key, setSession, setKey, logOut };
  const Current = key || page === '' ? PAGE_COMPONENTS[page] : AccountPage;

  return (
    <ConnectionContext.Provider value={state}>
      <NarrowProvider measured={content}>
        <a class="skip-link" href="#content">
          Skip to content
        </a>
        <header class="topbar">
          <Link to="" class="brand">
            devdata <span>console</span>
          </Link>
          <AccountBadge />
        </header>
        <div class="layout">
          <nav aria-label="Console pages" class="sidebar">
            <ul>
              {PAGES.map((entry) => (
                <li key={entry.path}>
                  <Link to={entry.path} current={entry.path === page ? 'page' : entry.path === sectionOf(page) ? 'section' : undefined}>
                    {entry.title}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
          <main id="content" class="content" ref={content}>
            {starting ? (
              <Busy label="Reading your session" />
            ) : startError ? (
              <ErrorNotice error={startError} title="The console could not start" />
            ) : (
              <>
                {!key && page !== '' && <p class="notice notice-info">Connect an API key on this page to open {titleOf(page)}.</p>}
                <Current key={page} />
              </>
            )}
          </main>
        </div>
      </NarrowProvider>
    </ConnectionContext.Provider>
  );
}

function AccountBadge() {
  const state = useConnection();
  const action = useAction();
  if (!state.session && !state.key) return null;
  const name = state.session?.account.name ?? state.key?.credential.account.name;
  return (
    <div class="account-badge">
      <span class="account-name">{name}</span>
      <span class={state.key ? 'pill pill-ok' : 'pill'}>{state.key ? 'key connected' : 'no key'}</span>
      <button type="button" class="secondary" onClick={() => action.run(state.logOut)} disabled={action.busy} aria-busy={action.busy}>
        {action.busy ? 'Logging out…' : state.session ? 'Log out' : 'Disconnect'}
      </button>
      <ErrorNotice error={action.error} title="Logging out failed" />
    </div>
  );
}
