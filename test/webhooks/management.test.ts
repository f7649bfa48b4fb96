// The webhook management API (spec "Webhooks", docs/decisions.md: "Webhooks") with the production URL rules
// (WEBHOOK_ALLOW_PRIVATE_TARGETS off): scopes, validation, the URL matrix, the 20-per-account cap,
// isolation between accounts, the secret shown only at create and rotate and stored encrypted.
// No event is ever published in this file, so no webhook here sends anything anywhere.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { useTestApp, type TestAccount, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');
/** A public unicast address: accepted, and never contacted (nothing here publishes events). */
const PUBLIC_URL = 'https://93.184.215.14/hooks/devdata';
const WEBHOOK_FIELDS = ['createdAt', 'disabledReason', 'enabled', 'events', 'failingSince', 'heldUntil', 'id', 'name', 'updatedAt', 'url'];

function expectInvalidUrl(response: TestResponse): void {
  expectError(response, 400, 'invalid_request');
  expect(response.json.error.details).toEqual([{ path: '/url', message: expect.any(String) }]);
}

describe('webhook management', () => {
  const app = useTestApp({ env: { SECRETS_KEY } });

  const create = (key: string, body: unknown) => app().request({ method: 'POST', url: '/api/v1/webhooks', key, body });
  const patch = (key: string, id: string, body: unknown) => app().request({ method: 'PATCH', url: `/api/v1/webhooks/${id}`, key, body });

  async function created(key: string, body: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const response = await create(key, { name: 'Receiver', url: PUBLIC_URL, events: ['resource.updated'], ...body });
    expect(response.status, response.body).toBe(201);
    return response.json;
  }

  /** A second key of the caller's account with just these scopes. */
  async function keyWith(owner: TestAccount, scopes: string[]): Promise<{ id: string; key: string }> {
    const response = await app().request({ method: 'POST', url: '/api/v1/keys', key: owner.key, body: { name: `only ${scopes.join(' ')}`, scopes } });
    expect(response.status, response.body).toBe(201);
    return { id: response.json.id, key: response.json.key };
  }

  async function count(key: string): Promise<number> {
    const list = await app().request({ url: '/api/v1/webhooks', key });
    expect(list.status).toBe(200);
    return list.json.data.length;
  }

  describe('POST /api/v1/webhooks', () => {
    it('creates a webhook (201) and shows its whsec_ secret once', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const before = Date.now();
      const response = await create(caller.key, {
        name: '  Orders  ',
        url: PUBLIC_URL,
        events: ['resource.created', 'custom.*', 'resource.created', 'custom.door'],
      });
      expect(response.status, response.body).toBe(201);
      expect(Object.keys(response.json).sort()).toEqual([...WEBHOOK_FIELDS, 'secret'].sort());
      expect(response.json).toMatchObject({
        id: expect.stringMatching(/^wh_[A-Za-z0-9_-]{22,}$/),
        name: 'Orders',
        url: PUBLIC_URL,
        events: ['resource.created', 'custom.*', 'custom.door'],
        enabled: true,
        disabledReason: null,
        createdAt: expect.stringMatching(ISO_MS),
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      });
      expect(response.json.updatedAt).toBe(response.json.createdAt);
      expect(Date.parse(response.json.createdAt)).toBeGreaterThanOrEqual(before - 1);

      const got = await app().request({ url: `/api/v1/webhooks/${response.json.id}`, key: caller.key });
      expect(got.status).toBe(200);
      const { secret, ...record } = response.json;
      expect(got.json).toEqual(record);
      expect(got.body).not.toContain(secret);
    });

    it('takes enabled: false, and every subscribable type', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const hook = await created(caller.key, {
        enabled: false,
        events: ['resource.created', 'resource.updated', 'resource.deleted', 'schedule.executed', 'custom.*', 'custom.a.b:c-d_e'],
      });
      expect(hook.enabled).toBe(false);
      expect(hook.events).toHaveLength(6);
    });

    it('rejects bad bodies with 400 listing the fields, and writes nothing', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const cases: Array<[unknown, string]> = [
        [{ url: PUBLIC_URL, events: ['custom.*'] }, '/name'],
        [{ name: 'x', events: ['custom.*'] }, '/url'],
        [{ name: 'x', url: PUBLIC_URL }, '/events'],
        [{ name: 'x', url: PUBLIC_URL, events: [] }, '/events'],
        [{ name: 'x', url: PUBLIC_URL, events: ['resource.exploded'] }, '/events/0'],
        [{ name: 'x', url: PUBLIC_URL, events: ['custom.ok', 'resource.*'] }, '/events/1'],
        [{ name: 'x', url: PUBLIC_URL, events: ['custom.'] }, '/events/0'],
        [{ name: 'x', url: PUBLIC_URL, events: 'custom.*' }, '/events'],
        [{ name: 'x', url: PUBLIC_URL, events: Array.from({ length: 51 }, (_, index) => `custom.e${index}`) }, '/events'],
        [{ name: '', url: PUBLIC_URL, events: ['custom.*'] }, '/name'],
        [{ name: '   ', url: PUBLIC_URL, events: ['custom.*'] }, '/name'],
        [{ name: 'Bell\u0007', url: PUBLIC_URL, events: ['custom.*'] }, '/name'],
        [{ name: 'x'.repeat(101), url: PUBLIC_URL, events: ['custom.*'] }, '/name'],
        [{ name: 'x', url: PUBLIC_URL, events: ['custom.*'], enabled: 'yes' }, '/enabled'],
        [{ name: 'x', url: PUBLIC_URL, events: ['custom.*'], secret: 'whsec_mine' }, '/secret'],
        [{ name: 'x', url: 'not a url', events: ['custom.*'] }, '/url'],
      ];
      for (const [body, path] of cases) {
        const response = await create(caller.key, body);
        expectError(response, 400, 'invalid_request');
        expect(
          response.json.error.details.map((detail: { path: string }) => detail.path),
          JSON.stringify(body),
        ).toContain(path);
      }
      expect(await count(caller.key)).toBe(0);
    });

    it('answers 400 to malformed JSON and 415 to a body that is not JSON', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const body = JSON.stringify({ name: 'x', url: PUBLIC_URL, events: ['custom.*'] });
      expectError(
        await app().request({ method: 'POST', url: '/api/v1/webhooks', key: caller.key, body: '{"name":', headers: { 'content-type': 'application/json' } }),
        400,
        'invalid_request',
      );
      expectError(
        await app().request({ method: 'POST', url: '/api/v1/webhooks', key: caller.key, body, headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      );
      expectError(await app().request({ method: 'POST', url: '/api/v1/webhooks', key: caller.key, body }), 415, 'unsupported_media_type');
      expect(await count(caller.key)).toBe(0);
    });

    it('needs a credential (401), webhooks:manage and events:read (403 naming both)', async () => {
      const body = { name: 'x', url: PUBLIC_URL, events: ['custom.*'] };
      const anonymous = await app().request({ method: 'POST', url: '/api/v1/webhooks', body });
      expectError(anonymous, 401, 'unauthorized');
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="devdata"');
      expectError(await create('ddk_unknown', body), 401, 'unauthorized');

      for (const scopes of [['webhooks:manage'], ['events:read'], []] as const) {
        const caller = await app().account([...scopes]);
        const response = await create(caller.key, body);
        expectError(response, 403, 'insufficient_scope');
        expect(response.headers['www-authenticate']).toBe('Bearer realm="devdata", error="insufficient_scope", scope="webhooks:manage events:read"');
      }
      const owner = await app().account();
      const manageOnly = await keyWith(owner, ['webhooks:manage']);
      expectError(await create(manageOnly.key, body), 403, 'insufficient_scope');
      expect(await count(owner.key)).toBe(0);
    });

    it('allows at most 20 webhooks per account (409), counted per account', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const hooks = [];
      for (let index = 0; index < 20; index++) hooks.push(await created(caller.key, { name: `hook ${index}` }));
      const over = await create(caller.key, { name: 'one too many', url: PUBLIC_URL, events: ['custom.*'] });
      expectError(over, 409, 'conflict');
      expect(await count(caller.key)).toBe(20);

      const other = await app().account(['webhooks:manage', 'events:read']);
      await created(other.key);

      expect((await app().request({ method: 'DELETE', url: `/api/v1/webhooks/${hooks[0]!.id}`, key: caller.key })).status).toBe(204);
      await created(caller.key, { name: 'room again' });
      expect(await count(caller.key)).toBe(20);
    });
  });

  describe('URL rules (WEBHOOK_ALLOW_PRIVATE_TARGETS off)', () => {
    const refused = [
      ['http', 'http://93.184.215.14/hook'],
      ['port 8443', 'https://93.184.215.14:8443/hook'],
      ['port 80 on https', 'https://93.184.215.14:80/hook'],
      ['loopback 127.0.0.1', 'https://127.0.0.1/hook'],
      ['loopback 127.1.2.3', 'https://127.1.2.3/hook'],
      ['loopback written as one number', 'https://2130706433/hook'],
      ['private 10.0.0.1', 'https://10.0.0.1/hook'],
      ['private 172.16.5.4', 'https://172.16.5.4/hook'],
      ['private 192.168.1.1', 'https://192.168.1.1/hook'],
      ['IPv6 loopback [::1]', 'https://[::1]/hook'],
      ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook'],
      ['IPv6 unique-local', 'https://[fd00::1]/hook'],
      ['IPv6 link-local', 'https://[fe80::1]/hook'],
      ['cloud metadata 169.254.169.254', 'https://169.254.169.254/latest/meta-data'],
      ['unspecified 0.0.0.0', 'https://0.0.0.0/hook'],
      ['carrier-grade NAT', 'https://100.64.0.1/hook'],
      ['multicast', 'https://224.0.0.1/hook'],
      ['broadcast', 'https://255.255.255.255/hook'],
      ['documentation range', 'https://192.0.2.10/hook'],
      ['a name resolving to a private address', 'https://localhost/hook'],
      ['user-info', 'https://user:password@93.184.215.14/hook'],
      ['user name only', 'https://user@93.184.215.14/hook'],
      ['fragment', 'https://93.184.215.14/hook#part'],
      ['another scheme', 'ftp://93.184.215.14/hook'],
      ['relative', '/hook'],
    ] as const;

    it.each(refused)('refuses %s with 400 on /url at create, writing nothing', async (_what, url) => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      expectInvalidUrl(await create(caller.key, { name: 'x', url, events: ['custom.*'] }));
      expect(await count(caller.key)).toBe(0);
    });

    it('refuses the same URLs at update, leaving the webhook as it was', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const hook = await created(caller.key);
      for (const [what, url] of refused) {
        const response = await patch(caller.key, hook.id, { url, name: 'changed' });
        expect(response.status, what).toBe(400);
        expectInvalidUrl(response);
      }
      const { secret: _secret, ...record } = hook;
      expect((await app().request({ url: `/api/v1/webhooks/${hook.id}`, key: caller.key })).json).toEqual(record);
    });

    it('accepts https on port 443 to a public address, written with or without the port', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      expect((await created(caller.key, { url: 'https://93.184.215.14:443/a?b=c' })).url).toBe('https://93.184.215.14/a?b=c');
      expect((await created(caller.key, { url: 'https://[2606:4700:4700::1111]/hook' })).url).toBe('https://[2606:4700:4700::1111]/hook');
    });
  });

  describe('reading, changing and deleting', () => {
    it("lists the account's webhooks as {data}, oldest first, never with the secret", async () => {
      const caller = await app().account();
      const first = await created(caller.key, { name: 'first' });
      const second = await created(caller.key, { name: 'second' });
      const manageOnly = await keyWith(caller, ['webhooks:manage']);
      const list = await app().request({ url: '/api/v1/webhooks', key: manageOnly.key });
      expect(list.status).toBe(200);
      expect(Object.keys(list.json)).toEqual(['data']);
      expect(list.json.data.map((hook: { id: string }) => hook.id)).toEqual([first.id, second.id]);
      for (const hook of list.json.data) expect(Object.keys(hook).sort()).toEqual(WEBHOOK_FIELDS);
      expect(list.body).not.toContain(first.secret);
      expect(list.body).not.toContain(second.secret);
      expect(list.body).not.toContain('whsec_');
    });

    it('PATCH changes name, url and events (with events:read) and says when', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const hook = await created(caller.key);
      const response = await patch(caller.key, hook.id, { name: 'Renamed', url: 'https://93.184.215.14/other', events: ['custom.*'] });
      expect(response.status, response.body).toBe(200);
      expect(response.json).toMatchObject({
        id: hook.id,
        name: 'Renamed',
        url: 'https://93.184.215.14/other',
        events: ['custom.*'],
        enabled: true,
        createdAt: hook.createdAt,
      });
      expect(Object.keys(response.json).sort()).toEqual(WEBHOOK_FIELDS);
      expect(Date.parse(response.json.updatedAt)).toBeGreaterThanOrEqual(Date.parse(hook.updatedAt));
    });

    it('PATCH: pausing needs only webhooks:manage; editing (name, url, events) and enabling also events:read', async () => {
      const owner = await app().account();
      const hook = await created(owner.key);
      const manageOnly = await keyWith(owner, ['webhooks:manage']);

      const paused = await patch(manageOnly.key, hook.id, { enabled: false });
      expect(paused.status, paused.body).toBe(200);
      expect(paused.json.enabled).toBe(false);

      for (const body of [
        { enabled: true },
        { url: 'https://93.184.215.14/x' },
        { events: ['custom.*'] },
        { name: 'renamed' },
        { name: 'n', enabled: false },
      ]) {
        const response = await patch(manageOnly.key, hook.id, body);
        expectError(response, 403, 'insufficient_scope');
        expect(response.headers['www-authenticate']).toContain('scope="webhooks:manage events:read"');
      }
      // Pausing what is already paused, or "enabling" what is enabled, is no enabling.
      expect((await patch(manageOnly.key, hook.id, { enabled: false })).status).toBe(200);
      const current = await app().request({ url: `/api/v1/webhooks/${hook.id}`, key: owner.key });
      expect(current.json).toMatchObject({ name: 'Receiver', enabled: false, url: PUBLIC_URL, events: ['resource.updated'] });

      const enabled = await patch(owner.key, hook.id, { enabled: true });
      expect(enabled.status, enabled.body).toBe(200);
      expect(enabled.json.enabled).toBe(true);
      expect((await patch(manageOnly.key, hook.id, { enabled: true })).status).toBe(200);

      const readOnly = await keyWith(owner, ['events:read']);
      expectError(await patch(readOnly.key, hook.id, { enabled: false }), 403, 'insufficient_scope');
    });

    it('PATCH rejects an empty body, unknown fields and bad values with 400; a non-JSON body with 415', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const hook = await created(caller.key);
      expectError(await patch(caller.key, hook.id, {}), 400, 'invalid_request');
      const unknown = await patch(caller.key, hook.id, { secret: 'whsec_x' });
      expectError(unknown, 400, 'invalid_request');
      expect(unknown.json.error.details).toEqual([{ path: '/secret', message: expect.any(String) }]);
      expectError(await patch(caller.key, hook.id, { events: [] }), 400, 'invalid_request');
      expectError(await patch(caller.key, hook.id, { events: ['nope'] }), 400, 'invalid_request');
      expectError(await patch(caller.key, hook.id, { enabled: 1 }), 400, 'invalid_request');
      expectError(await patch(caller.key, hook.id, { name: '' }), 400, 'invalid_request');
      expectError(
        await app().request({
          method: 'PATCH',
          url: `/api/v1/webhooks/${hook.id}`,
          key: caller.key,
          body: '{"name":"x"}',
          headers: { 'content-type': 'text/plain' },
        }),
        415,
        'unsupported_media_type',
      );
      const { secret: _secret, ...record } = hook;
      expect((await app().request({ url: `/api/v1/webhooks/${hook.id}`, key: caller.key })).json).toEqual(record);
    });

    it('DELETE answers 204, then the webhook is gone (404)', async () => {
      const caller = await app().account();
      const hook = await created(caller.key);
      const manageOnly = await keyWith(caller, ['webhooks:manage']);
      const deleted = await app().request({ method: 'DELETE', url: `/api/v1/webhooks/${hook.id}`, key: manageOnly.key });
      expect(deleted.status).toBe(204);
      expect(deleted.body).toBe('');
      expectError(await app().request({ url: `/api/v1/webhooks/${hook.id}`, key: caller.key }), 404, 'not_found');
      expectError(await app().request({ method: 'DELETE', url: `/api/v1/webhooks/${hook.id}`, key: caller.key }), 404, 'not_found');
      expect(await count(caller.key)).toBe(0);
    });

    it('rotate-secret answers the webhook with a new secret, needs no body, and the secret shows nowhere else', async () => {
      const caller = await app().account();
      const hook = await created(caller.key);
      const rotated = await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/rotate-secret`, key: caller.key });
      expect(rotated.status, rotated.body).toBe(200);
      expect(Object.keys(rotated.json).sort()).toEqual([...WEBHOOK_FIELDS, 'secret'].sort());
      expect(rotated.json.secret).toMatch(/^whsec_/);
      expect(rotated.json.secret).not.toBe(hook.secret);
      expect(rotated.json).toMatchObject({ id: hook.id, name: hook.name, url: hook.url, events: hook.events, enabled: true });
      // The secret lets its holder forge deliveries: rotating it needs events:read too.
      const manageAndRead = await keyWith(caller, ['webhooks:manage', 'events:read']);
      const again = await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/rotate-secret`, key: manageAndRead.key, body: {} });
      expect(again.status, again.body).toBe(200);

      const seen = [
        await app().request({ url: '/api/v1/webhooks', key: caller.key }),
        await app().request({ url: `/api/v1/webhooks/${hook.id}`, key: caller.key }),
        await patch(caller.key, hook.id, { name: 'after rotation' }),
        await app().request({ url: `/api/v1/webhooks/${hook.id}/deliveries`, key: caller.key }),
        await app().request({ url: '/api/v1/audit?type=webhook.*', key: caller.key }),
      ];
      for (const response of seen) {
        expect(response.status, response.body).toBe(200);
        for (const secret of [hook.secret, rotated.json.secret, again.json.secret]) expect(response.body).not.toContain(secret);
        expect(response.body).not.toContain('whsec_');
      }
    });

    it('stores the signing secret encrypted under SECRETS_KEY, not as the secret itself', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const hook = await created(caller.key);
      const stored = async () =>
        (await app().context.storage.db.selectFrom('webhooks').select('secret').where('id', '=', hook.id).executeTakeFirstOrThrow()).secret;
      const sealed = await stored();
      expect(sealed).toMatch(/^enc:v1:/);
      expect(sealed).not.toContain(hook.secret);
      expect(sealed).not.toContain(hook.secret.slice('whsec_'.length));
      expect(new SecretBox(Buffer.from(SECRETS_KEY, 'base64')).open(sealed)).toBe(hook.secret);
      expect(() => new SecretBox(Buffer.alloc(32, 8)).open(sealed)).toThrow();

      const rotated = await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/rotate-secret`, key: caller.key });
      const resealed = await stored();
      expect(resealed).toMatch(/^enc:v1:/);
      expect(resealed).not.toContain(rotated.json.secret);
      expect(new SecretBox(Buffer.from(SECRETS_KEY, 'base64')).open(resealed)).toBe(rotated.json.secret);
    });

    it('still reads secrets an older release stored in plain text, seals new ones, and never seals without a key', () => {
      const unkeyed = 'plain:whsec_before_the_key';
      const keyed = new SecretBox(Buffer.from(SECRETS_KEY, 'base64'));
      expect(keyed.open(unkeyed)).toBe('whsec_before_the_key');
      expect(keyed.seal('whsec_after')).toMatch(/^enc:v1:/);
      expect(() => new SecretBox(undefined).seal('whsec_after')).toThrow(/no secrets key/);
      expect(() => new SecretBox(undefined).open(keyed.seal('whsec_after'))).toThrow(/secrets key is needed/);
      expect(keyed.opens(new SecretBox(Buffer.alloc(32, 1)).seal('whsec_x'))).toBe(false);
    });

    it('records webhook.created, .updated, .secret_rotated and .deleted in the audit history', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read', 'usage:read']);
      const hook = await created(caller.key, { name: 'audited' });
      await patch(caller.key, hook.id, { enabled: false });
      await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/rotate-secret`, key: caller.key });
      await app().request({ method: 'DELETE', url: `/api/v1/webhooks/${hook.id}`, key: caller.key });
      const audit = await app().request({ url: '/api/v1/audit?type=webhook.*', key: caller.key });
      expect(audit.status).toBe(200);
      const actor = { kind: 'api_key', id: caller.keyId };
      const target = { type: 'webhook', id: hook.id };
      expect(audit.json.data.map((record: Record<string, unknown>) => [record.type, record.actor, record.target])).toEqual([
        ['webhook.created', actor, target],
        ['webhook.updated', actor, target],
        ['webhook.secret_rotated', actor, target],
        ['webhook.deleted', actor, target],
      ]);
      expect(audit.json.data[0].data).toMatchObject({ name: 'audited', url: PUBLIC_URL, events: ['resource.updated'], enabled: true });
      expect(audit.json.data[1].data).toEqual({ changed: ['enabled'], enabled: false });
    });
  });

  describe('scopes and isolation on every route', () => {
    it("keeps each account's webhooks invisible to others (404 on every route)", async () => {
      const owner = await app().account(['webhooks:manage', 'events:read']);
      const stranger = await app().account(['webhooks:manage', 'events:read']);
      const hook = await created(owner.key);
      const routes: Array<{ method: string; url: string; body?: unknown }> = [
        { method: 'GET', url: `/api/v1/webhooks/${hook.id}` },
        { method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, body: { enabled: false } },
        { method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, body: { url: 'https://93.184.215.14/mine' } },
        { method: 'DELETE', url: `/api/v1/webhooks/${hook.id}` },
        { method: 'GET', url: `/api/v1/webhooks/${hook.id}/deliveries` },
        { method: 'POST', url: `/api/v1/webhooks/${hook.id}/deliveries/dlv_unknown/retry` },
        { method: 'POST', url: `/api/v1/webhooks/${hook.id}/rotate-secret` },
      ];
      for (const route of routes) expectError(await app().request({ ...route, key: stranger.key }), 404, 'not_found');
      expect((await app().request({ url: '/api/v1/webhooks', key: stranger.key })).json).toEqual({ data: [] });
      const { secret: _secret, ...record } = hook;
      expect((await app().request({ url: `/api/v1/webhooks/${hook.id}`, key: owner.key })).json).toEqual(record);
      // Unknown ids are 404 too; so is an unknown delivery of one's own webhook.
      expectError(await app().request({ url: '/api/v1/webhooks/wh_unknown', key: owner.key }), 404, 'not_found');
      expectError(await app().request({ method: 'POST', url: `/api/v1/webhooks/${hook.id}/deliveries/dlv_unknown/retry`, key: owner.key }), 404, 'not_found');
    });

    it('answers 401 without a credential and 403 without webhooks:manage on every route', async () => {
      const owner = await app().account();
      const hook = await created(owner.key);
      const eventsOnly = await keyWith(owner, ['events:read', 'events:write', 'resources:read']);
      const routes: Array<{ method: string; url: string; body?: unknown }> = [
        { method: 'GET', url: '/api/v1/webhooks' },
        { method: 'GET', url: `/api/v1/webhooks/${hook.id}` },
        { method: 'PATCH', url: `/api/v1/webhooks/${hook.id}`, body: { enabled: false } },
        { method: 'DELETE', url: `/api/v1/webhooks/${hook.id}` },
        { method: 'GET', url: `/api/v1/webhooks/${hook.id}/deliveries` },
        { method: 'POST', url: `/api/v1/webhooks/${hook.id}/deliveries/dlv_x/retry` },
        { method: 'POST', url: `/api/v1/webhooks/${hook.id}/rotate-secret` },
      ];
      for (const route of routes) {
        const anonymous = await app().request(route);
        expectError(anonymous, 401, 'unauthorized');
        const forbidden = await app().request({ ...route, key: eventsOnly.key });
        expectError(forbidden, 403, 'insufficient_scope');
        expect(forbidden.headers['www-authenticate'], `${route.method} ${route.url}`).toContain('scope="webhooks:manage');
      }
      expect((await app().request({ url: `/api/v1/webhooks/${hook.id}`, key: owner.key })).status).toBe(200);
    });
  });

  describe('limits and settings', () => {
    it('advertises the webhook limits in /api/v1/capabilities, with the 10 s attempt limit by default', async () => {
      const response = await app().request({ url: '/api/v1/capabilities' });
      expect(response.status).toBe(200);
      expect(response.json.features.webhooks).toMatchObject({
        maxPerAccount: 20,
        queueCap: 1000,
        historyKept: 500,
        maxAttempts: 5,
        retryScheduleSeconds: [0, 5, 300, 1800, 7200],
        timeoutSeconds: 10,
        signatureHeader: 'X-Service-Signature',
      });
      expect(loadConfig({}).webhookTimeoutMs).toBe(10_000);
    });

    it('refuses an attempt limit over 10 s and a lease that does not outlast it', () => {
      expect(() => loadConfig({ WEBHOOK_TIMEOUT_MS: '10001' })).toThrow(ConfigError);
      expect(() => loadConfig({ WEBHOOK_TIMEOUT_MS: '50' })).toThrow(ConfigError);
      expect(() => loadConfig({ WEBHOOK_LEASE_SECONDS: '10' })).toThrow(/WEBHOOK_LEASE_SECONDS/);
      expect(loadConfig({ WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_LEASE_SECONDS: '2' })).toMatchObject({ webhookTimeoutMs: 1000, webhookLeaseSeconds: 2 });
      expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0,5,300' })).toThrow(/WEBHOOK_RETRY_SCHEDULE/);
    });
  });
});
