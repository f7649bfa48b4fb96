// The OAuth 2.0 flows end to end over a real socket, driven by oauth4webapi (which itself checks
// the metadata's issuer, PKCE, state and iss): authorization code for public and confidential
// apps, refresh-token rotation and reuse detection, client credentials, revocation (RFC 7009),
// and the connection's lifetime: 30 days, the approving key, and webhooks that stop with it.
import * as oauth from 'oauth4webapi';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, useTestApp, type TestAccount } from '../support/app.js';
import { until } from '../support/wait.js';
import { apiStatus, basic, connect, discover, expectOAuthError, insecure, refresh, registerApp, revoke, tokenRequest } from './support.js';

const ACCESS_TTL_SECONDS = 600;

const DAY_MS = 86_400_000;

describe('OAuth 2.0 flows with oauth4webapi', () => {
  const clock = new ManualClock();
  // The retention task (which also records connections that ran out) runs every 200 ms here.
  const app = useTestApp({
    clock,
    env: { ACCESS_TOKEN_TTL_SECONDS: String(ACCESS_TTL_SECONDS), WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', RETENTION_INTERVAL_MS: '200' },
  });
  let base: string;
  let as: oauth.AuthorizationServer;

  beforeAll(async () => {
    base = await app().listen();
    as = await discover(base);
  });

  async function auditOf(caller: TestAccount, type: string): Promise<any[]> {
    const response = await app().request({ url: `/api/v1/audit?type=${encodeURIComponent(type)}`, key: caller.key });
    expect(response.status).toBe(200);
    return response.json.data;
  }

  /** A webhook created with this (OAuth) credential; the receiver is never called in these tests. */
  async function webhookWith(token: string): Promise<string> {
    const response = await app().request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key: token,
      body: { name: 'connected app hook', url: 'http://127.0.0.1:9/hook', events: ['custom.*'] },
    });
    expect(response.status).toBe(201);
    return response.json.id;
  }

  async function webhook(owner: TestAccount, id: string): Promise<{ enabled: boolean; disabledReason: string | null }> {
    const response = await app().request({ url: `/api/v1/webhooks/${id}`, key: owner.key });
    expect(response.status).toBe(200);
    return response.json;
  }

  const hookScopes = ['resources:read', 'events:read', 'webhooks:manage'];

  describe('metadata (RFC 8414)', () => {
    it('is what oauth4webapi discovers, with the decided fields, public and open to any origin', async () => {
      expect(as).toEqual({
        issuer: base,
        authorization_endpoint: `${base}/oauth/authorize`,
        token_endpoint: `${base}/oauth/token`,
        revocation_endpoint: `${base}/oauth/revoke`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none', 'client_secret_basic'],
        revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic'],
        scopes_supported: [
          'resources:read',
          'resources:write',
          'events:read',
          'events:write',
          'integrations:read',
          'webhooks:manage',
          'schedules:manage',
          'usage:read',
        ],
        authorization_response_iss_parameter_supported: true,
      });
      const response = await fetch(`${base}/.well-known/oauth-authorization-server`, { headers: { origin: 'https://spa.example.org' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.headers.get('access-control-allow-credentials')).toBeNull();
      expect(response.headers.get('ratelimit-limit')).toMatch(/^\d+$/);
      expect(response.headers.get('x-request-id')).toBeTruthy();
    });
  });

  it('/openapi.json describes the OAuth endpoints as they are: form bodies, HTML pages, redirects, the oauth2 scheme', async () => {
    const document = (await app().request({ url: '/openapi.json' })).json;
    for (const path of ['/oauth/token', '/oauth/revoke', '/oauth/authorize']) {
      expect(Object.keys(document.paths[path].post.requestBody.content)).toEqual(['application/x-www-form-urlencoded']);
    }
    expect(document.paths['/oauth/token'].post.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/TokenResponse' });
    expect(document.paths['/oauth/token'].post.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/OAuthError' });
    expect(Object.keys(document.paths['/oauth/authorize'].get.responses['200'].content)).toEqual(['text/html']);
    expect(document.paths['/oauth/authorize'].post.responses['303'].headers).toHaveProperty('Location');
    expect(document.components.securitySchemes.oauth2.flows).toEqual({
      authorizationCode: {
        authorizationUrl: `${base}/oauth/authorize`,
        tokenUrl: `${base}/oauth/token`,
        refreshUrl: `${base}/oauth/token`,
        scopes: expect.any(Object),
      },
      clientCredentials: { tokenUrl: `${base}/oauth/token`, scopes: expect.any(Object) },
    });
    expect(Object.keys(document.components.securitySchemes.oauth2.flows.authorizationCode.scopes)).toEqual(as.scopes_supported);
    // Managing apps is for API keys only.
    expect(document.paths['/api/v1/apps'].post.security).toEqual([{ bearerAuth: ['apps:manage'] }, { apiKeyHeader: ['apps:manage'] }]);
  });

  describe('authorization code with PKCE', () => {
    it('connects a public app: tokens that act as the user, within the granted scopes', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key, { scopes: ['resources:read', 'events:read', 'usage:read'] });
      const { tokens } = await connect(app(), as, registered, user.key, 'resources:read events:read');
      expect(tokens).toEqual({
        access_token: expect.stringMatching(/^dda_[A-Za-z0-9_-]{43,}$/),
        token_type: 'bearer',
        expires_in: ACCESS_TTL_SECONDS,
        scope: 'resources:read events:read',
        refresh_token: expect.stringMatching(/^ddr_[A-Za-z0-9_-]{43,}$/),
      });

      const me = await app().request({ url: '/api/v1/auth/me', key: tokens.access_token });
      expect(me.status).toBe(200);
      expect(me.json).toEqual({
        account: { id: user.accountId, name: expect.any(String) },
        credential: {
          id: expect.stringMatching(/^tok_/),
          kind: 'oauth_access_token',
          scopes: ['resources:read', 'events:read'],
          expiresAt: new Date(clock.now().getTime() + ACCESS_TTL_SECONDS * 1000).toISOString(),
          clientId: registered.clientId,
        },
        api: { name: 'Developer Data Service API', version: '1.3.0' },
      });
      expect(me.body).not.toContain(tokens.access_token);

      // Used exactly like a key, on the user's own data, within its scopes.
      const created = await app().request({ method: 'POST', url: '/api/v1/resources', key: user.key, body: { name: 'Hall', type: 'sensor', state: 20 } });
      const list = await app().request({ url: '/api/v1/resources', key: tokens.access_token });
      expect(list.status).toBe(200);
      expect(list.json.data.map((resource: { id: string }) => resource.id)).toEqual([created.json.id]);
      expect((await app().request({ url: '/api/v1/events', key: tokens.access_token })).status).toBe(200);
      const write = await app().request({ method: 'POST', url: '/api/v1/resources', key: tokens.access_token, body: { name: 'x', type: 'text', state: 'y' } });
      expect(write.status).toBe(403);
      expect(write.json.error.code).toBe('insufficient_scope');
      expect((await app().request({ url: '/api/v1/usage', key: tokens.access_token })).status).toBe(403);
      // Never key or app management, whatever the approving key holds.
      expect((await app().request({ url: '/api/v1/keys', key: tokens.access_token })).status).toBe(403);
      expect((await app().request({ url: '/api/v1/apps', key: tokens.access_token })).status).toBe(403);
      // The stream takes it in a header like a key.
      const stream = await fetch(`${base}/api/v1/events/stream`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(stream.status).toBe(200);
      await stream.body?.cancel();

      const approved = await auditOf(user, 'oauth.connection_approved');
      expect(approved).toEqual([
        expect.objectContaining({
          actor: { kind: 'api_key', id: user.keyId },
          target: { type: 'oauth_connection', id: expect.stringMatching(/^con_/) },
          data: expect.objectContaining({ clientId: registered.clientId, scopes: ['resources:read', 'events:read'] }),
        }),
      ]);
    });

    it('connects a user of another account: the token acts for the approving user, not the app’s owner', async () => {
      const developer = await app().account();
      const registered = await registerApp(app(), developer.key);
      const user = await app().account();
      const { tokens } = await connect(app(), as, registered, user.key);
      const me = await app().request({ url: '/api/v1/auth/me', key: tokens.access_token });
      expect(me.json.account.id).toBe(user.accountId);
      await app().request({ method: 'POST', url: '/api/v1/resources', key: developer.key, body: { name: 'Developer only', type: 'text', state: 'x' } });
      const list = await app().request({ url: '/api/v1/resources', key: tokens.access_token });
      expect(list.json.data).toEqual([]);
      // The approval is in the user's audit history, not the developer's.
      expect(await auditOf(user, 'oauth.connection_approved')).toHaveLength(1);
      expect(await auditOf(developer, 'oauth.connection_approved')).toHaveLength(0);
    });

    it('connects a confidential app with HTTP Basic, and the token response is never cached', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key, { type: 'confidential', scopes: ['resources:read'] });
      const { tokens } = await connect(app(), as, registered, user.key);
      expect(tokens.scope).toBe('resources:read');
      expect(await apiStatus(base, tokens.access_token, '/api/v1/resources')).toBe(200);

      const refreshed = await oauth.refreshTokenGrantRequest(
        as,
        { client_id: registered.clientId },
        oauth.ClientSecretBasic(registered.clientSecret as string),
        tokens.refresh_token as string,
        insecure,
      );
      expect(refreshed.status).toBe(200);
      expect(refreshed.headers.get('cache-control')).toBe('no-store');
      expect(refreshed.headers.get('pragma')).toBe('no-cache');
      expect(refreshed.headers.get('content-type')).toMatch(/^application\/json/);
      for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) expect(refreshed.headers.get(name)).toMatch(/^\d+$/);
      expect(refreshed.headers.get('x-request-id')).toBeTruthy();
      await refreshed.arrayBuffer();
    });

    it('omitting scope grants the app’s registered scopes', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key, { scopes: ['resources:read', 'events:write'] });
      const result = await connect(app(), as, registered, user.key, null);
      expect(result.tokens.scope).toBe('resources:read events:write');
    });
  });

  describe('refresh tokens', () => {
    it('rotate: each refresh gives a new pair and the connection keeps working', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key);
      const first = await connect(app(), as, registered, user.key);
      const second = await refresh(as, registered, first.tokens.refresh_token as string);
      expect(second.refresh_token).toMatch(/^ddr_/);
      expect(second.refresh_token).not.toBe(first.tokens.refresh_token);
      expect(second.access_token).not.toBe(first.tokens.access_token);
      expect(second.scope).toBe('resources:read events:read');
      const third = await refresh(as, registered, second.refresh_token as string);
      for (const token of [first.tokens.access_token, second.access_token, third.access_token]) expect(await apiStatus(base, token)).toBe(200);

      // A narrower scope may be asked for; a wider one never.
      const narrower = await tokenRequest(app(), {
        grant_type: 'refresh_token',
        client_id: registered.clientId,
        refresh_token: third.refresh_token as string,
        scope: 'resources:read',
      });
      expect(narrower.status).toBe(200);
      expect(narrower.json.scope).toBe('resources:read');
      const wider = await tokenRequest(app(), {
        grant_type: 'refresh_token',
        client_id: registered.clientId,
        refresh_token: narrower.json.refresh_token,
        scope: 'resources:read resources:write',
      });
      expectOAuthError(wider, 400, 'invalid_scope');
    });

    it('narrowing the app’s scopes narrows what its connections get from the next refresh on', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key, { scopes: ['resources:read', 'events:read'] });
      const { tokens } = await connect(app(), as, registered, user.key);
      const patch = await app().request({
        method: 'PATCH',
        url: `/api/v1/apps/${registered.id}`,
        key: user.key,
        body: { scopes: ['resources:read', 'usage:read'] },
      });
      expect(patch.status).toBe(200);
      const narrowed = await refresh(as, registered, tokens.refresh_token as string);
      expect(narrowed.scope).toBe('resources:read');
      expect(await apiStatus(base, narrowed.access_token, '/api/v1/events')).toBe(403);
      // A scope the app gained later is not part of what the user approved.
      const gained = await tokenRequest(app(), {
        grant_type: 'refresh_token',
        client_id: registered.clientId,
        refresh_token: narrowed.refresh_token as string,
        scope: 'usage:read',
      });
      expectOAuthError(gained, 400, 'invalid_scope');
    });

    it('reuse of a rotated refresh token ends the whole connection, is audited, and stops its webhooks', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key, { scopes: hookScopes });
      const first = await connect(app(), as, registered, user.key);
      const hookId = await webhookWith(first.tokens.access_token);
      const second = await refresh(as, registered, first.tokens.refresh_token as string);

      const reuse = oauth
        .refreshTokenGrantRequest(as, first.client, oauth.None(), first.tokens.refresh_token as string, insecure)
        .then((response) => oauth.processRefreshTokenResponse(as, first.client, response));
      await expect(reuse).rejects.toMatchObject({ error: 'invalid_grant', status: 400 });

      // Everything the connection issued stops at once, the newest pair too.
      for (const token of [first.tokens.access_token, second.access_token]) expect(await apiStatus(base, token)).toBe(401);
      await expect(refresh(as, registered, second.refresh_token as string)).rejects.toMatchObject({ error: 'invalid_grant' });

      const reused = await auditOf(user, 'oauth.refresh_token_reused');
      expect(reused).toEqual([
        expect.objectContaining({
          actor: { kind: 'system' },
          target: { type: 'oauth_connection', id: expect.stringMatching(/^con_/) },
          data: { clientId: registered.clientId },
        }),
      ]);
      const ended = await auditOf(user, 'oauth.connection_ended');
      expect(ended).toEqual([expect.objectContaining({ target: reused[0].target, data: { reason: 'refresh_token_reused' } })]);
      expect(await webhook(user, hookId)).toMatchObject({ enabled: false, disabledReason: 'credential_revoked' });
    });

    it('two refreshes racing with the same token: one wins, the loser ends the connection', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key);
      const { tokens } = await connect(app(), as, registered, user.key);
      const fields = { grant_type: 'refresh_token', client_id: registered.clientId, refresh_token: tokens.refresh_token as string };
      const [a, b] = await Promise.all([tokenRequest(app(), fields), tokenRequest(app(), fields)]);
      expect([a.status, b.status].sort()).toEqual([200, 400]);
      const winner = a.status === 200 ? a : b;
      expect(await apiStatus(base, winner.json.access_token)).toBe(401);
    });
  });

  describe('client credentials', () => {
    it('gives a confidential app a token for its owner account, with no refresh token', async () => {
      const owner = await app().account();
      const registered = await registerApp(app(), owner.key, { type: 'confidential', scopes: ['resources:read', 'events:read'] });
      const client = { client_id: registered.clientId };
      const response = await oauth.clientCredentialsGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(registered.clientSecret as string),
        { scope: 'resources:read' },
        insecure,
      );
      expect(response.headers.get('cache-control')).toBe('no-store');
      const tokens = await oauth.processClientCredentialsResponse(as, client, response);
      expect(tokens).toEqual({ access_token: expect.stringMatching(/^dda_/), token_type: 'bearer', expires_in: ACCESS_TTL_SECONDS, scope: 'resources:read' });

      const me = await app().request({ url: '/api/v1/auth/me', key: tokens.access_token });
      expect(me.json.account.id).toBe(owner.accountId);
      expect(me.json.credential).toMatchObject({ kind: 'oauth_access_token', scopes: ['resources:read'], clientId: registered.clientId });

      const all = await tokenRequest(
        app(),
        { grant_type: 'client_credentials' },
        { authorization: basic(registered.clientId, registered.clientSecret as string) },
      );
      expect(all.status).toBe(200);
      expect(all.json.scope).toBe('resources:read events:read');
      expect(all.json).not.toHaveProperty('refresh_token');
      const beyond = await tokenRequest(
        app(),
        { grant_type: 'client_credentials', scope: 'resources:write' },
        { authorization: basic(registered.clientId, registered.clientSecret as string) },
      );
      expectOAuthError(beyond, 400, 'invalid_scope');
      const keys = await tokenRequest(
        app(),
        { grant_type: 'client_credentials', scope: 'keys:manage' },
        { authorization: basic(registered.clientId, registered.clientSecret as string) },
      );
      expectOAuthError(keys, 400, 'invalid_scope');
    });

    it('deleting the app ends its tokens, its streams and the webhooks its tokens authorized, at once', async () => {
      const owner = await app().account();
      const registered = await registerApp(app(), owner.key, { type: 'confidential', scopes: hookScopes });
      const client = { client_id: registered.clientId };
      const auth = oauth.ClientSecretBasic(registered.clientSecret as string);
      const appToken = (await oauth.processClientCredentialsResponse(as, client, await oauth.clientCredentialsGrantRequest(as, client, auth, {}, insecure)))
        .access_token;
      const appHook = await webhookWith(appToken);
      const user = await app().account();
      const { tokens } = await connect(app(), as, registered, user.key);
      const userHook = await webhookWith(tokens.access_token);
      const stream = await fetch(`${base}/api/v1/events/stream`, { headers: { authorization: `Bearer ${appToken}` } });
      expect(stream.status).toBe(200);
      const ended = stream.text().then(() => 'ended');

      expect((await app().request({ method: 'DELETE', url: `/api/v1/apps/${registered.id}`, key: owner.key })).status).toBe(204);
      expect(await apiStatus(base, appToken)).toBe(401);
      expect(await apiStatus(base, tokens.access_token)).toBe(401);
      expect(await webhook(owner, appHook)).toMatchObject({ enabled: false, disabledReason: 'credential_revoked' });
      expect(await webhook(user, userHook)).toMatchObject({ enabled: false, disabledReason: 'credential_revoked' });
      const outcome = await Promise.race([ended, new Promise((resolve) => setTimeout(() => resolve('still open'), 5_000))]);
      expect(outcome).toBe('ended');
      const endedAudit = await auditOf(user, 'oauth.connection_ended');
      expect(endedAudit.map((record) => record.data)).toEqual([{ reason: 'app_deleted' }]);
    });

    it('is refused to a public app', async () => {
      const owner = await app().account();
      const registered = await registerApp(app(), owner.key);
      const response = await oauth.clientCredentialsGrantRequest(as, { client_id: registered.clientId }, oauth.None(), { scope: 'resources:read' }, insecure);
      await expect(oauth.processClientCredentialsResponse(as, { client_id: registered.clientId }, response)).rejects.toMatchObject({
        error: 'unauthorized_client',
      });
    });
  });

  describe('revocation (RFC 7009)', () => {
    it('a refresh token ends its connection and its access tokens; the audit says so', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key, { scopes: hookScopes });
      const { tokens } = await connect(app(), as, registered, user.key);
      const hookId = await webhookWith(tokens.access_token);
      const other = await connect(app(), as, registered, user.key);

      await revoke(as, registered, tokens.refresh_token as string);
      expect(await apiStatus(base, tokens.access_token)).toBe(401);
      await expect(refresh(as, registered, tokens.refresh_token as string)).rejects.toMatchObject({ error: 'invalid_grant' });
      expect(await webhook(user, hookId)).toMatchObject({ enabled: false, disabledReason: 'credential_revoked' });
      // Another connection of the same app and user is untouched.
      expect(await apiStatus(base, other.tokens.access_token)).toBe(200);
      const ended = await auditOf(user, 'oauth.connection_ended');
      expect(ended.map((record) => record.data)).toEqual([{ reason: 'revoked' }]);
      const disabled = await auditOf(user, 'webhook.disabled');
      expect(disabled).toEqual([
        expect.objectContaining({ target: { type: 'webhook', id: hookId }, data: expect.objectContaining({ reason: 'credential_revoked' }) }),
      ]);
    });

    it('an event stream opened with the connection’s token ends at once, not at the next heartbeat', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key);
      const { tokens } = await connect(app(), as, registered, user.key);
      const stream = await fetch(`${base}/api/v1/events/stream`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(stream.status).toBe(200);
      const ended = stream.text().then(() => 'ended');
      await revoke(as, registered, tokens.refresh_token as string);
      // The heartbeat check would end it within 15 s anyway; at once means well before that.
      const outcome = await Promise.race([ended, new Promise((resolve) => setTimeout(() => resolve('still open'), 5_000))]);
      expect(outcome).toBe('ended');
    });

    it('an access token ends only itself; a confidential app revokes with Basic', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key, { type: 'confidential' });
      const { tokens } = await connect(app(), as, registered, user.key);
      const openStream = async (token: string) => {
        const stream = await fetch(`${base}/api/v1/events/stream`, { headers: { authorization: `Bearer ${token}` } });
        expect(stream.status).toBe(200);
        return { ended: stream.text().then(() => 'ended'), cancel: () => stream.body?.cancel().catch(() => {}) };
      };
      const revokedStream = await openStream(tokens.access_token);
      await revoke(as, registered, tokens.access_token);
      expect(await apiStatus(base, tokens.access_token)).toBe(401);
      const next = await refresh(as, registered, tokens.refresh_token as string);
      expect(await apiStatus(base, next.access_token)).toBe(200);
      // Its stream ends at once too; one opened with the connection's next token stays open.
      const liveStream = await openStream(next.access_token);
      const still = (ended: Promise<string>) => Promise.race([ended, new Promise((resolve) => setTimeout(() => resolve('still open'), 5_000))]);
      expect(await still(revokedStream.ended)).toBe('ended');
      expect(await Promise.race([liveStream.ended, new Promise((resolve) => setTimeout(() => resolve('still open'), 200))])).toBe('still open');
      await liveStream.cancel();
    });

    it('answers 200 with an empty body for unknown tokens and for another client’s tokens, revoking nothing', async () => {
      const user = await app().account();
      const mine = await registerApp(app(), user.key);
      const theirs = await registerApp(app(), user.key);
      const { tokens } = await connect(app(), as, mine, user.key);
      for (const token of ['ddr_unknown', 'not-even-ours', tokens.refresh_token as string, tokens.access_token]) {
        const response = await fetch(`${base}/oauth/revoke`, { method: 'POST', body: new URLSearchParams({ token, client_id: theirs.clientId }) });
        expect(response.status).toBe(200);
        expect(await response.text()).toBe('');
        expect(response.headers.get('cache-control')).toBe('no-store');
      }
      expect(await apiStatus(base, tokens.access_token)).toBe(200);
      expect((await refresh(as, mine, tokens.refresh_token as string)).access_token).toMatch(/^dda_/);

      const missing = await fetch(`${base}/oauth/revoke`, { method: 'POST', body: new URLSearchParams({ client_id: mine.clientId }) });
      expect(missing.status).toBe(400);
      expect(await missing.json()).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
      const unauthenticated = await fetch(`${base}/oauth/revoke`, { method: 'POST', body: new URLSearchParams({ token: 'x' }) });
      expect(unauthenticated.status).toBe(401);
      expect(await unauthenticated.json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    });
  });

  describe('the connection’s lifetime', () => {
    it('access tokens expire after ACCESS_TOKEN_TTL_SECONDS; refreshing goes on', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key);
      const { tokens } = await connect(app(), as, registered, user.key);
      clock.advance((ACCESS_TTL_SECONDS - 1) * 1000);
      expect(await apiStatus(base, tokens.access_token)).toBe(200);
      clock.advance(1000);
      const expired = await fetch(`${base}/api/v1/auth/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(expired.status).toBe(401);
      expect(expired.headers.get('www-authenticate')).toContain('error="invalid_token"');
      const next = await refresh(as, registered, tokens.refresh_token as string);
      expect(await apiStatus(base, next.access_token)).toBe(200);
    });

    it('ends 30 days after approval: refreshing never extends it, and no token outlives it', async () => {
      const user = await app().account();
      const registered = await registerApp(app(), user.key);
      const approvedAt = clock.now().getTime();
      let { refresh_token: refreshToken } = (await connect(app(), as, registered, user.key)).tokens;
      for (let day = 0; day < 29; day++) {
        clock.advance(DAY_MS);
        refreshToken = (await refresh(as, registered, refreshToken as string)).refresh_token;
      }
      // 100 seconds before the end: the access token lives only until the connection ends.
      clock.advance(DAY_MS - 100_000);
      const last = await refresh(as, registered, refreshToken as string);
      expect(last.expires_in).toBe(100);
      const me = await app().request({ url: '/api/v1/auth/me', key: last.access_token });
      expect(me.json.credential.expiresAt).toBe(new Date(approvedAt + 30 * DAY_MS).toISOString());
      clock.advance(100_000);
      expect(await apiStatus(base, last.access_token)).toBe(401);
      await expect(refresh(as, registered, last.refresh_token as string)).rejects.toMatchObject({ error: 'invalid_grant' });
    });

    it('ends at once when the approving key is revoked: tokens, refresh and webhooks stop, audited', async () => {
      const owner = await app().account();
      const approver = await app().request({ method: 'POST', url: '/api/v1/keys', key: owner.key, body: { name: 'approver', scopes: hookScopes } });
      const registered = await registerApp(app(), owner.key, { scopes: hookScopes });
      const { tokens } = await connect(app(), as, registered, approver.json.key);
      const hookId = await webhookWith(tokens.access_token);
      expect(await apiStatus(base, tokens.access_token)).toBe(200);

      expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${approver.json.id}`, key: owner.key })).status).toBe(204);
      expect(await apiStatus(base, tokens.access_token)).toBe(401);
      await expect(refresh(as, registered, tokens.refresh_token as string)).rejects.toMatchObject({ error: 'invalid_grant' });
      expect(await webhook(owner, hookId)).toMatchObject({ enabled: false, disabledReason: 'credential_revoked' });
      const ended = await auditOf(owner, 'oauth.connection_ended');
      expect(ended.map((record) => record.data)).toEqual([{ reason: 'approving_key_revoked' }]);
    });

    it('ends when the approving key expires, before 30 days', async () => {
      const owner = await app().account();
      const approver = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: owner.key,
        body: { name: 'short', scopes: hookScopes, expiresInDays: 2 },
      });
      const registered = await registerApp(app(), owner.key, { scopes: hookScopes });
      const { tokens } = await connect(app(), as, registered, approver.json.key);
      const hookId = await webhookWith(tokens.access_token);
      const approved = await auditOf(owner, 'oauth.connection_approved');
      expect(approved[0].data.expiresAt).toBe(approver.json.expiresAt);

      clock.advance(2 * DAY_MS - (ACCESS_TTL_SECONDS * 1000) / 2);
      const late = await refresh(as, registered, tokens.refresh_token as string);
      expect(late.expires_in).toBe(ACCESS_TTL_SECONDS / 2);
      clock.advance((ACCESS_TTL_SECONDS * 1000) / 2);
      expect(await apiStatus(base, late.access_token)).toBe(401);
      await expect(refresh(as, registered, late.refresh_token as string)).rejects.toMatchObject({ error: 'invalid_grant' });
      // The service's periodic task records the end and cuts off the webhook it authorized.
      await until(async () => (await auditOf(owner, 'oauth.connection_ended')).length > 0, 'the connection’s end to be recorded');
      expect((await auditOf(owner, 'oauth.connection_ended')).map((record) => record.data)).toEqual([{ reason: 'expired' }]);
      expect(await webhook(owner, hookId)).toMatchObject({ enabled: false, disabledReason: 'credential_expired' });
    });
  });

  describe('CORS', () => {
    it('lets any origin call /oauth/token and /oauth/revoke, without cookies; not the approval page', async () => {
      for (const path of ['/oauth/token', '/oauth/revoke']) {
        const preflight = await fetch(`${base}${path}`, {
          method: 'OPTIONS',
          headers: {
            origin: 'https://spa.example.org',
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'content-type, authorization',
          },
        });
        expect(preflight.status).toBe(204);
        expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
        expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
        expect(preflight.headers.get('access-control-allow-credentials')).toBeNull();
      }
      const token = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { origin: 'https://spa.example.org' },
        body: new URLSearchParams({ grant_type: 'client_credentials' }),
      });
      expect(token.status).toBe(401);
      expect(token.headers.get('access-control-allow-origin')).toBe('*');
      expect(token.headers.get('access-control-expose-headers')).toMatch(/RateLimit-Remaining/i);
      await token.arrayBuffer();

      const page = await fetch(`${base}/oauth/authorize?client_id=nope`, { headers: { origin: 'https://spa.example.org' } });
      expect(page.headers.get('access-control-allow-origin')).toBeNull();
      await page.arrayBuffer();
    });
  });
});
