import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ManualClock, TestApp, useTestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';

const DAY_MS = 86_400_000;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

describe('API keys', () => {
  const app = useTestApp();

  async function createKey(key: string, body: Record<string, unknown>): Promise<TestResponse> {
    return app().request({ method: 'POST', url: '/api/v1/keys', key, body });
  }

  describe('GET /api/v1/auth/me', () => {
    it('describes an API key presented as a Bearer credential', async () => {
      const caller = await app().account(['keys:manage', 'usage:read']);
      const response = await app().request({ url: '/api/v1/auth/me', key: caller.key });
      expect(response.status).toBe(200);
      expect(response.json).toEqual({
        account: { id: caller.accountId, name: expect.any(String) },
        credential: { id: caller.keyId, kind: 'api_key', scopes: ['keys:manage', 'usage:read'], expiresAt: expect.stringMatching(ISO_MS) },
        api: { name: 'Developer Data Service API', version: '1.3.0' },
      });
      expect(response.json.account.name).toMatch(/^Test account \d+$/);
      expect(response.json.credential.id).toMatch(/^key_/);
      expect(response.body).not.toContain(caller.key);
      // The operator's first key lasts 365 days.
      const expiresIn = Date.parse(response.json.credential.expiresAt) - Date.now();
      expect(Math.abs(expiresIn - 365 * DAY_MS)).toBeLessThan(60_000);
    });

    it('accepts the key in X-API-Key with the same answer', async () => {
      const caller = await app().account();
      const bearer = await app().request({ url: '/api/v1/auth/me', key: caller.key });
      const header = await app().request({ url: '/api/v1/auth/me', headers: { 'x-api-key': caller.key } });
      expect(header.status).toBe(200);
      expect(header.json).toEqual(bearer.json);
      expect(header.json.credential.id).toBe(caller.keyId);
      expect(header.json.credential.kind).toBe('api_key');
      expect(header.json.api).toEqual({ name: 'Developer Data Service API', version: '1.3.0' });
    });

    it('is 401 without a credential and 401 with error="invalid_token" for an unknown key', async () => {
      const missing = await app().request({ url: '/api/v1/auth/me' });
      expectError(missing, 401, 'unauthorized');
      expect(missing.headers['www-authenticate']).toBe('Bearer realm="devdata"');

      const unknown = await app().request({ url: '/api/v1/auth/me', key: 'ddk_not-a-real-key' });
      expectError(unknown, 401, 'unauthorized');
      expect(unknown.headers['www-authenticate']).toContain('error="invalid_token"');
    });
  });

  describe('POST /api/v1/keys', () => {
    it('creates a key (201) that works at once, shown with its secret', async () => {
      const caller = await app().account();
      const before = Date.now();
      const response = await createKey(caller.key, { name: 'CI key', scopes: ['resources:read', 'usage:read'] });
      const after = Date.now();
      expect(response.status).toBe(201);
      expect(response.json).toEqual({
        id: expect.stringMatching(/^key_[A-Za-z0-9_-]{22,}$/),
        name: 'CI key',
        scopes: ['resources:read', 'usage:read'],
        createdAt: expect.stringMatching(ISO_MS),
        expiresAt: expect.stringMatching(ISO_MS),
        key: expect.stringMatching(/^ddk_[A-Za-z0-9_-]{43,}$/),
      });
      const created = response.json;
      expect(Date.parse(created.createdAt)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(created.createdAt)).toBeLessThanOrEqual(after + 1);

      // expiresInDays defaults to 90.
      expect(Date.parse(created.expiresAt) - Date.parse(created.createdAt)).toBe(90 * DAY_MS);

      const me = await app().request({ url: '/api/v1/auth/me', key: created.key });
      expect(me.status).toBe(200);
      expect(me.json.account.id).toBe(caller.accountId);
      expect(me.json.credential).toEqual({ id: created.id, kind: 'api_key', scopes: ['resources:read', 'usage:read'], expiresAt: created.expiresAt });
    });

    it('honours expiresInDays within 1-365', async () => {
      const caller = await app().account();
      for (const days of [1, 30, 364]) {
        const response = await createKey(caller.key, { name: `k${days}`, scopes: [], expiresInDays: days });
        expect(response.status).toBe(201);
        expect(Date.parse(response.json.expiresAt) - Date.parse(response.json.createdAt)).toBe(days * DAY_MS);
      }
      // 365 is accepted; the caller (itself 365 days, created a moment earlier) caps it.
      const me = await app().request({ url: '/api/v1/auth/me', key: caller.key });
      const max = await createKey(caller.key, { name: 'k365', scopes: [], expiresInDays: 365 });
      expect(max.status).toBe(201);
      expect(max.json.expiresAt).toBe(me.json.credential.expiresAt);
    });

    it.each([
      ['0', 0],
      ['366', 366],
      ['a fraction', 1.5],
      ['a string', '10'],
      ['null', null],
    ])('rejects expiresInDays %s with 400 and details', async (_label, expiresInDays) => {
      const caller = await app().account();
      const response = await createKey(caller.key, { name: 'bad', scopes: [], expiresInDays });
      expectError(response, 400, 'invalid_request');
      expect(response.json.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/expiresInDays', message: expect.any(String) })]));
    });

    it('rejects an unknown scope with 400 naming its index', async () => {
      const caller = await app().account();
      const response = await createKey(caller.key, { name: 'bad', scopes: ['resources:read', 'resources:destroy'] });
      expectError(response, 400, 'invalid_request');
      expect(response.json.error.details).toEqual([{ path: '/scopes/1', message: expect.any(String) }]);
    });

    it('rejects bodies that break the schema', async () => {
      const caller = await app().account();
      const cases: unknown[] = [
        { scopes: [] },
        { name: '', scopes: [] },
        { name: '   ', scopes: [] },
        // A control character may not stand in for the one visible character a name needs.
        { name: 'Bell\u0007', scopes: [] },
        { name: 'x'.repeat(101), scopes: [] },
        { name: 'ok' },
        { name: 'ok', scopes: 'resources:read' },
        { name: 'ok', scopes: [], extra: true },
      ];
      for (const body of cases) {
        const response = await createKey(caller.key, body as Record<string, unknown>);
        expectError(response, 400, 'invalid_request');
        expect(response.json.error.details?.length ?? 0).toBeGreaterThan(0);
      }
      // Nothing was created by those attempts.
      const list = await app().request({ url: '/api/v1/keys', key: caller.key });
      expect(list.json.data.map((key: { id: string }) => key.id)).toEqual([caller.keyId]);
    });

    it('refuses a scope the caller lacks with 403 insufficient_scope', async () => {
      const caller = await app().account(['keys:manage', 'resources:read']);
      const response = await createKey(caller.key, { name: 'escalate', scopes: ['resources:read', 'resources:write'] });
      expectError(response, 403, 'insufficient_scope');
      expect(response.headers['www-authenticate']).toContain('error="insufficient_scope"');
      expect(response.headers['www-authenticate']).toContain('resources:write');

      const allowed = await createKey(caller.key, { name: 'subset', scopes: ['resources:read'] });
      expect(allowed.status).toBe(201);
    });

    it('needs keys:manage', async () => {
      const caller = await app().account(['resources:read']);
      const response = await createKey(caller.key, { name: 'nope', scopes: [] });
      expectError(response, 403, 'insufficient_scope');
      expect(response.headers['www-authenticate']).toContain('scope="keys:manage"');
      const list = await app().request({ url: '/api/v1/keys', key: caller.key });
      expectError(list, 403, 'insufficient_scope');
      const anonymous = await app().request({ method: 'POST', url: '/api/v1/keys', body: { name: 'x', scopes: [] } });
      expectError(anonymous, 401, 'unauthorized');
    });

    it('never outlives the creating key', async () => {
      const caller = await app().account(undefined, { expiresInDays: 10 });
      const me = await app().request({ url: '/api/v1/auth/me', key: caller.key });
      const callerExpiresAt: string = me.json.credential.expiresAt;

      const response = await createKey(caller.key, { name: 'long', scopes: ['resources:read'], expiresInDays: 365 });
      expect(response.status).toBe(201);
      expect(response.json.expiresAt).toBe(callerExpiresAt);

      // A shorter request is honoured as asked.
      const shorter = await createKey(caller.key, { name: 'short', scopes: [], expiresInDays: 2 });
      expect(Date.parse(shorter.json.expiresAt) - Date.parse(shorter.json.createdAt)).toBe(2 * DAY_MS);

      // A child of the capped key is capped too.
      const childCaller = await createKey(caller.key, { name: 'manager', scopes: ['keys:manage'], expiresInDays: 365 });
      const grandchild = await createKey(childCaller.json.key, { name: 'grandchild', scopes: [], expiresInDays: 365 });
      expect(grandchild.status).toBe(201);
      expect(grandchild.json.expiresAt).toBe(callerExpiresAt);
    });
  });

  describe('GET /api/v1/keys', () => {
    it('lists active keys without any secret', async () => {
      const caller = await app().account();
      const a = await createKey(caller.key, { name: 'A', scopes: ['resources:read'] });
      const b = await createKey(caller.key, { name: 'B', scopes: [], expiresInDays: 7 });

      const response = await app().request({ url: '/api/v1/keys', key: caller.key });
      expect(response.status).toBe(200);
      expect(Object.keys(response.json)).toEqual(['data']);
      const ids = response.json.data.map((key: { id: string }) => key.id);
      expect(ids).toHaveLength(3);
      expect(ids).toEqual(expect.arrayContaining([caller.keyId, a.json.id, b.json.id]));
      for (const key of response.json.data) {
        expect(Object.keys(key).sort()).toEqual(['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'revokedAt', 'scopes', 'status']);
        expect(key).not.toHaveProperty('key');
        expect(key.createdAt).toMatch(ISO_MS);
        expect(key.expiresAt).toMatch(ISO_MS);
        if (key.lastUsedAt !== null) expect(key.lastUsedAt).toMatch(ISO_MS);
      }
      const listedA = response.json.data.find((key: { id: string }) => key.id === a.json.id);
      expect(listedA).toEqual({
        id: a.json.id,
        name: 'A',
        scopes: ['resources:read'],
        createdAt: a.json.createdAt,
        expiresAt: a.json.expiresAt,
        lastUsedAt: null,
        status: 'active',
        revokedAt: null,
      });
      // The caller itself has been used.
      const self = response.json.data.find((key: { id: string }) => key.id === caller.keyId);
      expect(self.lastUsedAt).toMatch(ISO_MS);

      for (const secret of [caller.key, a.json.key, b.json.key]) {
        expect(response.body).not.toContain(secret);
        expect(response.body).not.toContain(secret.slice(4));
        expect(response.body).not.toContain(sha256Hex(secret));
      }
      expect(response.body).not.toContain('ddk_');
    });

    it('omits revoked keys', async () => {
      const caller = await app().account();
      const doomed = await createKey(caller.key, { name: 'doomed', scopes: [] });
      expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${doomed.json.id}`, key: caller.key })).status).toBe(204);
      const response = await app().request({ url: '/api/v1/keys', key: caller.key });
      expect(response.json.data.map((key: { id: string }) => key.id)).toEqual([caller.keyId]);
    });
  });

  describe('DELETE /api/v1/keys/{id}', () => {
    it('revokes immediately (204), then 404 on a second delete', async () => {
      const caller = await app().account();
      const victim = await createKey(caller.key, { name: 'victim', scopes: ['resources:read'] });
      expect((await app().request({ url: '/api/v1/auth/me', key: victim.json.key })).status).toBe(200);

      const revoked = await app().request({ method: 'DELETE', url: `/api/v1/keys/${victim.json.id}`, key: caller.key });
      expect(revoked.status).toBe(204);
      expect(revoked.body).toBe('');

      const next = await app().request({ url: '/api/v1/auth/me', key: victim.json.key });
      expectError(next, 401, 'unauthorized');
      expect(next.headers['www-authenticate']).toBe('Bearer realm="devdata", error="invalid_token"');
      const viaHeader = await app().request({ url: '/api/v1/auth/me', headers: { 'x-api-key': victim.json.key } });
      expectError(viaHeader, 401, 'unauthorized');
      expect(viaHeader.headers['www-authenticate']).toContain('error="invalid_token"');

      const again = await app().request({ method: 'DELETE', url: `/api/v1/keys/${victim.json.id}`, key: caller.key });
      expectError(again, 404, 'not_found');

      // The caller is unaffected.
      expect((await app().request({ url: '/api/v1/auth/me', key: caller.key })).status).toBe(200);
    });

    it('is 404 for an id that never existed', async () => {
      const caller = await app().account();
      const response = await app().request({ method: 'DELETE', url: '/api/v1/keys/key_doesnotexist', key: caller.key });
      expectError(response, 404, 'not_found');
    });

    it('lets a key revoke itself; its next request is 401', async () => {
      const caller = await app().account();
      const self = await createKey(caller.key, { name: 'self', scopes: ['keys:manage'] });
      const response = await app().request({ method: 'DELETE', url: `/api/v1/keys/${self.json.id}`, key: self.json.key });
      expect(response.status).toBe(204);
      const next = await app().request({ url: '/api/v1/keys', key: self.json.key });
      expectError(next, 401, 'unauthorized');
      expect(next.headers['www-authenticate']).toContain('error="invalid_token"');
    });
  });

  describe('isolation between accounts', () => {
    it("hides one account's keys from another (404) and leaves them working", async () => {
      const a = await app().account();
      const b = await app().account();
      const aSecond = await createKey(a.key, { name: 'A second', scopes: ['resources:read'] });

      const listB = await app().request({ url: '/api/v1/keys', key: b.key });
      expect(listB.status).toBe(200);
      expect(listB.json.data.map((key: { id: string }) => key.id)).toEqual([b.keyId]);
      expect(listB.body).not.toContain(a.keyId);
      expect(listB.body).not.toContain(aSecond.json.id);

      for (const id of [a.keyId, aSecond.json.id]) {
        const response = await app().request({ method: 'DELETE', url: `/api/v1/keys/${id}`, key: b.key });
        expectError(response, 404, 'not_found');
      }

      const meA = await app().request({ url: '/api/v1/auth/me', key: a.key });
      expect(meA.status).toBe(200);
      expect(meA.json.account.id).toBe(a.accountId);
      expect((await app().request({ url: '/api/v1/auth/me', key: aSecond.json.key })).status).toBe(200);
      const listA = await app().request({ url: '/api/v1/keys', key: a.key });
      expect(listA.json.data.map((key: { id: string }) => key.id).sort()).toEqual([a.keyId, aSecond.json.id].sort());
    });
  });

  describe('storage', () => {
    it('stores only the SHA-256 hash of each secret', async () => {
      const caller = await app().account();
      const created = await createKey(caller.key, { name: 'hashed', scopes: [] });
      const { db } = app().context.storage;

      for (const [id, secret] of [
        [caller.keyId, caller.key],
        [created.json.id as string, created.json.key as string],
      ] as const) {
        const row = await db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        expect(row.key_hash).toBe(sha256Hex(secret));
        const stored = JSON.stringify(row);
        expect(stored).not.toContain(secret);
        expect(stored).not.toContain(secret.slice(4));
      }

      const everything = JSON.stringify(await db.selectFrom('api_keys').selectAll().execute());
      expect(everything).not.toContain(caller.key);
      expect(everything).not.toContain(created.json.key);
      const audit = JSON.stringify(await db.selectFrom('audit_log').selectAll().execute());
      expect(audit).not.toContain(caller.key);
      expect(audit).not.toContain(created.json.key);
    });
  });
});

describe('API key expiry', () => {
  it('stops a key the moment it expires', async () => {
    const clock = new ManualClock(new Date('2026-03-01T12:00:00.000Z'));
    const t = await TestApp.start({ clock });
    try {
      const caller = await t.account();
      const created = await t.request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'one day', scopes: [], expiresInDays: 1 } });
      expect(created.status).toBe(201);
      expect(created.json.createdAt).toBe('2026-03-01T12:00:00.000Z');
      expect(created.json.expiresAt).toBe('2026-03-02T12:00:00.000Z');
      expect((await t.request({ url: '/api/v1/auth/me', key: created.json.key })).status).toBe(200);

      clock.advance(DAY_MS - 1);
      expect((await t.request({ url: '/api/v1/auth/me', key: created.json.key })).status).toBe(200);

      clock.advance(2);
      const expired = await t.request({ url: '/api/v1/auth/me', key: created.json.key });
      expect(expired.status).toBe(401);
      expect(expired.json.error.code).toBe('unauthorized');
      expect(expired.headers['www-authenticate']).toContain('error="invalid_token"');

      // The expired key is no longer listed, cannot be revoked, and the caller still works.
      const list = await t.request({ url: '/api/v1/keys', key: caller.key });
      expect(list.status).toBe(200);
      expect(list.json.data.map((key: { id: string }) => key.id)).toEqual([caller.keyId]);
      const revoke = await t.request({ method: 'DELETE', url: `/api/v1/keys/${created.json.id}`, key: caller.key });
      expect(revoke.status).toBe(404);
    } finally {
      await t.close();
    }
  });

  it('expires after exactly expiresInDays', async () => {
    const clock = new ManualClock(new Date('2026-03-01T12:00:00.000Z'));
    const t = await TestApp.start({ clock });
    try {
      const caller = await t.account();
      const created = await t.request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'one day', scopes: [], expiresInDays: 1 } });
      expect((await t.request({ url: '/api/v1/auth/me', key: created.json.key })).status).toBe(200);
      clock.advance(86_400_000 + 1);
      expect((await t.request({ url: '/api/v1/auth/me', key: created.json.key })).status).toBe(401);
    } finally {
      await t.close();
    }
  });
});
