import { describe, expect, it } from 'vitest';
import { useTestApp, type TestAccount, type TestResponse } from '../support/app.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface AuditRecord {
  id: string;
  type: string;
  actor: Record<string, unknown>;
  target: Record<string, unknown> | null;
  data: Record<string, unknown>;
  createdAt: string;
}

describe('GET /api/v1/audit', () => {
  const app = useTestApp();

  function audit(key: string, query = ''): Promise<TestResponse> {
    return app().request({ url: `/api/v1/audit${query}`, key });
  }

  async function createKey(caller: TestAccount, name: string): Promise<{ id: string; key: string }> {
    const response = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name, scopes: ['resources:read'] } });
    expect(response.status).toBe(201);
    return response.json;
  }

  async function revokeKey(caller: TestAccount, id: string): Promise<void> {
    const response = await app().request({ method: 'DELETE', url: `/api/v1/keys/${id}`, key: caller.key });
    expect(response.status).toBe(204);
  }

  /** An account with two keys created and the first revoked, by the account's first key. */
  async function accountWithHistory() {
    const caller = await app().account();
    const first = await createKey(caller, 'first');
    const second = await createKey(caller, 'second');
    await revokeKey(caller, first.id);
    return { caller, first, second };
  }

  it('needs usage:read (403) and a credential (401)', async () => {
    const noScope = await app().account(['keys:manage', 'resources:read']);
    const forbidden = await audit(noScope.key);
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.error.code).toBe('insufficient_scope');
    expect(forbidden.headers['www-authenticate']).toBe('Bearer realm="devdata", error="insufficient_scope", scope="usage:read"');

    const anonymous = await app().request({ url: '/api/v1/audit' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.error.code).toBe('unauthorized');
    expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="devdata"');

    const reader = await app().account(['usage:read']);
    expect((await audit(reader.key)).status).toBe(200);
  });

  it('records account creation, key creation and revocation, oldest first', async () => {
    const { caller, first, second } = await accountWithHistory();
    const response = await audit(caller.key);
    expect(response.status).toBe(200);
    const records: AuditRecord[] = response.json.data;
    expect(records.map((record) => record.type)).toEqual(['account.created', 'key.created', 'key.created', 'key.created', 'key.revoked']);
    expect(response.json.hasMore).toBe(false);
    expect(typeof response.json.cursor).toBe('number');

    for (const record of records) {
      expect(Object.keys(record).sort()).toEqual(['actor', 'createdAt', 'data', 'id', 'target', 'type']);
      expect(record.id).toMatch(/^aud_[A-Za-z0-9_-]{22,}$/);
      expect(record.createdAt).toMatch(ISO_MS);
    }
    expect(new Set(records.map((record) => record.id)).size).toBe(records.length);
    const times = records.map((record) => record.createdAt);
    expect([...times].sort()).toEqual(times);

    const [accountCreated, operatorKey, firstCreated, secondCreated, revoked] = records as [AuditRecord, AuditRecord, AuditRecord, AuditRecord, AuditRecord];
    expect(accountCreated).toMatchObject({ actor: { kind: 'operator' }, target: { type: 'account', id: caller.accountId } });
    expect(operatorKey).toMatchObject({ actor: { kind: 'operator' }, target: { type: 'api_key', id: caller.keyId } });
    expect(firstCreated).toMatchObject({
      actor: { kind: 'api_key', id: caller.keyId },
      target: { type: 'api_key', id: first.id },
      data: { name: 'first', scopes: ['resources:read'] },
    });
    expect(secondCreated).toMatchObject({ actor: { kind: 'api_key', id: caller.keyId }, target: { type: 'api_key', id: second.id } });
    expect(revoked).toMatchObject({ actor: { kind: 'api_key', id: caller.keyId }, target: { type: 'api_key', id: first.id } });

    // No secret ever lands in the audit history.
    for (const secret of [caller.key, first.key, second.key]) expect(response.body).not.toContain(secret);
  });

  it('records a self-revocation with the revoked key as actor', async () => {
    const caller = await app().account();
    const created = await app().request({ method: 'POST', url: '/api/v1/keys', key: caller.key, body: { name: 'self', scopes: ['keys:manage'] } });
    const self = created.json as { id: string; key: string };
    expect((await app().request({ method: 'DELETE', url: `/api/v1/keys/${self.id}`, key: self.key })).status).toBe(204);
    const response = await audit(caller.key, '?type=key.revoked');
    expect(response.json.data).toHaveLength(1);
    expect(response.json.data[0]).toMatchObject({ actor: { kind: 'api_key', id: self.id }, target: { type: 'api_key', id: self.id } });
  });

  it('pages with limit and after=<cursor>', async () => {
    const { caller } = await accountWithHistory();
    const all: AuditRecord[] = (await audit(caller.key)).json.data;
    expect(all).toHaveLength(5);

    const page1 = await audit(caller.key, '?limit=2');
    expect(page1.status).toBe(200);
    expect(page1.json.data.map((record: AuditRecord) => record.id)).toEqual(all.slice(0, 2).map((record) => record.id));
    expect(page1.json.hasMore).toBe(true);

    const page2 = await audit(caller.key, `?limit=2&after=${page1.json.cursor}`);
    expect(page2.json.data.map((record: AuditRecord) => record.id)).toEqual(all.slice(2, 4).map((record) => record.id));
    expect(page2.json.hasMore).toBe(true);
    expect(page2.json.cursor).toBeGreaterThan(page1.json.cursor);

    const page3 = await audit(caller.key, `?limit=2&after=${page2.json.cursor}`);
    expect(page3.json.data.map((record: AuditRecord) => record.id)).toEqual(all.slice(4).map((record) => record.id));
    expect(page3.json.hasMore).toBe(false);

    // The rest in one go.
    const rest = await audit(caller.key, `?after=${page1.json.cursor}`);
    expect(rest.json.data.map((record: AuditRecord) => record.id)).toEqual(all.slice(2).map((record) => record.id));
    expect(rest.json.hasMore).toBe(false);

    // An exact fit is not "more".
    const exact = await audit(caller.key, '?limit=5');
    expect(exact.json.data).toHaveLength(5);
    expect(exact.json.hasMore).toBe(false);

    // Past the end: nothing, and the cursor stays put so a poll can carry on.
    const empty = await audit(caller.key, `?after=${page3.json.cursor}`);
    expect(empty.json.data).toEqual([]);
    expect(empty.json.hasMore).toBe(false);
    expect(empty.json.cursor).toBe(page3.json.cursor);

    // New records show up after the last cursor.
    await createKey(caller, 'later');
    const poll = await audit(caller.key, `?after=${page3.json.cursor}`);
    expect(poll.json.data.map((record: AuditRecord) => record.type)).toEqual(['key.created']);
  });

  it('filters by exact type and by prefix', async () => {
    const { caller, first } = await accountWithHistory();

    const exact = await audit(caller.key, '?type=key.revoked');
    expect(exact.status).toBe(200);
    expect(exact.json.data).toHaveLength(1);
    expect(exact.json.data[0]).toMatchObject({ type: 'key.revoked', target: { type: 'api_key', id: first.id } });
    expect(exact.json.hasMore).toBe(false);

    const prefix = await audit(caller.key, '?type=key.*');
    expect(prefix.json.data.map((record: AuditRecord) => record.type)).toEqual(['key.created', 'key.created', 'key.created', 'key.revoked']);

    const account = await audit(caller.key, '?type=account.*');
    expect(account.json.data.map((record: AuditRecord) => record.type)).toEqual(['account.created']);

    // `key` alone is an exact type that matches nothing; `key.` is not a prefix either.
    expect((await audit(caller.key, '?type=key')).json.data).toEqual([]);
    expect((await audit(caller.key, '?type=key.')).json.data).toEqual([]);
    // `_` (a SQL wildcard) is taken literally; `%` is no character of a type, so it is refused.
    expect((await audit(caller.key, '?type=_ey.*')).json.data).toEqual([]);
    const refused = await audit(caller.key, '?type=%25.*');
    expect(refused.status).toBe(400);
    expect(refused.json.error.details).toEqual([{ path: '/type', message: expect.stringContaining('a prefix ending in `.*`') }]);
    expect((await audit(caller.key, '?type=key*')).status).toBe(400);

    // A filtered page: hasMore counts only matching records.
    const filteredPage = await audit(caller.key, '?type=key.*&limit=3');
    expect(filteredPage.json.data.map((record: AuditRecord) => record.type)).toEqual(['key.created', 'key.created', 'key.created']);
    expect(filteredPage.json.hasMore).toBe(true);
    const filteredRest = await audit(caller.key, `?type=key.*&limit=3&after=${filteredPage.json.cursor}`);
    expect(filteredRest.json.data.map((record: AuditRecord) => record.type)).toEqual(['key.revoked']);
    expect(filteredRest.json.hasMore).toBe(false);
  });

  it.each([
    ['limit=0', '/limit'],
    ['limit=1001', '/limit'],
    ['limit=abc', '/limit'],
    ['after=-1', '/after'],
    ['after=1.5', '/after'],
  ])('rejects %s with 400', async (query, path) => {
    const caller = await app().account(['usage:read']);
    const response = await audit(caller.key, `?${query}`);
    expect(response.status).toBe(400);
    expect(response.json.error.code).toBe('invalid_request');
    expect(response.json.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
  });

  it('accepts the boundaries limit=1 and limit=1000', async () => {
    const caller = await app().account(['usage:read']);
    const one = await audit(caller.key, '?limit=1');
    expect(one.status).toBe(200);
    expect(one.json.data).toHaveLength(1);
    expect(one.json.hasMore).toBe(true);
    expect((await audit(caller.key, '?limit=1000')).status).toBe(200);
  });

  it("never shows one account's records to another", async () => {
    const { caller: a, first, second } = await accountWithHistory();
    const b = await app().account();

    const response = await audit(b.key);
    expect(response.status).toBe(200);
    const records: AuditRecord[] = response.json.data;
    expect(records.map((record) => record.type)).toEqual(['account.created', 'key.created']);
    expect(records[0]?.target).toEqual({ type: 'account', id: b.accountId });
    for (const foreign of [a.accountId, a.keyId, first.id, second.id]) expect(response.body).not.toContain(foreign);

    // Even read from a cursor far ahead, or filtered, B sees none of A's records.
    expect((await audit(b.key, '?type=key.revoked')).json.data).toEqual([]);
    expect((await audit(b.key, '?after=2')).json.data).toEqual([]);
  });
});
