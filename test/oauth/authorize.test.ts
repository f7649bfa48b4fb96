// The authorization endpoint (docs/decisions.md: "Applications and OAuth"): the approval page and its headers, the faults shown
// as a page (unknown client, unregistered redirect URI, a tampered or stale form) and those sent
// back to the app as a 303 with error, state and iss, and the approval or cancellation itself.
import { describe, expect, it } from 'vitest';
import { ManualClock, useTestApp, type TestResponse } from '../support/app.js';
import { authorizationParams, form, getAuthorize, hiddenFields, REDIRECT_URI, registerApp, submitApproval, type RegisteredApp } from './support.js';

describe('/oauth/authorize', () => {
  const clock = new ManualClock();
  const app = useTestApp({ clock });

  function expectPageHeaders(response: TestResponse): void {
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['x-frame-options']).toBe('DENY');
    expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
    expect(response.headers.location).toBeUndefined();
  }

  /** A 303 back to the app's redirect URI carrying exactly these parameters, which no cache keeps. */
  function expectRedirect(response: TestResponse, redirectUri: string, params: Record<string, string | RegExp>): URL {
    expect(response.status).toBe(303);
    expect(response.headers['cache-control']).toBe('no-store');
    const location = new URL(response.headers.location as string);
    expect(`${location.origin}${location.pathname}`).toBe(redirectUri.split('?')[0]);
    const received = Object.fromEntries(location.searchParams);
    expect(received).toEqual(
      Object.fromEntries(Object.entries(params).map(([name, value]) => [name, typeof value === 'string' ? value : expect.stringMatching(value)])),
    );
    return location;
  }

  async function setup(body: Partial<RegisteredApp> & { name?: string } = {}) {
    const user = await app().account();
    const registered = await registerApp(app(), user.key, body);
    return { user, registered };
  }

  async function connectionsOf(accountId: string): Promise<number> {
    const rows = await app().context.storage.db.selectFrom('oauth_connections').select('id').where('account_id', '=', accountId).execute();
    return rows.length;
  }

  describe('GET: the approval page', () => {
    it('names the app and the scopes in words, with a labelled key field, Connect and Cancel, and a CSRF token', async () => {
      const { registered } = await setup({ name: 'Garden <Monitor> & "Co"', scopes: ['resources:read', 'events:write'] });
      const { params } = await authorizationParams(registered);
      const page = await getAuthorize(app(), params);
      expect(page.status).toBe(200);
      expectPageHeaders(page);
      expect(page.headers['referrer-policy']).toBe('no-referrer');
      const html = page.body;
      expect(html).toMatch(/^<!doctype html>\n<html lang="en">/);
      expect(html).toContain('<title>Connect Garden &lt;Monitor&gt; &amp; &quot;Co&quot;</title>');
      expect(html).toMatch(/<h1>[^<]*<span id="app-name">Garden &lt;Monitor&gt; &amp; &quot;Co&quot;<\/span>/);
      expect(html).not.toContain('<Monitor>');
      expect(html).toContain('Read resources');
      expect(html).toContain('Publish custom events');
      expect(html).not.toContain('Read events, including');
      expect(html).toContain('<label for="api_key">');
      expect(html).toMatch(/<input type="password" id="api_key" name="api_key"/);
      expect(html).toMatch(/<button type="submit" name="action" value="approve">Connect<\/button>/);
      // Cancel needs no key: the browser's required-field check is skipped for it.
      expect(html).toMatch(/<button type="submit" name="action" value="cancel" formnovalidate>Cancel<\/button>/);
      expect(html).toMatch(/<input type="password" id="api_key" name="api_key" required [^>]*aria-describedby="api-key-hint">/);
      expect(html).toContain('<form method="post" action="/oauth/authorize">');
      expect(html).not.toContain('<script');
      const fields = hiddenFields(html);
      expect(fields).toEqual({
        response_type: 'code',
        client_id: registered.clientId,
        redirect_uri: REDIRECT_URI,
        scope: 'resources:read events:write',
        state: params.get('state'),
        code_challenge: params.get('code_challenge'),
        code_challenge_method: 'S256',
        csrf: expect.stringMatching(/^\d+\.[A-Za-z0-9_-]{43}$/),
      });
    });

    it('shows an error page (400), never a redirect, for an unknown client_id or an unregistered redirect_uri', async () => {
      const { registered } = await setup();
      const cases = [
        { client_id: 'ddc_unknown' },
        { client_id: undefined },
        { redirect_uri: 'https://evil.example.net/callback' },
        { redirect_uri: `${REDIRECT_URI}/` },
        { redirect_uri: `${REDIRECT_URI}?extra=1` },
        { redirect_uri: REDIRECT_URI.toUpperCase() },
        // Even when everything else is wrong too: nothing goes to an untrusted address.
        { redirect_uri: 'https://evil.example.net/callback', response_type: 'token', code_challenge: undefined, state: 'short' },
      ];
      for (const overrides of cases) {
        const { params } = await authorizationParams(registered, overrides);
        const page = await getAuthorize(app(), params);
        expect(page.status).toBe(400);
        expectPageHeaders(page);
        expect(page.body).toContain('<h1>This application cannot be connected</h1>');
        expect(page.body).toMatch(/role="alert"/);
        expect(page.body).not.toContain('<form');
      }
    });

    it('sends the other faults back to the app: 303 with error, error_description, state and iss', async () => {
      const { registered } = await setup({ scopes: ['resources:read', 'events:read'] });
      const iss = app().config.baseUrl;
      const cases: Array<[Record<string, string | undefined>, string]> = [
        [{ response_type: 'token' }, 'unsupported_response_type'],
        [{ response_type: undefined }, 'unsupported_response_type'],
        [{ code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
        [{ code_challenge_method: undefined }, 'invalid_request'],
        [{ code_challenge_method: 'plain' }, 'invalid_request'],
        [{ code_challenge: 'too-short' }, 'invalid_request'],
        [{ state: 'x'.repeat(7) }, 'invalid_request'],
        [{ state: 'x'.repeat(501) }, 'invalid_request'],
        [{ scope: 'resources:read nonsense' }, 'invalid_scope'],
        [{ scope: 'resources:read resources:write' }, 'invalid_scope'],
        [{ scope: 'keys:manage' }, 'invalid_scope'],
        [{ scope: 'apps:manage' }, 'invalid_scope'],
      ];
      for (const [overrides, error] of cases) {
        const { params, state } = await authorizationParams(registered, overrides);
        const response = await getAuthorize(app(), params);
        expectRedirect(response, REDIRECT_URI, { error, error_description: /./, state: overrides.state ?? state, iss });
        expect(response.body).toBe('');
      }
      // A missing state is not made up.
      const { params } = await authorizationParams(registered, { state: undefined });
      expectRedirect(await getAuthorize(app(), params), REDIRECT_URI, { error: 'invalid_request', error_description: /state/, iss });
    });

    it('accepts state of exactly 8 and 500 characters, returned unchanged', async () => {
      const { user, registered } = await setup();
      for (const state of ['a'.repeat(8), `${'ü ~+&='.repeat(83)}xy`]) {
        expect(state.length === 8 || state.length === 500).toBe(true);
        const { params } = await authorizationParams(registered, { state });
        const response = await submitApproval(app(), params, user.key);
        expectRedirect(response, REDIRECT_URI, { code: /^[A-Za-z0-9_-]{43}$/, state, iss: app().config.baseUrl });
      }
    });

    it('keeps the query of a registered redirect URI and may omit redirect_uri when only one is registered', async () => {
      const withQuery = 'https://client.example.com/cb?tenant=7';
      const { user, registered } = await setup({ redirectUris: [withQuery] });
      const { params, state } = await authorizationParams(registered);
      expectRedirect(await submitApproval(app(), params, user.key), withQuery, { tenant: '7', code: /./, state, iss: app().config.baseUrl });
      const omitted = await authorizationParams(registered, { redirect_uri: undefined });
      expectRedirect(await submitApproval(app(), omitted.params, user.key), withQuery, {
        tenant: '7',
        code: /./,
        state: omitted.state,
        iss: app().config.baseUrl,
      });

      const two = await setup({ redirectUris: [REDIRECT_URI, 'http://127.0.0.1:8765/cb'] });
      const ambiguous = await authorizationParams(two.registered, { redirect_uri: undefined });
      expect((await getAuthorize(app(), ambiguous.params)).status).toBe(400);
      const second = await authorizationParams(two.registered, { redirect_uri: 'http://127.0.0.1:8765/cb' });
      expectRedirect(await submitApproval(app(), second.params, two.user.key), 'http://127.0.0.1:8765/cb', {
        code: /./,
        state: second.state,
        iss: app().config.baseUrl,
      });
    });
  });

  it('answers a malformed request (a repeated parameter, no form) with a 400 page, never JSON or a redirect', async () => {
    const { user, registered } = await setup();
    const { params } = await authorizationParams(registered);
    const repeated = await app().request({ url: `/oauth/authorize?${params}&state=another-state-value` });
    expect(repeated.status).toBe(400);
    expectPageHeaders(repeated);
    expect(repeated.body).toContain('<h1>This application cannot be connected</h1>');

    const fields = hiddenFields((await getAuthorize(app(), params)).body);
    const twice = await app().request({
      method: 'POST',
      url: '/oauth/authorize',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `${new URLSearchParams({ ...fields, api_key: user.key, action: 'approve' })}&action=cancel`,
    });
    expect(twice.status).toBe(400);
    expectPageHeaders(twice);
    const bare = await app().request({ method: 'POST', url: '/oauth/authorize' });
    expect(bare.status).toBe(400);
    expectPageHeaders(bare);
    expect(await connectionsOf(user.accountId)).toBe(0);
  });

  describe('POST: Connect or Cancel', () => {
    it('Connect with a key holding the scopes: 303 with code, state and iss (Cache-Control: no-store), and a connection recorded', async () => {
      const { user, registered } = await setup();
      const { params, state } = await authorizationParams(registered);
      const response = await submitApproval(app(), params, user.key);
      // The address carries the code: no cache between the browser and the app may keep the answer.
      expect(response.headers['cache-control']).toBe('no-store');
      expectRedirect(response, REDIRECT_URI, { code: /^[A-Za-z0-9_-]{43}$/, state, iss: app().config.baseUrl });
      expect(await connectionsOf(user.accountId)).toBe(1);
    });

    it('Cancel: 303 with error=access_denied, state and iss; nothing approved', async () => {
      const { user, registered } = await setup();
      const { params, state } = await authorizationParams(registered);
      const response = await submitApproval(app(), params, '', 'cancel');
      expectRedirect(response, REDIRECT_URI, { error: 'access_denied', error_description: /./, state, iss: app().config.baseUrl });
      expect(await connectionsOf(user.accountId)).toBe(0);
    });

    it('an invalid key shows the page again (401); a key lacking a scope too (403); no code is issued', async () => {
      const { user, registered } = await setup({ scopes: ['resources:read', 'events:read'] });
      const narrow = await app().request({ method: 'POST', url: '/api/v1/keys', key: user.key, body: { name: 'narrow', scopes: ['resources:read'] } });
      const revoked = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: user.key,
        body: { name: 'gone', scopes: ['resources:read', 'events:read'] },
      });
      await app().request({ method: 'DELETE', url: `/api/v1/keys/${revoked.json.id}`, key: user.key });
      const { params } = await authorizationParams(registered);
      const cases: Array<[string, number]> = [
        ['', 401],
        ['ddk_not-a-key', 401],
        ['dda_an-access-token-is-not-a-key', 401],
        [revoked.json.key, 401],
        [narrow.json.key, 403],
      ];
      for (const [key, status] of cases) {
        const response = await submitApproval(app(), params, key);
        expect(response.status).toBe(status);
        expectPageHeaders(response);
        expect(response.body).toMatch(/<p class="error" role="alert" id="error">[^<]+<\/p>/);
        expect(response.body).toContain('<title>Error: Connect Sensor Dashboard</title>');
        expect(response.body).toMatch(/<input [^>]*autofocus aria-invalid="true" aria-describedby="error api-key-hint">/);
        if (status === 403) expect(response.body).toContain('events:read');
        // The page again, with a fresh form that still works.
        const again = await app().request({
          method: 'POST',
          url: '/oauth/authorize',
          ...form({ ...hiddenFields(response.body), api_key: user.key, action: 'approve' }),
        });
        expect(again.status).toBe(303);
      }
      expect(await connectionsOf(user.accountId)).toBe(cases.length);
    });

    it('refuses a tampered, missing, foreign or stale form token with a 400 page, never a redirect', async () => {
      const { user, registered } = await setup({ redirectUris: [REDIRECT_URI, 'https://client.example.com/other'] });
      const { params } = await authorizationParams(registered);
      const page = await getAuthorize(app(), params);
      const fields = hiddenFields(page.body);
      const other = await authorizationParams(registered);
      const otherFields = hiddenFields((await getAuthorize(app(), other.params)).body);
      const tampered: Array<Record<string, string>> = [
        { ...fields, scope: 'resources:read' },
        { ...fields, state: 'another-state-value' },
        { ...fields, redirect_uri: 'https://client.example.com/other' },
        { ...fields, code_challenge: otherFields.code_challenge as string },
        { ...fields, csrf: otherFields.csrf as string },
        { ...fields, csrf: `${Date.now() + 3_600_000}.${(fields.csrf as string).split('.')[1]}` },
        { ...fields, csrf: '' },
        Object.fromEntries(Object.entries(fields).filter(([name]) => name !== 'csrf')),
      ];
      for (const submitted of tampered) {
        const response = await app().request({ method: 'POST', url: '/oauth/authorize', ...form({ ...submitted, api_key: user.key, action: 'approve' }) });
        expect(response.status).toBe(400);
        expectPageHeaders(response);
        expect(response.body).toContain('role="alert"');
      }
      // Cancel too needs the genuine form: no redirect on a forged one.
      const forgedCancel = await app().request({ method: 'POST', url: '/oauth/authorize', ...form({ ...fields, csrf: 'x', action: 'cancel' }) });
      expect(forgedCancel.status).toBe(400);

      // Neither Connect nor Cancel.
      const neither = await app().request({ method: 'POST', url: '/oauth/authorize', ...form({ ...otherFields, api_key: user.key, action: 'maybe' }) });
      expect(neither.status).toBe(400);
      expectPageHeaders(neither);

      // The form lasts 15 minutes.
      clock.advance(15 * 60_000 + 1);
      const stale = await app().request({ method: 'POST', url: '/oauth/authorize', ...form({ ...fields, api_key: user.key, action: 'approve' }) });
      expect(stale.status).toBe(400);
      expectPageHeaders(stale);
      expect(await connectionsOf(user.accountId)).toBe(0);

      // An unknown client or redirect URI in the form: the page, not a redirect.
      const unknown = await app().request({
        method: 'POST',
        url: '/oauth/authorize',
        ...form({ ...otherFields, client_id: 'ddc_unknown', api_key: user.key, action: 'approve' }),
      });
      expect(unknown.status).toBe(400);
      expectPageHeaders(unknown);
      expect(await connectionsOf(user.accountId)).toBe(0);
    });
  });
});

describe('the issuer behind a proxy (BASE_URL)', () => {
  const app = useTestApp({ env: { BASE_URL: 'https://devdata.example.com/' } });

  it('is BASE_URL without its trailing slash, in the metadata and in every iss', async () => {
    const metadata = await app().request({ url: '/.well-known/oauth-authorization-server' });
    expect(metadata.json).toMatchObject({
      issuer: 'https://devdata.example.com',
      authorization_endpoint: 'https://devdata.example.com/oauth/authorize',
      token_endpoint: 'https://devdata.example.com/oauth/token',
      revocation_endpoint: 'https://devdata.example.com/oauth/revoke',
    });
    const user = await app().account();
    const registered = await registerApp(app(), user.key);
    const approved = await authorizationParams(registered);
    expect(new URL((await submitApproval(app(), approved.params, user.key)).headers.location as string).searchParams.get('iss')).toBe(
      'https://devdata.example.com',
    );
    const refused = await authorizationParams(registered, { code_challenge_method: 'plain' });
    expect(new URL((await getAuthorize(app(), refused.params)).headers.location as string).searchParams.get('iss')).toBe('https://devdata.example.com');
  });
});
