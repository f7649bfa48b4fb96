// The token endpoint's refusals (RFC 6749 §5.2, RFC 7636, RFC 9700, docs/decisions.md: "Applications and OAuth"): every way a
// code, a verifier, a client or a scope can be wrong, each answered with the decided error and
// status, and nothing issued. oauth4webapi sends what a client library would send; requests no
// library would make are sent by hand.
import * as oauth from 'oauth4webapi';
import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, TestApp, useTestApp, type TestAccount } from '../support/app.js';
import {
  apiStatus,
  approvedCode,
  authorizationParams,
  basic,
  discover,
  expectOAuthError,
  getAuthorize,
  insecure,
  registerApp,
  submitApproval,
  tokenRequest,
  type RegisteredApp,
} from './support.js';

describe('OAuth negative matrix', () => {
  const clock = new ManualClock();
  const app = useTestApp({ clock });
  let base: string;
  let as: oauth.AuthorizationServer;

  beforeAll(async () => {
    base = await app().listen();
    as = await discover(base);
  });

  /** A fresh code for this app, approved by this key, and what redeeming it needs. */
  async function codeFor(registered: RegisteredApp, user: TestAccount, redirectUri = registered.redirectUris[0] as string) {
    const { params, verifier } = await authorizationParams(registered, { redirect_uri: redirectUri });
    const code = await approvedCode(app(), params, user.key);
    return {
      code,
      verifier,
      redirectUri,
      fields: { grant_type: 'authorization_code', client_id: registered.clientId, code, redirect_uri: redirectUri, code_verifier: verifier },
    };
  }

  /** Redeems a code through oauth4webapi and returns the error it reports. */
  async function libraryError(registered: RegisteredApp, code: string, redirectUri: string, verifier: string, auth: oauth.ClientAuth = oauth.None()) {
    const client = { client_id: registered.clientId };
    try {
      const callback = oauth.validateAuthResponse(as, client, new URL(`${redirectUri}?${new URLSearchParams({ code, iss: base })}`), oauth.skipStateCheck);
      const response = await oauth.authorizationCodeGrantRequest(as, client, auth, callback, redirectUri, verifier, insecure);
      await oauth.processAuthorizationCodeResponse(as, client, response);
    } catch (error) {
      return error as oauth.ResponseBodyError;
    }
    throw new Error('the code was accepted');
  }

  async function setup(body: Partial<RegisteredApp> = {}) {
    const user = await app().account();
    return { user, registered: await registerApp(app(), user.key, body) };
  }

  describe('authorization code and PKCE', () => {
    it('a wrong verifier: invalid_grant, and the code is spent', async () => {
      const { user, registered } = await setup();
      const { code, redirectUri, verifier, fields } = await codeFor(registered, user);
      const error = await libraryError(registered, code, redirectUri, oauth.generateRandomCodeVerifier());
      expect(error).toMatchObject({ error: 'invalid_grant', status: 400 });
      expect(error.cause).toEqual({ error: 'invalid_grant', error_description: expect.stringContaining('code_verifier') });
      expect(await libraryError(registered, code, redirectUri, verifier)).toMatchObject({ error: 'invalid_grant' });
      expectOAuthError(await tokenRequest(app(), fields), 400, 'invalid_grant');
    });

    it('a malformed or missing verifier, a missing code or redirect_uri', async () => {
      const { user, registered } = await setup();
      const first = await codeFor(registered, user);
      expectOAuthError(await tokenRequest(app(), { ...first.fields, code_verifier: 'a'.repeat(42) }), 400, 'invalid_grant');
      const second = await codeFor(registered, user);
      expectOAuthError(await tokenRequest(app(), { ...second.fields, code_verifier: `${second.verifier.slice(0, 42)}!` }), 400, 'invalid_grant');
      const third = await codeFor(registered, user);
      for (const missing of ['code_verifier', 'code', 'redirect_uri']) {
        const fields: Record<string, string> = { ...third.fields };
        delete fields[missing];
        expectOAuthError(await tokenRequest(app(), fields), 400, 'invalid_request');
      }
      // Those refusals did not spend the third code.
      expect((await tokenRequest(app(), third.fields)).status).toBe(200);
    });

    it('no PKCE, or plain, at authorization: the app gets invalid_request and no page', async () => {
      const { registered } = await setup();
      for (const overrides of [{ code_challenge: undefined, code_challenge_method: undefined }, { code_challenge_method: 'plain' }]) {
        const { params, state } = await authorizationParams(registered, overrides);
        const response = await getAuthorize(app(), params);
        expect(response.status).toBe(303);
        const callback = new URL(response.headers.location as string);
        expect(() => oauth.validateAuthResponse(as, { client_id: registered.clientId }, callback, state)).toThrow(
          expect.objectContaining({ error: 'invalid_request' }),
        );
      }
    });

    it('a reused code: invalid_grant, and the tokens it issued are revoked', async () => {
      const { user, registered } = await setup();
      const { fields } = await codeFor(registered, user);
      const first = await tokenRequest(app(), fields);
      expect(first.status).toBe(200);
      expect(await apiStatus(base, first.json.access_token)).toBe(200);

      expectOAuthError(await tokenRequest(app(), fields), 400, 'invalid_grant');
      expect(await apiStatus(base, first.json.access_token)).toBe(401);
      expectOAuthError(
        await tokenRequest(app(), { grant_type: 'refresh_token', client_id: registered.clientId, refresh_token: first.json.refresh_token }),
        400,
        'invalid_grant',
      );
      const ended = await app().request({ url: '/api/v1/audit?type=oauth.connection_ended', key: user.key });
      expect(ended.json.data.map((record: { data: unknown }) => record.data)).toEqual([{ reason: 'authorization_code_reused' }]);
    });

    it('the same code sent twice at once: exactly one answer has tokens, and they are revoked', async () => {
      const { user, registered } = await setup();
      const { fields } = await codeFor(registered, user);
      const answers = await Promise.all([tokenRequest(app(), fields), tokenRequest(app(), fields)]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400]);
      const issued = answers.find((answer) => answer.status === 200);
      expect(await apiStatus(base, issued?.json.access_token)).toBe(401);
    });

    it('an expired code (5 minutes): invalid_grant', async () => {
      const { user, registered } = await setup();
      const fresh = await codeFor(registered, user);
      const stale = await codeFor(registered, user);
      clock.advance(5 * 60_000 - 1000);
      expect((await tokenRequest(app(), fresh.fields)).status).toBe(200);
      clock.advance(1000);
      const error = await libraryError(registered, stale.code, stale.redirectUri, stale.verifier);
      expect(error).toMatchObject({ error: 'invalid_grant' });
      expect(error.cause).toMatchObject({ error_description: expect.stringContaining('expired') });
    });

    it('another redirect URI than the authorization’s, even a registered one: invalid_grant', async () => {
      const { user, registered } = await setup({ redirectUris: ['https://client.example.com/callback', 'https://client.example.com/other'] });
      const { code, verifier } = await codeFor(registered, user, 'https://client.example.com/callback');
      expect(await libraryError(registered, code, 'https://client.example.com/other', verifier)).toMatchObject({ error: 'invalid_grant' });
    });

    it('a code issued to another app: invalid_grant', async () => {
      const { user, registered } = await setup();
      const other = await registerApp(app(), user.key);
      const { fields } = await codeFor(registered, user);
      expectOAuthError(await tokenRequest(app(), { ...fields, client_id: other.clientId }), 400, 'invalid_grant');
      expectOAuthError(await tokenRequest(app(), { ...fields, code: 'not-a-code' }), 400, 'invalid_grant');
    });

    it('a code whose approving key was revoked before the exchange: invalid_grant', async () => {
      const { user, registered } = await setup();
      const approver = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: user.key,
        body: { name: 'approver', scopes: ['resources:read', 'events:read'] },
      });
      const { params, verifier, state } = await authorizationParams(registered);
      const response = await submitApproval(app(), params, approver.json.key);
      const code = new URL(response.headers.location as string).searchParams.get('code') as string;
      expect(state).toBe(params.get('state'));
      await app().request({ method: 'DELETE', url: `/api/v1/keys/${approver.json.id}`, key: user.key });
      expect(await libraryError(registered, code, registered.redirectUris[0] as string, verifier)).toMatchObject({ error: 'invalid_grant' });
    });
  });

  describe('client authentication', () => {
    it('a public client sending a secret: invalid_client (401)', async () => {
      const { user, registered } = await setup();
      const { fields } = await codeFor(registered, user);
      expectOAuthError(await tokenRequest(app(), { ...fields, client_secret: 'ddcs_anything' }), 401, 'invalid_client');
      const viaBasic = await tokenRequest(app(), fields, { authorization: basic(registered.clientId, 'ddcs_anything') });
      expectOAuthError(viaBasic, 401, 'invalid_client');
      expect(viaBasic.headers['www-authenticate']).toBe('Basic realm="devdata"');
      // Refused requests did not spend the code.
      expect((await tokenRequest(app(), fields)).status).toBe(200);
    });

    it('a confidential client without Basic, with the secret in the form, or a wrong secret: invalid_client (401)', async () => {
      const { user, registered } = await setup({ type: 'confidential' });
      const secret = registered.clientSecret as string;
      const { code, redirectUri, verifier, fields } = await codeFor(registered, user);
      expectOAuthError(await tokenRequest(app(), fields), 401, 'invalid_client');
      expectOAuthError(await tokenRequest(app(), { ...fields, client_secret: secret }), 401, 'invalid_client');
      expect(await libraryError(registered, code, redirectUri, verifier, oauth.ClientSecretPost(secret))).toMatchObject({
        error: 'invalid_client',
        status: 401,
      });
      // With Basic the 401 carries a Basic challenge (RFC 6749 §5.2), which oauth4webapi reports as such.
      const challenge = (await libraryError(
        registered,
        code,
        redirectUri,
        verifier,
        oauth.ClientSecretBasic('ddcs_wrong'),
      )) as unknown as oauth.WWWAuthenticateChallengeError;
      expect(challenge).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
      expect(challenge).toMatchObject({ status: 401, cause: [expect.objectContaining({ scheme: 'basic', parameters: { realm: 'devdata' } })] });
      expect(await challenge.response.json()).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
      const mismatch = await tokenRequest(app(), { ...fields, client_id: 'ddc_someone_else' }, { authorization: basic(registered.clientId, secret) });
      expectOAuthError(mismatch, 401, 'invalid_client');
      expectOAuthError(await tokenRequest(app(), fields, { authorization: 'Basic !!!' }), 401, 'invalid_client');
      expectOAuthError(await tokenRequest(app(), fields, { authorization: `Bearer ${user.key}` }), 401, 'invalid_client');
      // Properly authenticated, the code still works: none of the refusals spent it.
      const ok = await tokenRequest(app(), fields, { authorization: basic(registered.clientId, secret) });
      expect(ok.status).toBe(200);
    });

    it('an unknown or missing client: invalid_client (401)', async () => {
      expectOAuthError(
        await tokenRequest(app(), {
          grant_type: 'authorization_code',
          client_id: 'ddc_unknown',
          code: 'x',
          redirect_uri: 'https://a.example/cb',
          code_verifier: 'v'.repeat(43),
        }),
        401,
        'invalid_client',
      );
      expectOAuthError(await tokenRequest(app(), { grant_type: 'authorization_code', code: 'x' }), 401, 'invalid_client');
      expectOAuthError(
        await tokenRequest(app(), { grant_type: 'client_credentials' }, { authorization: basic('ddc_unknown', 'ddcs_x') }),
        401,
        'invalid_client',
      );
    });
  });

  describe('scopes', () => {
    it('escalation beyond the app, or keys:manage, is refused at authorization (invalid_scope)', async () => {
      const { registered } = await setup({ scopes: ['resources:read'] });
      for (const scope of ['resources:read resources:write', 'keys:manage', 'apps:manage', 'resources:read unknown:scope']) {
        const { params, state } = await authorizationParams(registered, { scope });
        const response = await getAuthorize(app(), params);
        expect(() => oauth.validateAuthResponse(as, { client_id: registered.clientId }, new URL(response.headers.location as string), state)).toThrow(
          expect.objectContaining({ error: 'invalid_scope' }),
        );
      }
    });

    it('beyond the approving key: the page again (403), no code', async () => {
      const { user, registered } = await setup({ scopes: ['resources:read', 'resources:write'] });
      const reader = await app().request({ method: 'POST', url: '/api/v1/keys', key: user.key, body: { name: 'reader', scopes: ['resources:read'] } });
      const { params } = await authorizationParams(registered);
      const response = await submitApproval(app(), params, reader.json.key);
      expect(response.status).toBe(403);
      expect(response.headers.location).toBeUndefined();
    });

    it('on refresh and client credentials: only within what was granted (invalid_scope)', async () => {
      const { user, registered } = await setup({ type: 'confidential', scopes: ['resources:read', 'events:read'] });
      const auth = { authorization: basic(registered.clientId, registered.clientSecret as string) };
      const { params, verifier } = await authorizationParams(registered, { scope: 'resources:read' });
      const code = await approvedCode(app(), params, user.key);
      const tokens = await tokenRequest(
        app(),
        { grant_type: 'authorization_code', code, redirect_uri: registered.redirectUris[0] as string, code_verifier: verifier },
        auth,
      );
      expect(tokens.json.scope).toBe('resources:read');
      // events:read is the app's, but was not granted by this connection.
      expectOAuthError(
        await tokenRequest(app(), { grant_type: 'refresh_token', refresh_token: tokens.json.refresh_token, scope: 'resources:read events:read' }, auth),
        400,
        'invalid_scope',
      );
      expectOAuthError(await tokenRequest(app(), { grant_type: 'client_credentials', scope: 'keys:manage' }, auth), 400, 'invalid_scope');
      expectOAuthError(await tokenRequest(app(), { grant_type: 'client_credentials', scope: 'usage:read' }, auth), 400, 'invalid_scope');
    });
  });

  describe('the request itself', () => {
    it('grant_type missing or unknown, JSON instead of a form, repeated fields', async () => {
      const { registered } = await setup();
      expectOAuthError(await tokenRequest(app(), { client_id: registered.clientId }), 400, 'invalid_request');
      expectOAuthError(await tokenRequest(app(), { grant_type: 'password', client_id: registered.clientId }), 400, 'unsupported_grant_type');
      expectOAuthError(await tokenRequest(app(), { grant_type: 'implicit', client_id: registered.clientId }), 400, 'unsupported_grant_type');
      const json = await app().request({ method: 'POST', url: '/oauth/token', body: { grant_type: 'client_credentials', client_id: registered.clientId } });
      expectOAuthError(json, 400, 'invalid_request');
      const repeated = await app().request({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=refresh_token&client_id=${registered.clientId}&refresh_token=a&refresh_token=b`,
      });
      expectOAuthError(repeated, 400, 'invalid_request');
      const empty = await app().request({ method: 'POST', url: '/oauth/token' });
      expectOAuthError(empty, 400, 'invalid_request');
    });

    it('the metadata document refuses a query it cannot read with the API error body, not a 500 (found by the fuzz battery)', async () => {
      const response = await app().request({ url: '/.well-known/oauth-authorization-server?unknown=%00' });
      expect(response.status).toBe(400);
      expect(response.json.error).toMatchObject({ code: 'invalid_request', requestId: expect.any(String) });
    });

    it('refresh-token reuse ends the connection (see the flows for the audit and webhooks)', async () => {
      const { user, registered } = await setup();
      const { fields } = await codeFor(registered, user);
      const first = (await tokenRequest(app(), fields)).json;
      const refreshFields = { grant_type: 'refresh_token', client_id: registered.clientId, refresh_token: first.refresh_token };
      const second = await tokenRequest(app(), refreshFields);
      expect(second.status).toBe(200);
      expectOAuthError(await tokenRequest(app(), refreshFields), 400, 'invalid_grant');
      expectOAuthError(await tokenRequest(app(), { ...refreshFields, refresh_token: second.json.refresh_token }), 400, 'invalid_grant');
      expect(await apiStatus(base, second.json.access_token)).toBe(401);
      // An access token is not a refresh token.
      const again = (await tokenRequest(app(), (await codeFor(registered, user)).fields)).json;
      expectOAuthError(await tokenRequest(app(), { ...refreshFields, refresh_token: again.access_token }), 400, 'invalid_grant');
    });
  });
});

describe('OAuth endpoints under the rate limit', () => {
  it('carry the RateLimit headers and answer 429 with Retry-After past the allowance', async () => {
    // A clock that stands still: the one-minute window cannot roll over during the test.
    const app = await TestApp.start({ clock: new ManualClock(), env: { RATE_LIMIT_ANON_PER_MINUTE: '3' } });
    try {
      const user = await app.account();
      const registered = await registerApp(app, user.key);
      const remaining: string[] = [];
      for (let attempt = 0; attempt < 3; attempt++) {
        const response = await tokenRequest(app, { grant_type: 'refresh_token', client_id: registered.clientId, refresh_token: 'ddr_x' });
        expectOAuthError(response, 400, 'invalid_grant');
        expect(response.headers['ratelimit-limit']).toBe('3');
        expect(Number(response.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
        remaining.push(response.headers['ratelimit-remaining'] as string);
      }
      expect(remaining).toEqual(['2', '1', '0']);
      const limited = await tokenRequest(app, { grant_type: 'refresh_token', client_id: registered.clientId, refresh_token: 'ddr_x' });
      expect(limited.status).toBe(429);
      expect(limited.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      expect(limited.json).toMatchObject({ error: { code: 'rate_limited' } });
      const revoke = await app.request({
        method: 'POST',
        url: '/oauth/revoke',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'token=x',
      });
      expect(revoke.status).toBe(429);
      // The API key has its own allowance.
      expect((await app.request({ url: '/api/v1/auth/me', key: user.key })).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

describe('OAuth tokens and the rate limit', () => {
  it('share one allowance per connection (client credentials: per app), apart from the approving key', async () => {
    const app = await TestApp.start({ clock: new ManualClock(), env: { RATE_LIMIT_PER_MINUTE: '5' } });
    try {
      const user = await app.account();
      const registered = await registerApp(app, user.key, { type: 'confidential', scopes: ['resources:read'] });
      const auth = { authorization: basic(registered.clientId, registered.clientSecret as string) };
      const { params, verifier } = await authorizationParams(registered);
      const code = await approvedCode(app, params, user.key);
      const first = (
        await tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri: registered.redirectUris[0] as string, code_verifier: verifier }, auth)
      ).json;
      const second = (await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: first.refresh_token }, auth)).json;
      const remaining = async (token: string) => {
        const response = await app.request({ url: '/api/v1/auth/me', key: token });
        return `${response.status} ${response.headers['ratelimit-remaining']}`;
      };
      expect([await remaining(first.access_token), await remaining(second.access_token), await remaining(first.access_token)]).toEqual([
        '200 4',
        '200 3',
        '200 2',
      ]);
      const appToken = (await tokenRequest(app, { grant_type: 'client_credentials' }, auth)).json.access_token;
      const other = (await tokenRequest(app, { grant_type: 'client_credentials' }, auth)).json.access_token;
      expect([await remaining(appToken), await remaining(other)]).toEqual(['200 4', '200 3']);
      expect(await remaining(second.access_token)).toBe('200 1');
      expect(await remaining(second.access_token)).toBe('200 0');
      const limited = await app.request({ url: '/api/v1/auth/me', key: first.access_token });
      expect(limited.status).toBe(429);
      expect(limited.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      // The key that approved the connection keeps its own allowance.
      const byKey = await app.request({ url: '/api/v1/auth/me', key: user.key });
      expect(byKey.status).toBe(200);
    } finally {
      await app.close();
    }
  });
});
