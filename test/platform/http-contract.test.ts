// The HTTP contract every route shares (docs/decisions.md: "HTTP contract", spec "Errors" and "Limits"): request ids,
// the error body, authentication challenges, body parsing, content types, size limits, CORS and
// the rate limit. Everything goes through the real app, so /openapi.json is checked as well.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, TestApp, useTestApp, type TestAccount, type TestResponse } from '../support/app.js';

const KIB = 1024;
const MIB = 1024 * 1024;

function header(response: TestResponse, name: string): string | undefined {
  const value = response.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** A comma-separated header value as lower-case tokens. */
function tokens(response: TestResponse, name: string): string[] {
  return (header(response, name) ?? '')
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== '');
}

function expectErrorBody(response: TestResponse, status: number, code: string): void {
  expect(response.status, response.body).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.json).toEqual({
    error: expect.objectContaining({ code, message: expect.any(String), requestId: header(response, 'x-request-id') }),
  });
  expect(Object.keys(response.json.error).sort()).toEqual(expect.arrayContaining(['code', 'message', 'requestId']));
  for (const key of Object.keys(response.json.error)) expect(['code', 'message', 'requestId', 'details']).toContain(key);
  expect(response.json.error.message.length).toBeGreaterThan(0);
}

function expectRateLimitHeaders(response: TestResponse): void {
  for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
    expect(header(response, name) ?? '(missing)', `${name} on a ${response.status} response`).toMatch(/^\d+$/);
  }
  expect(Number(header(response, 'ratelimit-reset'))).toBeGreaterThanOrEqual(1);
}

function detailPaths(response: TestResponse): string[] {
  const details = response.json?.error?.details;
  expect(Array.isArray(details), response.body).toBe(true);
  for (const detail of details) {
    expect(detail).toEqual(expect.objectContaining({ path: expect.any(String), message: expect.any(String) }));
  }
  return (details as Array<{ path: string }>).map((detail) => detail.path);
}

