// DevdataOAuth against the real authorization server: the code flow with PKCE (the approval page
// driven as a browser submits it), the callback's state and iss checked, refresh, revocation,
// client credentials, and the token used by DevdataClient.
import { DevdataClient, DevdataError, DevdataOAuth, type PendingAuthorization } from '@devdata/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp, type TestAccount } from '../support/app.js';
import { form, hiddenFields, REDIRECT_URI, registerApp, type RegisteredApp } from '../oauth/support.js';
import { thrown } from './support.js';

describe('DevdataOAuth', () => {
  const app = useTestApp();
  let base: string;
  let user: TestAccount;
  let publicApp: RegisteredApp;
  let confidentialApp: RegisteredApp;

  beforeAll(async () => {
    base = await app().listen();
    user = await app().account();
    publicApp = await registerApp(app(), user.key, { scopes: ['resources:read', 'events:read'] });
    confidentialApp = await registerApp(app(), user.key, { name: 'Reporting job', type: 'confidential', scopes: ['resources:read', 'usage:read'] });
  });

  /** The user's browser: opens the approval page, types the API key, presses Connect (or Cancel). */
  async function approve(pending: PendingAuthorization, action: 'approve' | 'cancel' = 'approve'): Promise<URL> {
    const page = await fetch(pending.url, { redirect: 'manual' });
    expect(page.status).toBe(200);
    const choice = await fetch(new URL('/oauth/authorize', base), {
      method: 'POST',
      redirect: 'manual',
      ...form({ ...hiddenFields(await page.text()), api_key: user.key, action }),
    });
    expect(choice.status).toBe(303);
    return new URL(choice.headers.get('location') as string);
  }

  const failure = (call: Promise<unknown>) => thrown(call, DevdataError);

  it('completes the authorization-code flow with PKCE, and the token works with DevdataClient', async () => {
    const oauth = await DevdataOAuth.discover({ issuer: base, clientId: publicApp.clientId, redirectUri: REDIRECT_URI });
    expect(oauth.server.issuer).toBe(base);
    const pending = await oauth.authorizationUrl({ scopes: ['resources:read'] });
    expect(Object.fromEntries(pending.url.searchParams)).toEqual({
      response_type: 'code',
      client_id: publicApp.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'resources:read',
      state: pending.state,
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      code_challenge_method: 'S256',
    });
    const callback = await approve(pending);
    expect(callback.searchParams.get('iss')).toBe(base);
    const tokens = await oauth.exchangeCode(callback, pending);
    expect(tokens).toMatchObject({
      accessToken: expect.stringMatching(/^dda_/),
      refreshToken: expect.stringMatching(/^ddr_/),
      tokenType: 'bearer',
      scopes: ['resources:read'],
    });
    expect(tokens.expiresIn).toBeLessThanOrEqual(900);
    expect(tokens.expiresAt?.getTime()).toBeGreaterThan(Date.now());

    const asApp = new DevdataClient({ baseUrl: base, apiKey: () => tokens.accessToken });
    const me = await asApp.getCurrentCredential();
    expect(me).toMatchObject({
      account: { id: user.accountId },
      credential: { kind: 'oauth_access_token', clientId: publicApp.clientId, scopes: ['resources:read'] },
    });
    expect(await failure(asApp.listEvents())).toMatchObject({ status: 403, code: 'insufficient_scope' });

    // Refresh rotates: the new pair works, the old refresh token is spent.
    const refreshed = await oauth.refresh(tokens.refreshToken as string);
    expect(refreshed.refreshToken).not.toBe(tokens.refreshToken);
    expect((await new DevdataClient({ baseUrl: base, apiKey: refreshed.accessToken }).getCurrentCredential()).credential.clientId).toBe(publicApp.clientId);

    // Revoking the refresh token ends the connection and its access tokens.
    await oauth.revoke(refreshed.refreshToken as string);
    expect(await failure(new DevdataClient({ baseUrl: base, apiKey: refreshed.accessToken }).getCurrentCredential())).toMatchObject({ status: 401 });
    expect(await failure(oauth.refresh(refreshed.refreshToken as string))).toMatchObject({ status: 400, code: 'invalid_grant' });
  });

  it('refuses a callback whose state or iss is not the expected one, and reports a cancelled approval', async () => {
    const oauth = await DevdataOAuth.discover({ issuer: base, clientId: publicApp.clientId, redirectUri: REDIRECT_URI });
    const pending = await oauth.authorizationUrl();
    const callback = await approve(pending);

    const forgedIssuer = new URL(callback);
    forgedIssuer.searchParams.set('iss', 'https://attacker.example');
    expect(await failure(oauth.exchangeCode(forgedIssuer, pending))).toMatchObject({ code: 'invalid_oauth_response', message: expect.stringContaining('iss') });
    expect(await failure(oauth.exchangeCode(callback, { ...pending, state: 'another-state-value' }))).toMatchObject({ code: 'invalid_oauth_response' });
    // The code itself is still unspent: the genuine callback goes through.
    expect((await oauth.exchangeCode(callback, pending)).scopes).toEqual(['resources:read', 'events:read']);

    const cancelled = await oauth.authorizationUrl();
    const refused = await failure(oauth.exchangeCode(await approve(cancelled, 'cancel'), cancelled));
    expect(refused).toMatchObject({ code: 'access_denied' });
  });

  it('gets client-credentials tokens for a confidential app, and exchanges codes with HTTP Basic', async () => {
    const oauth = await DevdataOAuth.discover({
      issuer: base,
      clientId: confidentialApp.clientId,
      clientSecret: confidentialApp.clientSecret as string,
      redirectUri: REDIRECT_URI,
    });
    const machine = await oauth.clientCredentials(['usage:read']);
    expect(machine).toMatchObject({ scopes: ['usage:read'], refreshToken: undefined });
    expect((await new DevdataClient({ baseUrl: base, apiKey: machine.accessToken }).getUsage({ query: { days: 1 } })).data).toHaveLength(1);

    const pending = await oauth.authorizationUrl({ scopes: ['resources:read'] });
    const tokens = await oauth.exchangeCode(await approve(pending), pending);
    expect(tokens.refreshToken).toMatch(/^ddr_/);

    const wrongSecret = await DevdataOAuth.discover({
      issuer: base,
      clientId: confidentialApp.clientId,
      clientSecret: 'ddcs_wrong',
      redirectUri: REDIRECT_URI,
    });
    expect(await failure(wrongSecret.clientCredentials())).toMatchObject({ status: 401, code: 'invalid_client' });
  });
});
