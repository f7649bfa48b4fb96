// Registered applications (/api/v1/apps, docs/decisions.md: "Applications and OAuth"): public and confidential apps, their
// redirect-URI and scope rules, the secret shown once and rotated, isolation between accounts,
// every refusal with its status and nothing written, and the audit records.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestApp, type TestAccount, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const validApp = {
  name: 'Dashboard',
  type: 'public',
  redirectUris: ['https://dashboard.example.com/callback'],
  scopes: ['resources:read', 'events:read'],
};

describe('/api/v1/apps', () => {
  const app = useTestApp();

  function register(key: string, body: unknown): Promise<TestResponse> {
    return app().request({ method: 'POST', url: '/api/v1/apps', key, body });
  }

  async function registered(caller: TestAccount, body: Record<string, unknown> = {}): Promise<any> {
    const response = await register(caller.key, { ...validApp, ...body });
    expect(response.status).toBe(201);
    return response.json;
  }

  async function appCount(caller: TestAccount): Promise<number> {
    const list = await app().request({ url: '/api/v1/apps', key: caller.key });
    expect(list.status).toBe(200);
    return list.json.data.length;
  }

  async function auditOf(caller: TestAccount, type: string): Promise<any[]> {
    const response = await app().request({ url: `/api/v1/audit?type=${encodeURIComponent(type)}`, key: caller.key });
    expect(response.status).toBe(200);
    return response.json.data;
  }

  describe('POST', () => {
    it('registers a public app (201) without a secret', async () => {
      const caller = await app().account();
      const response = await register(caller.key, validApp);
      expect(response.status).toBe(201);
      expect(response.json).toEqual({
        id: expect.stringMatching(/^app_[A-Za-z0-9_-]{22,}$/),
        clientId: expect.stringMatching(/^ddc_[A-Za-z0-9_-]{22,}$/),
        name: 'Dashboard',
        type: 'public',
        redirectUris: ['https://dashboard.example.com/callback'],
        scopes: ['resources:read', 'events:read'],
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      });
      expect(response.json).not.toHaveProperty('clientSecret');
    });

    it('registers a confidential app (201) with its secret shown once and stored hashed', async () => {
      const caller = await app().account();
      const response = await register(caller.key, { ...validApp, name: '  Backend sync  ', type: 'confidential' });
      expect(response.status).toBe(201);
      expect(response.json.name).toBe('Backend sync');
      expect(response.json.type).toBe('confidential');
      const secret = response.json.clientSecret as string;
      expect(secret).toMatch(/^ddcs_[A-Za-z0-9_-]{43,}$/);

      const got = await app().request({ url: `/api/v1/apps/${response.json.id}`, key: caller.key });
      expect(got.status).toBe(200);
      expect(got.json).not.toHaveProperty('clientSecret');
      const list = await app().request({ url: '/api/v1/apps', key: caller.key });
      expect(list.body).not.toContain(secret);

      const row = await app().context.storage.db.selectFrom('apps').selectAll().where('id', '=', response.json.id).executeTakeFirstOrThrow();
      expect(row.client_secret_hash).toBe(createHash('sha256').update(secret).digest('hex'));
      expect(JSON.stringify(row)).not.toContain(secret);
    });

    it('accepts http only to loopback hosts (RFC 8252), and folds duplicates', async () => {
      const caller = await app().account();
      const uris = ['http://127.0.0.1:8123/cb', 'http://localhost/cb', 'http://[::1]:9000/cb', 'https://app.example.com/cb?x=1'];
      const response = await register(caller.key, { ...validApp, redirectUris: [...uris.slice(0, 4), uris[0]], scopes: ['resources:read', 'resources:read'] });
      expect(response.status).toBe(201);
      expect(response.json.redirectUris).toEqual(uris.slice(0, 4));
      expect(response.json.scopes).toEqual(['resources:read']);
    });

    it('refuses bad redirect URIs with 400 naming each one, and writes nothing', async () => {
      const caller = await app().account();
      const bad = [
        'http://example.com/callback', // http to a non-loopback host
        'https://app.example.com/cb#section', // fragment
        '/callback', // relative
        'https://user:pw@app.example.com/cb', // user information
        'ftp://app.example.com/cb',
        'http://10.0.0.1/cb',
      ];
      const response = await register(caller.key, { ...validApp, redirectUris: ['https://ok.example.com/cb', ...bad] });
      expectError(response, 400, 'invalid_request');
      expect(response.json.error.details.map((detail: { path: string }) => detail.path)).toEqual(bad.map((_, index) => `/redirectUris/${index + 1}`));
      for (const uri of bad) {
        const one = await register(caller.key, { ...validApp, redirectUris: [uri] });
        expectError(one, 400, 'invalid_request');
        expect(one.json.error.details).toEqual([{ path: '/redirectUris/0', message: expect.any(String) }]);
      }
      expect(await appCount(caller)).toBe(0);
    });

    it('needs 1-10 redirect URIs, a name, a known type and no unknown fields (400)', async () => {
      const caller = await app().account();
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ ...validApp, redirectUris: [] }, '/redirectUris'],
        [{ ...validApp, redirectUris: Array.from({ length: 11 }, (_, i) => `https://a.example.com/${i}`) }, '/redirectUris'],
        [{ ...validApp, name: '   ' }, '/name'],
        [{ ...validApp, name: 'Bell\u0007' }, '/name'],
        [{ ...validApp, name: 'x'.repeat(101) }, '/name'],
        [{ ...validApp, type: 'native' }, '/type'],
        [{ ...validApp, scopes: ['resources:read', 'nonsense:scope'] }, '/scopes/1'],
        [{ ...validApp, clientSecret: 'ddcs_mine' }, '/clientSecret'],
        [{ name: 'x', type: 'public', scopes: [] }, '/redirectUris'],
      ];
      for (const [body, path] of cases) {
        const response = await register(caller.key, body);
        expectError(response, 400, 'invalid_request');
        expect(response.json.error.details.map((detail: { path: string }) => detail.path)).toContain(path);
      }
      expect(await appCount(caller)).toBe(0);
    });

    it('refuses keys:manage and apps:manage as app scopes (400) even to a caller holding them', async () => {
      const caller = await app().account();
      for (const scope of ['keys:manage', 'apps:manage']) {
        const response = await register(caller.key, { ...validApp, scopes: ['resources:read', scope] });
        expectError(response, 400, 'invalid_request');
        expect(response.json.error.details).toEqual([{ path: '/scopes/1', message: expect.stringContaining(scope) }]);
      }
      expect(await appCount(caller)).toBe(0);
    });

    it('keeps app scopes within the caller’s scopes (403)', async () => {
      const caller = await app().account(['apps:manage', 'resources:read']);
      const response = await register(caller.key, { ...validApp, scopes: ['resources:read', 'events:read'] });
      expectError(response, 403, 'insufficient_scope');
      expect(await appCount(caller)).toBe(0);
      const within = await register(caller.key, { ...validApp, scopes: ['resources:read'] });
      expect(within.status).toBe(201);
    });

    it('needs apps:manage (403), a credential (401) and JSON (415)', async () => {
      const noScope = await app().account(['resources:read', 'events:read']);
      const forbidden = await register(noScope.key, validApp);
      expectError(forbidden, 403, 'insufficient_scope');
      expect(forbidden.headers['www-authenticate']).toBe('Bearer realm="devdata", error="insufficient_scope", scope="apps:manage"');
      expectError(await app().request({ url: '/api/v1/apps', key: noScope.key }), 403, 'insufficient_scope');

      const anonymous = await app().request({ method: 'POST', url: '/api/v1/apps', body: validApp });
      expectError(anonymous, 401, 'unauthorized');
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="devdata"');

      const caller = await app().account();
      const form = await app().request({
        method: 'POST',
        url: '/api/v1/apps',
        key: caller.key,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'name=x&type=public',
      });
      expectError(form, 415, 'unsupported_media_type');
      const malformed = await app().request({
        method: 'POST',
        url: '/api/v1/apps',
        key: caller.key,
        headers: { 'content-type': 'application/json' },
        body: '{"name":',
      });
      expectError(malformed, 400, 'invalid_request');
      expect(await appCount(caller)).toBe(0);
    });
  });

  describe('GET, PATCH, DELETE, rotate-secret', () => {
    it('lists the account’s apps in creation order and gets one', async () => {
      const caller = await app().account();
      const first = await registered(caller, { name: 'First' });
      const second = await registered(caller, { name: 'Second', type: 'confidential' });
      const list = await app().request({ url: '/api/v1/apps', key: caller.key });
      expect(list.status).toBe(200);
      const { clientSecret: _secret, ...secondShown } = second;
      expect(list.json).toEqual({ data: [first, secondShown] });
      const got = await app().request({ url: `/api/v1/apps/${first.id}`, key: caller.key });
      expect(got.status).toBe(200);
      expect(got.json).toEqual(first);
    });

    it('hides another account’s apps (404 on every route) and an unknown id (404)', async () => {
      const owner = await app().account();
      const other = await app().account();
      const created = await registered(owner, { type: 'confidential' });
      expect((await app().request({ url: '/api/v1/apps', key: other.key })).json).toEqual({ data: [] });
      const attempts = [
        { method: 'GET', url: `/api/v1/apps/${created.id}` },
        { method: 'PATCH', url: `/api/v1/apps/${created.id}`, body: { name: 'Stolen' } },
        { method: 'DELETE', url: `/api/v1/apps/${created.id}` },
        { method: 'POST', url: `/api/v1/apps/${created.id}/rotate-secret` },
        { method: 'GET', url: '/api/v1/apps/app_doesnotexist' },
      ];
      for (const attempt of attempts) expectError(await app().request({ ...attempt, key: other.key }), 404, 'not_found');
      const unchanged = await app().request({ url: `/api/v1/apps/${created.id}`, key: owner.key });
      expect(unchanged.json.name).toBe(created.name);
      expect(unchanged.json.updatedAt).toBe(created.updatedAt);
    });

    it('changes name, redirect URIs and scopes with PATCH, under the same rules', async () => {
      const caller = await app().account(['apps:manage', 'resources:read', 'events:read', 'usage:read']);
      const created = await registered(caller);
      const response = await app().request({
        method: 'PATCH',
        url: `/api/v1/apps/${created.id}`,
        key: caller.key,
        body: { name: 'Renamed', redirectUris: ['http://127.0.0.1:7000/cb'], scopes: ['resources:read'] },
      });
      expect(response.status).toBe(200);
      expect(response.json).toEqual({
        ...created,
        name: 'Renamed',
        redirectUris: ['http://127.0.0.1:7000/cb'],
        scopes: ['resources:read'],
        updatedAt: expect.stringMatching(ISO_MS),
      });

      const refusals: Array<[Record<string, unknown>, number, string]> = [
        [{ type: 'confidential' }, 400, 'invalid_request'],
        [{}, 400, 'invalid_request'],
        [{ redirectUris: ['http://app.example.com/cb'] }, 400, 'invalid_request'],
        [{ redirectUris: ['https://app.example.com/cb#x'] }, 400, 'invalid_request'],
        [{ scopes: ['keys:manage'] }, 400, 'invalid_request'],
        [{ scopes: ['webhooks:manage'] }, 403, 'insufficient_scope'],
        [{ name: 'x', bogus: true }, 400, 'invalid_request'],
      ];
      for (const [body, status, code] of refusals) {
        expectError(await app().request({ method: 'PATCH', url: `/api/v1/apps/${created.id}`, key: caller.key, body }), status, code);
      }
      const after = await app().request({ url: `/api/v1/apps/${created.id}`, key: caller.key });
      expect(after.json).toEqual(response.json);
    });

    it('rotates a confidential app’s secret (the old one stops at once) and refuses it for a public app (409)', async () => {
      const caller = await app().account();
      const confidential = await registered(caller, { type: 'confidential' });
      const rotated = await app().request({ method: 'POST', url: `/api/v1/apps/${confidential.id}/rotate-secret`, key: caller.key });
      expect(rotated.status).toBe(200);
      expect(rotated.json).toEqual({ ...confidential, clientSecret: expect.stringMatching(/^ddcs_/), updatedAt: expect.stringMatching(ISO_MS) });
      expect(rotated.json.clientSecret).not.toBe(confidential.clientSecret);

      const basic = (secret: string) => `Basic ${Buffer.from(`${confidential.clientId}:${secret}`).toString('base64')}`;
      const tokenWith = (secret: string) =>
        app().request({
          method: 'POST',
          url: '/oauth/token',
          headers: { authorization: basic(secret), 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=client_credentials&scope=resources%3Aread',
        });
      const old = await tokenWith(confidential.clientSecret);
      expect(old.status).toBe(401);
      expect(old.json).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
      expect((await tokenWith(rotated.json.clientSecret)).status).toBe(200);

      const publicApp = await registered(caller);
      expectError(await app().request({ method: 'POST', url: `/api/v1/apps/${publicApp.id}/rotate-secret`, key: caller.key }), 409, 'conflict');
    });

    it('deletes an app (204): it is gone, its client id is unknown and its tokens stop at once', async () => {
      const caller = await app().account();
      const created = await registered(caller, { type: 'confidential' });
      const token = await app().request({
        method: 'POST',
        url: '/oauth/token',
        headers: {
          authorization: `Basic ${Buffer.from(`${created.clientId}:${created.clientSecret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: 'grant_type=client_credentials',
      });
      expect(token.status).toBe(200);
      expect((await app().request({ url: '/api/v1/resources', key: token.json.access_token })).status).toBe(200);

      const deleted = await app().request({ method: 'DELETE', url: `/api/v1/apps/${created.id}`, key: caller.key });
      expect(deleted.status).toBe(204);
      expect(deleted.body).toBe('');
      expectError(await app().request({ url: `/api/v1/apps/${created.id}`, key: caller.key }), 404, 'not_found');
      expectError(await app().request({ method: 'DELETE', url: `/api/v1/apps/${created.id}`, key: caller.key }), 404, 'not_found');
      expectError(await app().request({ url: '/api/v1/resources', key: token.json.access_token }), 401, 'unauthorized');
      const page = await app().request({ url: `/oauth/authorize?client_id=${created.clientId}&response_type=code` });
      expect(page.status).toBe(400);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
    });
  });

  it('records app.created, app.updated, app.secret_rotated and app.deleted with the actor', async () => {
    const caller = await app().account();
    const created = await registered(caller, { type: 'confidential' });
    await app().request({ method: 'PATCH', url: `/api/v1/apps/${created.id}`, key: caller.key, body: { name: 'Renamed', scopes: ['resources:read'] } });
    await app().request({ method: 'POST', url: `/api/v1/apps/${created.id}/rotate-secret`, key: caller.key });
    await app().request({ method: 'DELETE', url: `/api/v1/apps/${created.id}`, key: caller.key });

    const actor = { kind: 'api_key', id: caller.keyId };
    const target = { type: 'app', id: created.id };
    const records = await auditOf(caller, 'app.*');
    expect(records.map((record) => record.type)).toEqual(['app.created', 'app.updated', 'app.secret_rotated', 'app.deleted']);
    expect(records[0]).toMatchObject({ actor, target, data: { name: 'Dashboard', clientId: created.clientId, type: 'confidential' } });
    expect(records[1]).toMatchObject({ actor, target, data: { changed: ['name', 'scopes'] } });
    expect(records[2]).toMatchObject({ actor, target });
    expect(records[3]).toMatchObject({ actor, target, data: { clientId: created.clientId } });
    expect(JSON.stringify(records)).not.toContain(created.clientSecret);
  });
});
