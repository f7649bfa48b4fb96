// rotate-secret hands out a secret that can sign deliveries, so it needs events:read as well as
// webhooks:manage (../shared/api-decisions.md §10; docs/decisions.md: "Webhooks").
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/platform/secret-box.js';
import { useTestApp, type TestAccount } from '../support/app.js';
import { expectError } from '../support/expect.js';

const SECRETS_KEY = Buffer.alloc(32, 9).toString('base64');
/** A public unicast address: accepted, and never contacted (nothing here publishes events). */
const PUBLIC_URL = 'https://93.184.215.14/hooks/devdata';

describe('POST /api/v1/webhooks/{id}/rotate-secret', () => {
  const app = useTestApp({ env: { SECRETS_KEY } });
  const box = new SecretBox(Buffer.from(SECRETS_KEY, 'base64'));

  async function keyWith(owner: TestAccount, scopes: string[]): Promise<string> {
    const response = await app().request({ method: 'POST', url: '/api/v1/keys', key: owner.key, body: { name: scopes.join(' '), scopes } });
    expect(response.status, response.body).toBe(201);
    return response.json.key;
  }

  async function webhookOf(owner: TestAccount): Promise<{ id: string; secret: string; updatedAt: string }> {
    const response = await app().request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key: owner.key,
      body: { name: 'Receiver', url: PUBLIC_URL, events: ['resource.updated'] },
    });
    expect(response.status, response.body).toBe(201);
    return response.json;
  }

  /** The secret deliveries are signed with, as stored. */
  async function signingSecret(id: string): Promise<string> {
    const row = await app().context.storage.db.selectFrom('webhooks').select('secret').where('id', '=', id).executeTakeFirstOrThrow();
    return box.open(row.secret);
  }

  async function rotations(owner: TestAccount): Promise<number> {
    const audit = await app().request({ url: '/api/v1/audit?type=webhook.secret_rotated', key: owner.key });
    expect(audit.status, audit.body).toBe(200);
    return audit.json.data.length;
  }

  const rotate = (id: string, key: string) => app().request({ method: 'POST', url: `/api/v1/webhooks/${id}/rotate-secret`, key });

  it('refuses a key without events:read (403 naming both scopes) and changes nothing', async () => {
    const owner = await app().account();
    const hook = await webhookOf(owner);
    const manageOnly = await keyWith(owner, ['webhooks:manage']);

    const refused = await rotate(hook.id, manageOnly);
    expectError(refused, 403, 'insufficient_scope');
    expect(refused.headers['www-authenticate']).toContain('scope="webhooks:manage events:read"');
    expect(refused.body).not.toContain('whsec_');

    expect(await signingSecret(hook.id)).toBe(hook.secret);
    const after = await app().request({ url: `/api/v1/webhooks/${hook.id}`, key: owner.key });
    expect(after.json.updatedAt).toBe(hook.updatedAt);
    expect(await rotations(owner)).toBe(0);
  });

  it('gives a key with webhooks:manage and events:read a new secret', async () => {
    const owner = await app().account();
    const hook = await webhookOf(owner);
    const both = await keyWith(owner, ['webhooks:manage', 'events:read']);

    const rotated = await rotate(hook.id, both);
    expect(rotated.status, rotated.body).toBe(200);
    expect(rotated.json.secret).toMatch(/^whsec_/);
    expect(rotated.json.secret).not.toBe(hook.secret);
    expect(await signingSecret(hook.id)).toBe(rotated.json.secret);
    expect(await rotations(owner)).toBe(1);
  });
});
