// Who is using the console: the developer session (the cookie the service set at signup) and the
// API key connected for this tab. The key lives in memory and in sessionStorage (this tab only,
// gone when it closes), never in localStorage, a URL or a log; logging out forgets it.
import { DevdataClient, DevdataError, type CredentialSummary, type components } from '@devdata/client';

export type DeveloperSession = components['schemas']['DeveloperSession'];

export interface ConnectedKey {
  client: DevdataClient;
  credential: CredentialSummary;
}

const KEY_STORAGE = 'devdata-console.api-key';

export const baseUrl = window.location.origin;

/** Calls that need no key: signup, the session, logout, capabilities. The cookie goes along (same origin). */
export const publicClient = new DevdataClient({ baseUrl });

/** The current session, or undefined when there is none (or it ended). */
export async function readSession(): Promise<DeveloperSession | undefined> {
  try {
    return await publicClient.getDeveloperSession();
  } catch (error) {
    if (error instanceof DevdataError && error.status === 401) return undefined;
    throw error;
  }
}

export function signUp(name: string, email: string): Promise<DeveloperSession> {
  return publicClient.signUp({ body: { name, email } });
}

export async function logOut(): Promise<void> {
  forgetKey();
  await publicClient.logOut();
}

export class KeyOfAnotherAccountError extends Error {
  override name = 'KeyOfAnotherAccountError';
}

/**
 * Checks a key with GET /api/v1/auth/me and keeps it for this tab. With a session, the key must
 * belong to the session's account: the console shows one account at a time.
 */
export async function connectKey(secret: string, session: DeveloperSession | undefined): Promise<ConnectedKey> {
  const client = new DevdataClient({ baseUrl, apiKey: secret.trim() });
  const credential = await client.getCurrentCredential();
  if (session && credential.account.id !== session.account.id) {
    throw new KeyOfAnotherAccountError(
      `This key belongs to the account ${credential.account.name} (${credential.account.id}), not to ${session.account.name} (${session.account.id}), the account you are signed in to. Connect a key of your own account.`,
    );
  }
  sessionStorage.setItem(KEY_STORAGE, secret.trim());
  return { client, credential };
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_STORAGE);
}

/** The key this tab connected before a reload, checked again; undefined when there is none or it stopped working. */
export async function restoreKey(session: DeveloperSession | undefined): Promise<ConnectedKey | undefined> {
  const stored = sessionStorage.getItem(KEY_STORAGE);
  if (!stored) return undefined;
  try {
    return await connectKey(stored, session);
  } catch (error) {
    if (error instanceof KeyOfAnotherAccountError || (error instanceof DevdataError && error.status === 401)) {
      forgetKey();
      return undefined;
    }
    throw error;
  }
}

/** The operator's command that issues a key for the account (docs/operating.md). */
export function keyRequestCommand(accountId: string): string {
  return `npx devdata keys issue --account ${accountId} --name "Console" --json`;
}