describe('HTTP contract', () => {
  const app = useTestApp();
  let manager: TestAccount;
  let reader: TestAccount;

  const keysOf = async (account: TestAccount) => {
    const response = await app().request({ url: '/api/v1/keys', key: account.key });
    expect(response.status).toBe(200);
    return (response.json.data as Array<{ id: string }>).map((key) => key.id).sort();
  };

  it('provisions accounts', async () => {
    manager = await app().account();
    reader = await app().account(['resources:read']);
  });

  describe('X-Request-Id and common headers', () => {
    it('generates a request id when none is sent', async () => {
      const first = await app().request({ url: '/api/v1' });
      const second = await app().request({ url: '/api/v1' });
      expect(first.status).toBe(200);
      const id = header(first, 'x-request-id');
      expect(id).toMatch(/^[A-Za-z0-9._~:@+=/-]{1,128}$/);
      expect(header(second, 'x-request-id')).not.toBe(id);
    });

    it('echoes a safe incoming request id', async () => {
      const response = await app().request({ url: '/api/v1', headers: { 'x-request-id': 'abc-123' } });
      expect(response.status).toBe(200);
      expect(header(response, 'x-request-id')).toBe('abc-123');
      const max = 'a'.repeat(128);
      expect(header(await app().request({ url: '/api/v1', headers: { 'x-request-id': max } }), 'x-request-id')).toBe(max);
    });

    it('replaces an unsafe incoming request id', async () => {
      for (const unsafe of ['a'.repeat(129), 'x'.repeat(200), 'has spaces in it', 'semi;colon', '<script>', '']) {
        const response = await app().request({ url: '/api/v1', headers: { 'x-request-id': unsafe } });
        expect(response.status).toBe(200);
        const id = header(response, 'x-request-id');
        expect(id).toBeDefined();
        expect(id).not.toBe(unsafe);
        expect(id).toMatch(/^[A-Za-z0-9._~:@+=/-]{1,128}$/);
      }
    });

    it('carries the request id, nosniff and the rate-limit headers on 200, 401, 403, 404 and 400', async () => {
      const responses = [
        await app().request({ url: '/api/v1', headers: { 'x-request-id': 'ok-1' } }),
        await app().request({ url: '/api/v1/auth/me', headers: { 'x-request-id': 'unauth-1' } }),
        await app().request({ url: '/api/v1/keys', key: reader.key, headers: { 'x-request-id': 'forbidden-1' } }),
        await app().request({ url: '/api/v1/nowhere', headers: { 'x-request-id': 'missing-1' } }),
        await app().request({
          method: 'POST',
          url: '/api/v1/echo',
          body: '{"message":',
          headers: { 'content-type': 'application/json', 'x-request-id': 'bad-1' },
        }),
      ];
      expect(responses.map((response) => response.status)).toEqual([200, 401, 403, 404, 400]);
      expect(responses.map((response) => header(response, 'x-request-id'))).toEqual(['ok-1', 'unauth-1', 'forbidden-1', 'missing-1', 'bad-1']);
      for (const response of responses) {
        expect(header(response, 'x-content-type-options')).toBe('nosniff');
        expectRateLimitHeaders(response);
        if (response.status >= 400) expect(response.json.error.requestId).toBe(header(response, 'x-request-id'));
      }
    });

    it('sends nosniff on every kind of response', async () => {
      const responses = [
        await app().request({ url: '/health' }),
        await app().request({ url: '/openapi.json' }),
        await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key, body: 'x', headers: { 'content-type': 'text/plain' } }),
        await app().request({ method: 'POST', url: '/api/v1/echo', body: { message: 'x'.repeat(17 * KIB) } }),
      ];
      for (const response of responses) expect(header(response, 'x-content-type-options')).toBe('nosniff');
    });
  });

  describe('404', () => {
    it('answers an unknown route with the error body and the contract headers', async () => {
      const response = await app().request({ url: '/api/v1/no-such-thing?x=1' });
      expectErrorBody(response, 404, 'not_found');
      expect(response.json.error.details).toBeUndefined();
      expectRateLimitHeaders(response);
      expect(header(response, 'x-content-type-options')).toBe('nosniff');
    });

    it('answers an unknown route outside /api/v1 the same way', async () => {
      expectErrorBody(await app().request({ url: '/nope' }), 404, 'not_found');
    });
  });

  describe('405', () => {
    it('answers a method the path does not take with 405 method_not_allowed and Allow, without a credential', async () => {
      const cases: Array<[method: string, url: string, allow: string]> = [
        ['PUT', '/api/v1', 'GET, HEAD, OPTIONS'],
        ['PUT', '/api/v1/resources/res_anything', 'GET, HEAD, PATCH, DELETE, OPTIONS'],
        ['DELETE', '/api/v1/events', 'GET, HEAD, POST, OPTIONS'],
        // The stream has no HEAD route (it would hold a place and send nothing): Allow says so.
        ['HEAD', '/api/v1/events/stream', 'GET, OPTIONS'],
        ['PATCH', '/api/v1/keys', 'GET, HEAD, POST, OPTIONS'],
        ['POST', '/api/v1/%72esources/res_x', 'GET, HEAD, PATCH, DELETE, OPTIONS'],
        // No CORS on the developer routes and /health: OPTIONS is no method of theirs.
        ['OPTIONS', '/health', 'GET, HEAD'],
        ['DELETE', '/api/v1/developer/session', 'GET, HEAD'],
      ];
      for (const [method, url, allow] of cases) {
        for (const key of [undefined, manager.key]) {
          const response = await app().request({ method, url, key });
          expect([response.status, header(response, 'allow')], `${method} ${url}`).toEqual([405, allow]);
          expect(header(response, 'www-authenticate')).toBeUndefined();
          expectRateLimitHeaders(response);
          if (method === 'HEAD') continue;
          expectErrorBody(response, 405, 'method_not_allowed');
          expect(response.json.error.message).toContain(`does not take ${method}; it takes ${allow}`);
        }
      }
    });

    it('still answers 404 for a path no route has, whatever the method', async () => {
      for (const [method, url] of [
        ['PUT', '/api/v1/nope'],
        ['GET', '/api/v1/resources/res_x/extra'],
        ['DELETE', '/api/v1/developer%2Fsession'],
      ] as const) {
        const response = await app().request({ method, url, key: manager.key });
        expectErrorBody(response, 404, 'not_found');
        expect(header(response, 'allow')).toBeUndefined();
      }
    });
  });

  describe('401', () => {
    it('challenges a request without a credential', async () => {
      const response = await app().request({ url: '/api/v1/auth/me' });
      expectErrorBody(response, 401, 'unauthorized');
      expect(header(response, 'www-authenticate')).toBe('Bearer realm="devdata"');
      expectRateLimitHeaders(response);
    });

    it('says invalid_token for a bogus credential, through Authorization: Bearer and X-API-Key', async () => {
      const requests: Array<{ headers: Record<string, string> }> = [
        { headers: { authorization: 'Bearer ddk_bogus' } },
        { headers: { authorization: 'Bearer not-even-a-key' } },
        { headers: { 'x-api-key': 'ddk_bogus' } },
        { headers: { 'x-api-key': 'nonsense' } },
      ];
      for (const options of requests) {
        const response = await app().request({ url: '/api/v1/auth/me', ...options });
        expectErrorBody(response, 401, 'unauthorized');
        const challenge = header(response, 'www-authenticate') ?? '';
        expect(challenge).toMatch(/^Bearer /);
        expect(challenge).toContain('realm="devdata"');
        expect(challenge).toContain('error="invalid_token"');
      }
    });

    it('accepts a valid key through either header', async () => {
      const bearer = await app().request({ url: '/api/v1/auth/me', headers: { authorization: `Bearer ${manager.key}` } });
      const apiKey = await app().request({ url: '/api/v1/auth/me', headers: { 'x-api-key': manager.key } });
      expect(bearer.status).toBe(200);
      expect(apiKey.status).toBe(200);
      expect(apiKey.json.credential.id).toBe(manager.keyId);
    });

    it('refuses a revoked key at once', async () => {
      const created = await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key, body: { name: 'short-lived', scopes: [] } });
      expect(created.status).toBe(201);
      expect((await app().request({ url: '/api/v1/auth/me', key: created.json.key })).status).toBe(200);
      expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${created.json.id}`, key: manager.key })).status).toBe(204);
      const response = await app().request({ url: '/api/v1/auth/me', key: created.json.key });
      expectErrorBody(response, 401, 'unauthorized');
      expect(header(response, 'www-authenticate')).toContain('error="invalid_token"');
    });
  });

  describe('403', () => {
    it('answers insufficient_scope with an RFC 6750 challenge naming the scope', async () => {
      const response = await app().request({ url: '/api/v1/keys', key: reader.key });
      expectErrorBody(response, 403, 'insufficient_scope');
      const challenge = header(response, 'www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer /);
      expect(challenge).toContain('error="insufficient_scope"');
      expect(challenge).toContain('scope="keys:manage"');
    });

    it('checks the scope before reading the body', async () => {
      const response = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: reader.key,
        body: '{not json',
        headers: { 'content-type': 'application/json' },
      });
      expectErrorBody(response, 403, 'insufficient_scope');
    });
  });

  describe('400', () => {
    it('refuses malformed JSON, unknown, missing and mistyped fields, and creates nothing', async () => {
      const before = await keysOf(manager);

      const malformed = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: manager.key,
        body: '{"name": "x", "scopes": [',
        headers: { 'content-type': 'application/json' },
      });
      expectErrorBody(malformed, 400, 'invalid_request');

      const unknown = await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key, body: { name: 'x', scopes: [], bogus: 1 } });
      expectErrorBody(unknown, 400, 'invalid_request');
      expect(detailPaths(unknown)).toContain('/bogus');

      const missing = await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key, body: { scopes: [] } });
      expectErrorBody(missing, 400, 'invalid_request');
      expect(detailPaths(missing)).toContain('/name');

      const mistyped = await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key, body: { name: 42, scopes: [] } });
      expectErrorBody(mistyped, 400, 'invalid_request');
      expect(detailPaths(mistyped)).toEqual(['/name']);

      // No coercion of body values: a string is not an integer, a string is not an array.
      const coerced = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: manager.key,
        body: { name: 'x', scopes: 'keys:manage', expiresInDays: '30' },
      });
      expectErrorBody(coerced, 400, 'invalid_request');
      expect(detailPaths(coerced)).toEqual(expect.arrayContaining(['/scopes', '/expiresInDays']));

      const notAnObject = await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key, body: [1, 2] });
      expectErrorBody(notAnObject, 400, 'invalid_request');

      expect(await keysOf(manager)).toEqual(before);
    });

    it('names every failing field in the message, each once', async () => {
      const response = await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key, body: { name: '', scopes: [], bogus: 1 } });
      expectErrorBody(response, 400, 'invalid_request');
      const details: Array<{ path: string; message: string }> = response.json.error.details;
      expect(new Set(details.map((detail) => `${detail.path} ${detail.message}`)).size).toBe(details.length);
      expect(response.json.error.message).toMatch(/^Invalid body: /);
      for (const detail of details) expect(response.json.error.message).toContain(`${detail.path} ${detail.message}`);
      expect(response.json.error.message).toContain('/bogus is not a field of this request; allowed: name, scopes, expiresInDays');
    });
  });

  describe('415', () => {
    it('refuses bodies that are not JSON, and a body without a content type', async () => {
      const before = await keysOf(manager);
      const json = JSON.stringify({ name: 'typed', scopes: [] });
      for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'text/json']) {
        const response = await app().request({
          method: 'POST',
          url: '/api/v1/keys',
          key: manager.key,
          body: contentType === 'application/x-www-form-urlencoded' ? 'name=typed&scopes=' : json,
          headers: { 'content-type': contentType },
        });
        expectErrorBody(response, 415, 'unsupported_media_type');
      }
      const untyped = await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key, body: json });
      expectErrorBody(untyped, 415, 'unsupported_media_type');
      expect(await keysOf(manager)).toEqual(before);
    });

    it('refuses a route that needs a body when no content type and no body are sent', async () => {
      const response = await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key });
      expect([400, 415]).toContain(response.status);
      expectErrorBody(response, response.status, response.status === 415 ? 'unsupported_media_type' : 'invalid_request');
    });

    it('accepts application/json with a charset', async () => {
      const response = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: manager.key,
        body: JSON.stringify({ name: 'charset', scopes: ['resources:read'] }),
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(response.status, response.body).toBe(201);
      expect(response.json.name).toBe('charset');
      expect(await keysOf(manager)).toContain(response.json.id);
    });
  });

  describe('413', () => {
    it('refuses an echo body over 16 KiB', async () => {
      const response = await app().request({ method: 'POST', url: '/api/v1/echo', body: { message: 'x'.repeat(16 * KIB) } });
      expectErrorBody(response, 413, 'payload_too_large');
      expectRateLimitHeaders(response);
    });

    it('accepts an echo body just under 16 KiB up to the validation of the message', async () => {
      // 16 KiB of JSON reaches validation (and fails it on length), not the size limit.
      const body = JSON.stringify({ message: 'x'.repeat(16 * KIB - 20) });
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(16 * KIB);
      const response = await app().request({ method: 'POST', url: '/api/v1/echo', body, headers: { 'content-type': 'application/json' } });
      expectErrorBody(response, 400, 'invalid_request');
    });

    it('refuses a body over 1 MiB', async () => {
      const before = await keysOf(manager);
      const response = await app().request({ method: 'POST', url: '/api/v1/keys', key: manager.key, body: { name: 'x'.repeat(MIB + 1), scopes: [] } });
      expectErrorBody(response, 413, 'payload_too_large');
      expect(await keysOf(manager)).toEqual(before);
    });
  });

  describe('echo', () => {
    const echo = (body: unknown) => app().request({ method: 'POST', url: '/api/v1/echo', body });

    it('counts the message length in UTF-16 code units', async () => {
      const max = '😀'.repeat(500);
      expect(max.length).toBe(1000);
      const accepted = await echo({ message: max });
      expect(accepted.status, accepted.body).toBe(200);
      expect(accepted.json.message).toBe(max);
      expect(accepted.json.receivedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

      const over = `${max}a`;
      expect(over.length).toBe(1001);
      expectErrorBody(await echo({ message: over }), 400, 'invalid_request');

      expect((await echo({ message: 'a'.repeat(1000) })).status).toBe(200);
      expectErrorBody(await echo({ message: 'a'.repeat(1001) }), 400, 'invalid_request');
    });

    it('refuses an empty message, a missing message, a non-string and extra fields', async () => {
      expect(detailPaths(await echo({ message: '' }))).toEqual(['/message']);
      expectErrorBody(await echo({ message: '' }), 400, 'invalid_request');
      expect(detailPaths(await echo({}))).toEqual(['/message']);
      expectErrorBody(await echo({ message: 5 }), 400, 'invalid_request');
      const extra = await echo({ message: 'hi', extra: true });
      expectErrorBody(extra, 400, 'invalid_request');
      expect(detailPaths(extra)).toContain('/extra');
    });

    it('needs no credential but tolerates one', async () => {
      expect((await echo({ message: 'hi' })).status).toBe(200);
      const withKey = await app().request({ method: 'POST', url: '/api/v1/echo', key: manager.key, body: { message: 'hi' } });
      expect(withKey.status).toBe(200);
    });
  });

  describe('CORS', () => {
    const origin = 'https://example.com';

    it('allows any origin on the API, without credentials, exposing the contract headers', async () => {
      for (const url of ['/api/v1', '/api/v1/capabilities']) {
        const response = await app().request({ url, headers: { origin } });
        expect(response.status).toBe(200);
        expect(header(response, 'access-control-allow-origin')).toBe('*');
        expect(header(response, 'access-control-allow-credentials')).not.toBe('true');
        const exposed = tokens(response, 'access-control-expose-headers');
        for (const name of ['x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after']) {
          expect(exposed).toContain(name);
        }
      }
    });

    it('allows any origin on error responses of the API too', async () => {
      const response = await app().request({ url: '/api/v1/auth/me', headers: { origin } });
      expect(response.status).toBe(401);
      expect(header(response, 'access-control-allow-origin')).toBe('*');
      expect(tokens(response, 'access-control-expose-headers')).toContain('www-authenticate');
    });

    it('answers a preflight without a credential', async () => {
      const response = await app().request({
        method: 'OPTIONS',
        url: '/api/v1/keys',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type',
        },
      });
      expect(response.status).toBeGreaterThanOrEqual(200);
      expect(response.status).toBeLessThan(300);
      expect(header(response, 'access-control-allow-origin')).toBe('*');
      expect(header(response, 'access-control-allow-credentials')).not.toBe('true');
      expect(tokens(response, 'access-control-allow-methods')).toContain('post');
      const allowed = tokens(response, 'access-control-allow-headers');
      expect(allowed).toEqual(expect.arrayContaining(['authorization', 'content-type', 'x-api-key']));
      expect(header(response, 'x-request-id')).toBeDefined();
      expect(header(response, 'x-content-type-options')).toBe('nosniff');
    });

    it('allows every method the API uses in a preflight (DELETE, PATCH)', async () => {
      for (const method of ['DELETE', 'PATCH']) {
        const response = await app().request({
          method: 'OPTIONS',
          url: '/api/v1/keys/key_abc',
          headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization' },
        });
        expect(response.status).toBeLessThan(300);
        expect(tokens(response, 'access-control-allow-methods')).toContain(method.toLowerCase());
      }
    });

    it('carries the rate-limit headers on a preflight too (every response does)', async () => {
      const response = await app().request({
        method: 'OPTIONS',
        url: '/api/v1/keys',
        headers: { origin, 'access-control-request-method': 'POST' },
      });
      expect(response.status).toBeLessThan(300);
      expectRateLimitHeaders(response);
    });

    it('answers an OPTIONS request that is not a preflight with the JSON error body, if with an error', async () => {
      const response = await app().request({ method: 'OPTIONS', url: '/api/v1/keys' });
      if (response.status >= 400) expectErrorBody(response, response.status, response.json?.error?.code);
      expect(header(response, 'x-request-id')).toBeDefined();
      expectRateLimitHeaders(response);
    });

    it('does not count preflights against the allowance', async () => {
      const before = await app().request({ url: '/api/v1', remoteAddress: '198.51.100.77' });
      for (let i = 0; i < 3; i++) {
        await app().request({
          method: 'OPTIONS',
          url: '/api/v1/keys',
          remoteAddress: '198.51.100.77',
          headers: { origin, 'access-control-request-method': 'POST' },
        });
      }
      const after = await app().request({ url: '/api/v1', remoteAddress: '198.51.100.77' });
      expect(Number(header(after, 'ratelimit-remaining'))).toBe(Number(header(before, 'ratelimit-remaining')) - 1);
    });

    it('gives no allow-origin to the developer routes and /health', async () => {
      const signup = await app().request({
        method: 'POST',
        url: '/api/v1/developer/signup',
        headers: { origin },
        body: { name: 'Dev', email: 'dev@example.com' },
      });
      expect(header(signup, 'access-control-allow-origin')).toBeUndefined();
      const session = await app().request({ url: '/api/v1/developer/session', headers: { origin } });
      expect(header(session, 'access-control-allow-origin')).toBeUndefined();
      const health = await app().request({ url: '/health', headers: { origin } });
      expect(health.status).toBe(200);
      expect(header(health, 'access-control-allow-origin')).toBeUndefined();
      const preflight = await app().request({
        method: 'OPTIONS',
        url: '/api/v1/developer/signup',
        headers: { origin, 'access-control-request-method': 'POST' },
      });
      expect(header(preflight, 'access-control-allow-origin')).toBeUndefined();
    });
  });
});

describe('rate limit', () => {
  // Fixed one-minute windows aligned to the clock: at :10 the window has 50 s left.
  const clock = new ManualClock(new Date('2026-01-01T00:00:10.000Z'));
  let t: TestApp;
  let first: TestAccount;
  let second: TestAccount;
  const ip = '203.0.113.7';
  const me = (key: string) => t.request({ url: '/api/v1/auth/me', key });
  const anon = (remoteAddress: string, url = '/api/v1') => t.request({ url, remoteAddress });

  beforeAll(async () => {
    t = await TestApp.start({ env: { RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_ANON_PER_MINUTE: '2' }, clock });
    first = await t.account();
    second = await t.account();
  });
  afterAll(async () => {
    // Closing runs the OpenAPI contract check over every response of this app.
    await t.close();
  });

  it('allows a key its allowance, then answers 429 with Retry-After', async () => {
    for (const remaining of [2, 1, 0]) {
      const response = await me(first.key);
      expect(response.status).toBe(200);
      expect(header(response, 'ratelimit-limit')).toBe('3');
      expect(header(response, 'ratelimit-remaining')).toBe(String(remaining));
      expect(header(response, 'ratelimit-reset')).toBe('50');
    }
    const limited = await me(first.key);
    expectErrorBody(limited, 429, 'rate_limited');
    const retryAfter = header(limited, 'retry-after') ?? '';
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    expect(header(limited, 'ratelimit-limit')).toBe('3');
    expect(header(limited, 'ratelimit-remaining')).toBe('0');
    expect(Number(header(limited, 'ratelimit-reset'))).toBeGreaterThanOrEqual(1);
    expect(header(limited, 'x-request-id')).toBe(limited.json.error.requestId);
    // A browser may read the 429 and its Retry-After (an exposed header) like any API response.
    const fromBrowser = await t.request({ url: '/api/v1/auth/me', key: first.key, headers: { origin: 'https://example.com' } });
    expect(fromBrowser.status).toBe(429);
    expect(header(fromBrowser, 'access-control-allow-origin')).toBe('*');
    expect(tokens(fromBrowser, 'access-control-expose-headers')).toContain('retry-after');
    // The same key through X-API-Key shares the bucket.
    expect((await t.request({ url: '/api/v1/auth/me', headers: { 'x-api-key': first.key } })).status).toBe(429);
  });

  it('gives a second key its own allowance', async () => {
    const other = await me(second.key);
    expect(other.status).toBe(200);
    expect(header(other, 'ratelimit-limit')).toBe('3');
    expect(header(other, 'ratelimit-remaining')).toBe('2');
  });

  it('limits anonymous requests per IP, before authentication and routing', async () => {
    expect(header(await anon(ip, '/health'), 'ratelimit-remaining')).toBe('2');
    const anonFirst = await anon(ip);
    expect(anonFirst.status).toBe(200);
    expect(header(anonFirst, 'ratelimit-limit')).toBe('2');
    expect(header(anonFirst, 'ratelimit-remaining')).toBe('1');
    expect(header(await anon(ip), 'ratelimit-remaining')).toBe('0');
    const anonLimited = await anon(ip);
    expectErrorBody(anonLimited, 429, 'rate_limited');
    expect(Number(header(anonLimited, 'retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await anon(ip, '/api/v1/auth/me')).status).toBe(429);
    expect((await anon(ip, '/api/v1/unknown')).status).toBe(429);

    const otherIp = await anon('203.0.113.8');
    expect(otherIp.status).toBe(200);
    expect(header(otherIp, 'ratelimit-remaining')).toBe('1');
  });

  it('never limits nor counts /health, even after the allowance is spent, and still sends the headers', async () => {
    for (let i = 0; i < 5; i++) {
      const health = await anon(ip, '/health');
      expect(health.status, health.body).toBe(200);
      expect(health.json).toEqual({ status: 'ok' });
      expect(header(health, 'ratelimit-limit')).toBe('2');
      expect(header(health, 'ratelimit-remaining')).toBe('0');
      expect(Number(header(health, 'ratelimit-reset'))).toBeGreaterThanOrEqual(1);
      expect(header(health, 'retry-after')).toBeUndefined();
    }
    // Nor with a key whose allowance is spent.
    const keyed = await t.request({ url: '/health', key: first.key });
    expect(keyed.status, keyed.body).toBe(200);
    expect(header(keyed, 'ratelimit-remaining')).toBe('0');
  });

  it('counts RateLimit-Reset down to 1 and starts a fresh window after a minute', async () => {
    clock.advance(49_500);
    expect(header(await anon('203.0.113.9', '/health'), 'ratelimit-reset')).toBe('1');

    clock.advance(60_000 - 49_500);
    const again = await me(first.key);
    expect(again.status).toBe(200);
    expect(header(again, 'ratelimit-remaining')).toBe('2');
    expect(header(again, 'ratelimit-reset')).toBe('50');
    const anonAgain = await anon(ip);
    expect(anonAgain.status).toBe(200);
    expect(header(anonAgain, 'ratelimit-remaining')).toBe('1');
  });
});
