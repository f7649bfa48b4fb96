import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueKey } from '../../src/operator.js';
import { ManualClock, TestApp, useTestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const COOKIE = /^__Host-service_developer_session=(dds_[A-Za-z0-9_-]{43,}); Path=\/; Secure; HttpOnly; SameSite=Strict; Max-Age=43200$/;
const EXPIRED_COOKIE = '__Host-service_developer_session=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0';

let ipCounter = 0;
/** Each test signs up from its own address, so the per-IP attempt limit of one never touches another. */
function freshIp(): string {
  ipCounter++;
  return `198.51.100.${ipCounter}`;
}

let emailCounter = 0;
function freshEmail(): string {
  emailCounter++;
  return `dev${emailCounter}-${Date.now()}@example.com`;
}

function setCookieOf(response: TestResponse): string {
  const header = response.headers['set-cookie'];
  expect(typeof header, 'exactly one Set-Cookie header').toBe('string');
  return header as string;
}

function tokenOf(response: TestResponse): string {
  const match = COOKIE.exec(setCookieOf(response));
  expect(match, setCookieOf(response)).not.toBeNull();
  return (match as RegExpExecArray)[1] as string;
}

describe('developer accounts', () => {
  const app = useTestApp();

  function signup(body: unknown, ip = freshIp(), headers: Record<string, string> = {}): Promise<TestResponse> {
    return app().request({ method: 'POST', url: '/api/v1/developer/signup', body, remoteAddress: ip, headers });
  }

  function session(token: string | undefined): Promise<TestResponse> {
    return app().request({
      url: '/api/v1/developer/session',
      headers: token === undefined ? {} : { cookie: `__Host-service_developer_session=${token}` },
    });
  }

  describe('POST /api/v1/developer/signup', () => {
    it('creates the account (201), starts a 12-hour session with the exact cookie, and returns no key', async () => {
      const email = freshEmail();
      const before = Date.now();
      const response = await signup({ name: 'Ada Lovelace', email });
      expect(response.status, response.body).toBe(201);
      expect(response.json).toEqual({
        account: { id: expect.stringMatching(/^acc_[A-Za-z0-9_-]{22,}$/), name: 'Ada Lovelace', email, createdAt: expect.stringMatching(ISO_MS) },
        session: { expiresAt: expect.stringMatching(ISO_MS) },
      });
      const expiresIn = Date.parse(response.json.session.expiresAt) - before;
      expect(expiresIn).toBeGreaterThanOrEqual(43_200_000 - 1000);
      expect(expiresIn).toBeLessThanOrEqual(43_200_000 + 60_000);
      // The cookie is written literally as decided: __Host- prefix, Path=/, Secure, HttpOnly, SameSite=Strict, 12 hours.
      const token = tokenOf(response);
      expect(setCookieOf(response)).toBe(`__Host-service_developer_session=${token}; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=43200`);
      // No API key in the answer: the operator issues the first one.
      expect(response.body).not.toMatch(/ddk_|"key"|apiKey/);
      expect(response.body).not.toContain(token);
    });

    it('stores the session token only as its SHA-256 hash', async () => {
      const response = await signup({ name: 'Hash check', email: freshEmail() });
      const token = tokenOf(response);
      const db = app().context.storage.db;
      const rows = await db.selectFrom('developer_sessions').selectAll().where('account_id', '=', response.json.account.id).execute();
      expect(rows).toHaveLength(1);
      expect(rows[0]?.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
      const everything = JSON.stringify(await db.selectFrom('developer_sessions').selectAll().execute());
      expect(everything).not.toContain(token);
      const audit = JSON.stringify(await db.selectFrom('audit_log').selectAll().execute());
      expect(audit).not.toContain(token);
    });

    it('stores the email lower-case and refuses it again in any case (409)', async () => {
      const email = freshEmail();
      const first = await signup({ name: 'First', email: email.toUpperCase() });
      expect(first.status).toBe(201);
      expect(first.json.account.email).toBe(email);
      const again = await signup({ name: 'Second', email });
      expectError(again, 409, 'conflict');
      expect(again.headers['set-cookie']).toBeUndefined();
      const mixed = await signup({ name: 'Third', email: ` ${email.toUpperCase()}` });
      expect([400, 409]).toContain(mixed.status);
      const count = await app().context.storage.db.selectFrom('accounts').select('id').where('email', '=', email).execute();
      expect(count).toHaveLength(1);
    });

    it('gives one of several simultaneous signups with one email the account, the others 409', async () => {
      const email = freshEmail();
      const responses = await Promise.all(Array.from({ length: 4 }, (_, index) => signup({ name: `Racer ${index}`, email })));
      expect(responses.map((response) => response.status).sort()).toEqual([201, 409, 409, 409]);
      for (const response of responses.filter((candidate) => candidate.status === 409)) expectError(response, 409, 'conflict');
    });

    it('refuses an email an operator-created account already holds (409)', async () => {
      const email = freshEmail();
      await app()
        .context.storage.db.transaction()
        .execute((trx) => app().context.services.accounts.create(trx, { name: 'Operator made', email }, { kind: 'operator' }));
      expectError(await signup({ name: 'Late', email }), 409, 'conflict');
    });

    it('validates the body: 400 with details for each bad field, nothing written', async () => {
      const accountsBefore = await app().context.services.accounts.count('signup');
      const cases: Array<[unknown, string[]]> = [
        [{}, ['/name', '/email']],
        [{ name: 'No email' }, ['/email']],
        [{ name: '', email: freshEmail() }, ['/name']],
        [{ name: '   ', email: freshEmail() }, ['/name']],
        [{ name: 'x'.repeat(101), email: freshEmail() }, ['/name']],
        [{ name: 'Bell\u0007', email: freshEmail() }, ['/name']],
        [{ name: 'Bad email', email: 'not-an-email' }, ['/email']],
        [{ name: 'Long email', email: `${'a'.repeat(250)}@example.com` }, ['/email']],
        [{ name: 'Extra', email: freshEmail(), password: 'x' }, ['/password']],
        [{ name: 42, email: freshEmail() }, ['/name']],
      ];
      for (const [body, paths] of cases) {
        const response = await signup(body);
        expectError(response, 400, 'invalid_request');
        expect([...new Set(response.json.error.details.map((detail: { path: string }) => detail.path))].sort(), JSON.stringify(body)).toEqual(paths.sort());
        expect(response.headers['set-cookie']).toBeUndefined();
      }
      expectError(await signup('{"name":', freshIp(), { 'content-type': 'application/json' }), 400, 'invalid_request');
      expect(await app().context.services.accounts.count('signup')).toBe(accountsBefore);
    });

    it('needs application/json (415)', async () => {
      const form = await signup('name=a&email=b%40example.com', freshIp(), { 'content-type': 'application/x-www-form-urlencoded' });
      expectError(form, 415, 'unsupported_media_type');
      const none = await app().request({ method: 'POST', url: '/api/v1/developer/signup', body: Buffer.from('{}'), remoteAddress: freshIp() });
      expectError(none, 415, 'unsupported_media_type');
    });

    it('allows five attempts per IP per hour; the sixth gets 429 with Retry-After, failed attempts counting too', async () => {
      const ip = freshIp();
      // Every kind of attempt counts: a success, a conflict, a validation failure, a wrong content type, malformed JSON.
      const email = freshEmail();
      expect((await signup({ name: 'One', email }, ip)).status).toBe(201);
      expect((await signup({ name: 'Two', email }, ip)).status).toBe(409);
      expect((await signup({ name: 'Three' }, ip)).status).toBe(400);
      expect((await signup('name=x', ip, { 'content-type': 'text/plain' })).status).toBe(415);
      expect((await signup('{', ip, { 'content-type': 'application/json' })).status).toBe(400);
      const sixth = await signup({ name: 'Six', email: freshEmail() }, ip);
      expectError(sixth, 429, 'rate_limited');
      expect(sixth.headers['retry-after']).toMatch(/^\d+$/);
      const retryAfter = Number(sixth.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(3600);
      expect(sixth.headers['set-cookie']).toBeUndefined();
      expect(sixth.headers['ratelimit-limit']).toBeDefined();
      // The refused attempt created nothing.
      expect(await app().context.storage.db.selectFrom('accounts').select('id').where('name', '=', 'Six').execute()).toHaveLength(0);
      // Another address is not affected.
      expect((await signup({ name: 'Elsewhere', email: freshEmail() })).status).toBe(201);
    });

    it('is public: no credential needed, and a Bearer key does not change the answer', async () => {
      const holder = await app().account(['usage:read']);
      const response = await app().request({
        method: 'POST',
        url: '/api/v1/developer/signup',
        key: holder.key,
        body: { name: 'With key', email: freshEmail() },
        remoteAddress: freshIp(),
      });
      expect(response.status).toBe(201);
      expect(response.json.account.id).not.toBe(holder.accountId);
    });

    it('records developer.signup (and account.created) in the new account’s audit history', async () => {
      const email = freshEmail();
      const response = await signup({ name: 'Audited', email });
      const accountId = response.json.account.id as string;
      // The operator issues the first key for the new account.
      const issued = await issueKey(app().context, { accountId, name: 'first key', scopes: ['usage:read'] });
      const audit = await app().request({ url: '/api/v1/audit', key: issued.key });
      expect(audit.status).toBe(200);
      const signupRecord = audit.json.data.find((record: { type: string }) => record.type === 'developer.signup');
      expect(signupRecord).toMatchObject({
        id: expect.stringMatching(/^aud_/),
        type: 'developer.signup',
        actor: { kind: 'developer_session', accountId },
        target: { type: 'account', id: accountId },
        data: { email },
        createdAt: expect.stringMatching(ISO_MS),
      });
      expect(audit.json.data.map((record: { type: string }) => record.type)).toContain('account.created');
      expect(audit.body).not.toContain('dds_');
    });
  });

  describe('GET /api/v1/developer/session and POST /api/v1/developer/logout', () => {
    it('answers the session body for the cookie, and 401 without or with an unknown one', async () => {
      const created = await signup({ name: 'Session owner', email: freshEmail() });
      const token = tokenOf(created);
      const current = await session(token);
      expect(current.status).toBe(200);
      expect(current.json).toEqual({ account: created.json.account, session: created.json.session });

      const missing = await session(undefined);
      expectError(missing, 401, 'unauthorized');
      expect(missing.headers['www-authenticate']).toMatch(/^Bearer /);
      expectError(await session(`dds_${'A'.repeat(43)}`), 401, 'unauthorized');
      expectError(await session('garbage'), 401, 'unauthorized');
      // Another cookie name does not count.
      const wrongName = await app().request({ url: '/api/v1/developer/session', headers: { cookie: `service_developer_session=${token}` } });
      expectError(wrongName, 401, 'unauthorized');
    });

    it('ends the session on logout (204, cookie expired with Max-Age=0); the old cookie is refused afterwards', async () => {
      const created = await signup({ name: 'Leaving', email: freshEmail() });
      const token = tokenOf(created);
      const logout = await app().request({
        method: 'POST',
        url: '/api/v1/developer/logout',
        headers: { cookie: `__Host-service_developer_session=${token}` },
      });
      expect(logout.status).toBe(204);
      expect(logout.body).toBe('');
      expect(setCookieOf(logout)).toBe(EXPIRED_COOKIE);
      expectError(await session(token), 401, 'unauthorized');
      const row = await app()
        .context.storage.db.selectFrom('developer_sessions')
        .select('ended_at')
        .where('account_id', '=', created.json.account.id)
        .executeTakeFirstOrThrow();
      expect(row.ended_at).toMatch(ISO_MS);
      // Logging out again (or without a cookie) is harmless and still expires the cookie.
      const again = await app().request({ method: 'POST', url: '/api/v1/developer/logout', headers: { cookie: `__Host-service_developer_session=${token}` } });
      expect(again.status).toBe(204);
      expect(setCookieOf(again)).toBe(EXPIRED_COOKIE);
      const bare = await app().request({ method: 'POST', url: '/api/v1/developer/logout' });
      expect(bare.status).toBe(204);
    });

    it('logout of one session leaves the account’s other sessions alone', async () => {
      const email = freshEmail();
      const created = await signup({ name: 'Two tabs', email });
      const token = tokenOf(created);
      await app().request({ method: 'POST', url: '/api/v1/developer/logout', headers: { cookie: `__Host-service_developer_session=dds_${'B'.repeat(43)}` } });
      expect((await session(token)).status).toBe(200);
    });
  });

  describe('the cookie is never an API credential', () => {
    it('gets 401 on /api/v1/resources with the cookie alone, and the token is refused as a Bearer or X-API-Key', async () => {
      const created = await signup({ name: 'Cookie only', email: freshEmail() });
      const token = tokenOf(created);
      const cookieHeader = { cookie: `__Host-service_developer_session=${token}` };
      for (const url of ['/api/v1/resources', '/api/v1/auth/me', '/api/v1/keys', '/api/v1/events']) {
        const response = await app().request({ url, headers: cookieHeader });
        expectError(response, 401, 'unauthorized');
        expect(response.headers['www-authenticate']).toBe('Bearer realm="devdata"');
      }
      const create = await app().request({ method: 'POST', url: '/api/v1/resources', headers: cookieHeader, body: { name: 'x', type: 'text', state: 'y' } });
      expectError(create, 401, 'unauthorized');
      const bearer = await app().request({ url: '/api/v1/resources', key: token });
      expectError(bearer, 401, 'unauthorized');
      expect(bearer.headers['www-authenticate']).toContain('error="invalid_token"');
      const apiKeyHeader = await app().request({ url: '/api/v1/resources', headers: { 'x-api-key': token } });
      expectError(apiKeyHeader, 401, 'unauthorized');
    });
  });

  describe('over a real socket', () => {
    it('sends the literal Set-Cookie header and no CORS grant on the developer routes', async () => {
      const base = await app().listen();
      const response = await fetch(`${base}/api/v1/developer/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: 'https://elsewhere.example' },
        body: JSON.stringify({ name: 'Socket', email: freshEmail() }),
      });
      expect(response.status).toBe(201);
      const cookies = response.headers.getSetCookie();
      expect(cookies).toHaveLength(1);
      expect(cookies[0]).toMatch(COOKIE);
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
      const token = COOKIE.exec(cookies[0] as string)?.[1] as string;
      const current = await fetch(`${base}/api/v1/developer/session`, { headers: { cookie: `__Host-service_developer_session=${token}` } });
      expect(current.status).toBe(200);
      expect(((await current.json()) as { account: { email: string } }).account.email).toMatch(/@example\.com$/);
    });
  });

  describe('the capabilities document', () => {
    it('describes developer accounts and their limits', async () => {
      const response = await app().request({ url: '/api/v1/capabilities' });
      expect(response.status).toBe(200);
      expect(response.json.features.developer).toMatchObject({ signupAttemptsPerIpPerHour: 5, sessionHours: 12 });
      expect(response.json.limits).toMatchObject({ signupAttemptsPerIpPerHour: 5, developerSessionHours: 12 });
      const openapi = await app().request({ url: '/openapi.json' });
      expect(Object.keys(openapi.json.paths)).toEqual(
        expect.arrayContaining(['/api/v1/developer/signup', '/api/v1/developer/session', '/api/v1/developer/logout']),
      );
      expect(openapi.json.paths['/api/v1/developer/signup'].post.responses['201']).toBeDefined();
    });
  });
});

describe('developer signup at capacity', () => {
  const app = useTestApp({ env: { SIGNUP_CAPACITY: '2' } });

  it('closes with 403 signup_closed once the capacity of signups is reached; operator accounts do not count', async () => {
    await app().account();
    await app().account();
    const first = await app().request({ method: 'POST', url: '/api/v1/developer/signup', body: { name: 'A', email: freshEmail() }, remoteAddress: freshIp() });
    const second = await app().request({ method: 'POST', url: '/api/v1/developer/signup', body: { name: 'B', email: freshEmail() }, remoteAddress: freshIp() });
    expect([first.status, second.status]).toEqual([201, 201]);
    const third = await app().request({ method: 'POST', url: '/api/v1/developer/signup', body: { name: 'C', email: freshEmail() }, remoteAddress: freshIp() });
    expectError(third, 403, 'signup_closed');
    expect(third.headers['set-cookie']).toBeUndefined();
    expect(await app().context.services.accounts.count('signup')).toBe(2);
  });
});

describe('developer sessions with a short lifetime', () => {
  const clock = new ManualClock();
  let app: TestApp;
  beforeAll(async () => {
    app = await TestApp.start({ clock, env: { DEVELOPER_SESSION_TTL_SECONDS: '60' } });
  });
  afterAll(async () => {
    await app.close();
  });

  it('gives the cookie the configured Max-Age and refuses the session once it has expired', async () => {
    const response = await app.request({
      method: 'POST',
      url: '/api/v1/developer/signup',
      body: { name: 'Short', email: freshEmail() },
      remoteAddress: freshIp(),
    });
    expect(response.status).toBe(201);
    const cookie = setCookieOf(response);
    expect(cookie).toMatch(/^__Host-service_developer_session=dds_[A-Za-z0-9_-]{43,}; Path=\/; Secure; HttpOnly; SameSite=Strict; Max-Age=60$/);
    expect(Date.parse(response.json.session.expiresAt)).toBe(clock.now().getTime() + 60_000);
    const token = /=(dds_[^;]+);/.exec(cookie)?.[1] as string;
    const headers = { cookie: `__Host-service_developer_session=${token}` };

    clock.advance(59_000);
    expect((await app.request({ url: '/api/v1/developer/session', headers })).status).toBe(200);
    clock.advance(1_000);
    const expired = await app.request({ url: '/api/v1/developer/session', headers });
    expectError(expired, 401, 'unauthorized');
    clock.advance(3_600_000);
    expectError(await app.request({ url: '/api/v1/developer/session', headers }), 401, 'unauthorized');
  });

  it('counts signup attempts in one-hour windows: a new hour allows five more', async () => {
    const ip = freshIp();
    for (let attempt = 0; attempt < 5; attempt++) {
      expect((await app.request({ method: 'POST', url: '/api/v1/developer/signup', body: {}, remoteAddress: ip })).status).toBe(400);
    }
    expect((await app.request({ method: 'POST', url: '/api/v1/developer/signup', body: {}, remoteAddress: ip })).status).toBe(429);
    clock.advance(3_600_000);
    expect(
      (await app.request({ method: 'POST', url: '/api/v1/developer/signup', body: { name: 'Next hour', email: freshEmail() }, remoteAddress: ip })).status,
    ).toBe(201);
  });
});
