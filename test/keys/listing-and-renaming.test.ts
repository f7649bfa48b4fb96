// GET /api/v1/keys?status=all (the keys that ended, with their status) and PATCH /api/v1/keys/{id}
// (a key's new name), through the HTTP server.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ENDED_KEYS_LISTED } from '../../src/areas/keys/schemas.js';
import { isDisplayName } from '../../src/platform/schemas.js';
import { ManualClock, TestApp, useTestApp, type TestAccount } from '../support/app.js';
import { expectError } from '../support/expect.js';

const DAY_MS = 86_400_000;

interface Key {
  id: string;
  name: string;
  status: string;
  revokedAt: string | null;
}

describe('listing the keys that ended', () => {
  const app = useTestApp();

  const create = async (caller: TestAccount, name: string, expiresInDays?: number) => {
    const response = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name, scopes: [], expiresInDays } });
    expect(response.status, response.body).toBe(201);
    return response.json as { id: string; key: string };
  };
  const revoke = async (caller: TestAccount, id: string) => {
    expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${id}`, key: caller.key })).status).toBe(204);
  };
  const list = async (caller: TestAccount, query = ''): Promise<Key[]> => {
    const response = await app().request({ url: `/api/v1/keys${query}`, key: caller.key });
    expect(response.status, response.body).toBe(200);
    return response.json.data;
  };

  it('lists active keys only by default, and with status=all the revoked ones too, each with its status, in creation order', async () => {
    const caller = await app().account();
    const kept = await create(caller, 'kept');
    const gone = await create(caller, 'gone');
    await revoke(caller, gone.id);

    const active = await list(caller);
    expect(active.map((key) => [key.id, key.status, key.revokedAt])).toEqual([
      [caller.keyId, 'active', null],
      [kept.id, 'active', null],
    ]);
    // (lastUsedAt moves with each request of the caller's key.)
    expect((await list(caller, '?status=active')).map((key) => key.id)).toEqual(active.map((key) => key.id));

    const all = await list(caller, '?status=all');
    expect(all.map((key) => [key.id, key.status])).toEqual([
      [caller.keyId, 'active'],
      [kept.id, 'active'],
      [gone.id, 'revoked'],
    ]);
    const revoked = all[2] as Key;
    expect(revoked.revokedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(JSON.stringify(all)).not.toContain('ddk_');
  });

  it(`lists at most the ${ENDED_KEYS_LISTED} keys that ended last, besides every active one`, async () => {
    const caller = await app().account();
    const ended: string[] = [];
    for (let index = 0; index <= ENDED_KEYS_LISTED; index++) {
      const key = await create(caller, `ended ${index}`);
      await revoke(caller, key.id);
      ended.push(key.id);
    }
    const active = await create(caller, 'still active');
    const all = await list(caller, '?status=all');
    expect(all).toHaveLength(ENDED_KEYS_LISTED + 2);
    // The first to be revoked is the one left out; the rest keep their creation order.
    expect(all.map((key) => key.id)).toEqual([caller.keyId, ...ended.slice(1), active.id]);
  });

  it('refuses a status it does not know (400), naming the parameter', async () => {
    const caller = await app().account();
    const response = await app().request({ url: '/api/v1/keys?status=revoked', key: caller.key });
    expectError(response, 400, 'invalid_request');
    expect(JSON.stringify(response.json.error.details)).toContain('status');
  });

  it('shows an expired key as expired, and refuses to rename it (404)', async () => {
    const clock = new ManualClock(new Date('2026-03-01T12:00:00.000Z'));
    const t = await TestApp.start({ clock });
    try {
      const caller = await t.account();
      const created = await t.request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'one day', scopes: [], expiresInDays: 1 } });
      clock.advance(DAY_MS);
      const all = await t.request({ url: '/api/v1/keys?status=all', key: caller.key });
      expect(all.json.data.find((key: Key) => key.id === created.json.id)).toMatchObject({ status: 'expired', revokedAt: null });
      expect((await t.request({ url: '/api/v1/keys', key: caller.key })).json.data.map((key: Key) => key.id)).toEqual([caller.keyId]);
      const rename = await t.request({ method: 'PATCH', url: `/api/v1/keys/${created.json.id}`, key: caller.key, body: { name: 'later' } });
      expectError(rename, 404, 'not_found');
    } finally {
      await t.close();
    }
  });
});

describe('PATCH /api/v1/keys/{id}', () => {
  const app = useTestApp();

  const rename = (caller: TestAccount, id: string, body: unknown) => app().request({ method: 'PATCH', url: `/api/v1/keys/${id}`, key: caller.key, body });

  it('renames a key (200, the key as listed), audited as key.updated; the key works on as before', async () => {
    const caller = await app().account();
    const created = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'ci', scopes: ['resources:read'] } });
    const response = await rename(caller, created.json.id, { name: '  deploy bot  ' });
    expect(response.status, response.body).toBe(200);
    expect(response.json).toEqual({
      id: created.json.id,
      name: 'deploy bot',
      scopes: ['resources:read'],
      createdAt: created.json.createdAt,
      expiresAt: created.json.expiresAt,
      lastUsedAt: null,
      status: 'active',
      revokedAt: null,
    });
    const listed = (await app().request({ url: '/api/v1/keys', key: caller.key })).json.data;
    expect(listed.find((key: Key) => key.id === created.json.id).name).toBe('deploy bot');
    expect((await app().request({ url: '/api/v1/auth/me', key: created.json.key })).status).toBe(200);

    const audit = await app().request({ url: '/api/v1/audit?type=key.updated', key: caller.key });
    expect(audit.json.data).toEqual([
      expect.objectContaining({
        type: 'key.updated',
        actor: { kind: 'api_key', id: caller.keyId },
        target: { type: 'api_key', id: created.json.id },
        data: { changed: ['name'], name: 'deploy bot', previousName: 'ci' },
      }),
    ]);
  });

  it('lets a key rename itself', async () => {
    const caller = await app().account();
    const response = await rename(caller, caller.keyId, { name: 'me' });
    expect(response.status).toBe(200);
    expect(response.json.name).toBe('me');
  });

  it('changes nothing but the name: other fields are refused (400) and nothing is written', async () => {
    const caller = await app().account();
    const names = async () => (await app().request({ url: '/api/v1/keys', key: caller.key })).json.data.map((key: Key) => [key.id, key.name]);
    const before = await names();
    for (const body of [{ name: 'x', scopes: [] }, { scopes: ['resources:read'] }, { name: 'x', expiresInDays: 3 }, {}, { name: null }]) {
      expectError(await rename(caller, caller.keyId, body), 400, 'invalid_request');
    }
    expect(await names()).toEqual(before);
    expect((await app().request({ url: '/api/v1/audit?type=key.updated', key: caller.key })).json.data).toEqual([]);
  });

  it('accepts exactly the names a key may be created with (generated), stored trimmed', async () => {
    const caller = await app().account();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 110 }),
          fc.string({ unit: 'grapheme', maxLength: 40 }),
          fc.constantFrom('', ' ', '\t', 'a\u0000b', 'tab\tin', 'x'.repeat(100), 'x'.repeat(101)),
        ),
        async (name) => {
          const response = await rename(caller, caller.keyId, { name });
          if (isDisplayName(name)) {
            expect(response.status, `${JSON.stringify(name)}: ${response.body}`).toBe(200);
            expect(response.json.name).toBe(name.trim());
          } else {
            expectError(response, 400, 'invalid_request');
          }
          const created = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name, scopes: [] } });
          // The same rule as creating a key: both accept a name or both refuse it.
          expect(created.status === 201, JSON.stringify(name)).toBe(response.status === 200);
          if (created.status === 201) await app().request({ method: 'DELETE', url: `/api/v1/keys/${created.json.id}`, key: caller.key });
        },
      ),
      { numRuns: 60 },
    );
  });

  it('is 404 for a revoked key, an unknown id and another account’s key (which keeps its name)', async () => {
    const caller = await app().account();
    const other = await app().account();
    const doomed = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'doomed', scopes: [] } });
    await app().request({ method: 'DELETE', url: `/api/v1/keys/${doomed.json.id}`, key: caller.key });
    expectError(await rename(caller, doomed.json.id, { name: 'back' }), 404, 'not_found');
    expectError(await rename(caller, 'key_doesnotexist', { name: 'x' }), 404, 'not_found');
    expectError(await rename(caller, other.keyId, { name: 'stolen' }), 404, 'not_found');
    const theirs = (await app().request({ url: '/api/v1/keys', key: other.key })).json.data;
    expect(theirs.map((key: Key) => key.name)).not.toContain('stolen');
    const all = (await app().request({ url: '/api/v1/keys?status=all', key: caller.key })).json.data;
    expect(all.find((key: Key) => key.id === doomed.json.id)).toMatchObject({ name: 'doomed', status: 'revoked' });
  });

  it('needs keys:manage (403) and a credential (401)', async () => {
    const caller = await app().account(['resources:read']);
    const forbidden = await rename(caller, caller.keyId, { name: 'x' });
    expectError(forbidden, 403, 'insufficient_scope');
    expectError(await app().request({ method: 'PATCH', url: `/api/v1/keys/${caller.keyId}`, body: { name: 'x' } }), 401, 'unauthorized');
  });
});
