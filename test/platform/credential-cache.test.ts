import { describe, expect, it } from 'vitest';
import { CREDENTIAL_CACHE_CAP, InProcessCredentialCache, UncachedCredentials, type CredentialCache } from '../../src/platform/credential-cache.js';
import type { Credential } from '../../src/platform/credential.js';

const credential = (id: string): Credential => ({
  kind: 'api_key',
  id,
  accountId: 'acct_1',
  accountName: 'one',
  scopes: ['resources:read'],
  expiresAt: '2099-01-01T00:00:00.000Z',
  rateLimitKey: `key:${id}`,
});

describe('InProcessCredentialCache', () => {
  it('remembers a credential by secret hash and forgets it by id', () => {
    const cache = new InProcessCredentialCache();
    cache.remember('hash1', credential('key_1'), cache.generation);
    expect(cache.get('hash1')?.id).toBe('key_1');
    cache.forget('key_1');
    expect(cache.get('hash1')).toBeUndefined();
  });

  it('refuses what a lookup read before a revocation finished (the lookup raced the revoke)', () => {
    const cache = new InProcessCredentialCache();
    const before = cache.generation;
    cache.forget('key_1'); // the revocation commits while the lookup reads storage
    cache.remember('hash1', credential('key_1'), before);
    expect(cache.get('hash1')).toBeUndefined();
    cache.remember('hash1', credential('key_1'), cache.generation);
    expect(cache.get('hash1')?.id).toBe('key_1');
  });

  it("drops everything when another process wrote to storage (the operator CLI's revoke), and refuses lookups that raced it", () => {
    let external = false;
    const cache = new InProcessCredentialCache({ happened: () => external });
    cache.remember('hash1', credential('key_1'), cache.generation);
    expect(cache.get('hash1')?.id).toBe('key_1');
    const lookupStarted = cache.generation;
    external = true;
    expect(cache.get('hash1')).toBeUndefined();
    external = false;
    cache.remember('hash1', credential('key_1'), lookupStarted);
    expect(cache.get('hash1')).toBeUndefined();
  });

  it('stays within its cap, dropping the oldest entry', () => {
    const cache = new InProcessCredentialCache();
    for (let i = 0; i <= CREDENTIAL_CACHE_CAP; i++) cache.remember(`hash${i}`, credential(`key_${i}`), cache.generation);
    expect(cache.get('hash0')).toBeUndefined();
    expect(cache.get(`hash${CREDENTIAL_CACHE_CAP}`)?.id).toBe(`key_${CREDENTIAL_CACHE_CAP}`);
    // The dropped entry's id index went with it: forgetting it touches nothing else.
    cache.forget('key_0');
    expect(cache.get('hash1')?.id).toBe('key_1');
  });
});

describe('UncachedCredentials (several processes)', () => {
  it('keeps nothing, so every lookup reads storage', () => {
    const cache: CredentialCache = new UncachedCredentials();
    cache.remember('hash1', credential('key_1'), cache.generation);
    expect(cache.get('hash1')).toBeUndefined();
  });
});
