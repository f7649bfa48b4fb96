import { describe, expect, it } from 'vitest';
import { InProcessCredentialCache, UncachedCredentials, type CredentialCache } from '../../src/platform/credential-cache.js';
import type { Credential } from '../../src/platform/credential.js';
import { until } from '../support/wait.js';

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
    const cache = new InProcessCredentialCache({ externalWrites: { happened: () => external } });
    cache.remember('hash1', credential('key_1'), cache.generation);
    expect(cache.get('hash1')?.id).toBe('key_1');
    const lookupStarted = cache.generation;
    external = true;
    expect(cache.get('hash1')).toBeUndefined();
    external = false;
    cache.remember('hash1', credential('key_1'), lookupStarted);
    expect(cache.get('hash1')).toBeUndefined();
  });

  it('stays within its size in bytes, dropping the least recently used entry and its id index', () => {
    // Each entry weighs a few hundred bytes: 2,000 bytes hold a handful.
    const cache = new InProcessCredentialCache({ maxBytes: 2_000 });
    for (let i = 0; i < 50; i++) cache.remember(`hash${i}`, credential(`key_${i}`), cache.generation);
    expect(cache.get('hash0')).toBeUndefined();
    expect(cache.get('hash49')?.id).toBe('key_49');
    // The dropped entry's id index went with it: forgetting it touches nothing else.
    cache.forget('key_0');
    expect(cache.get('hash49')?.id).toBe('key_49');
    const kept = Array.from({ length: 50 }, (_, i) => cache.get(`hash${i}`)).filter((entry) => entry !== undefined);
    expect(kept.length).toBeGreaterThan(1);
    expect(kept.length).toBeLessThan(20);
  });

  it('re-remembering a secret keeps its id index (a replaced entry does not take the new one with it)', () => {
    const cache = new InProcessCredentialCache();
    cache.remember('hash1', credential('key_1'), cache.generation);
    cache.remember('hash1', credential('key_1'), cache.generation);
    cache.forget('key_1');
    expect(cache.get('hash1')).toBeUndefined();
  });

  it('with a time to live (several processes), an entry is read from storage again once it is older', async () => {
    // Long enough that no pause of a busy machine between the two lines below reaches it.
    const ttlMs = 500;
    const cache = new InProcessCredentialCache({ ttlMs });
    const remembered = performance.now();
    cache.remember('hash1', credential('key_1'), cache.generation);
    expect(cache.get('hash1')?.id).toBe('key_1');
    await until(() => cache.get('hash1') === undefined, 'the entry to expire');
    expect(performance.now() - remembered).toBeGreaterThanOrEqual(ttlMs);
  });

  it('paused (the notification connection is down), it keeps nothing; resumed, it starts empty', () => {
    const cache = new InProcessCredentialCache({ ttlMs: 1000 });
    cache.remember('hash1', credential('key_1'), cache.generation);
    const lookupStarted = cache.generation;
    cache.pause();
    expect(cache.get('hash1')).toBeUndefined();
    cache.remember('hash2', credential('key_2'), cache.generation);
    expect(cache.get('hash2')).toBeUndefined();
    cache.resume();
    // A lookup that began before the connection was lost read what may have been revoked meanwhile.
    cache.remember('hash1', credential('key_1'), lookupStarted);
    expect(cache.get('hash1')).toBeUndefined();
    cache.remember('hash2', credential('key_2'), cache.generation);
    expect(cache.get('hash2')?.id).toBe('key_2');
  });
});

describe('UncachedCredentials (several processes)', () => {
  it('keeps nothing, so every lookup reads storage', () => {
    const cache: CredentialCache = new UncachedCredentials();
    cache.remember('hash1', credential('key_1'), cache.generation);
    expect(cache.get('hash1')).toBeUndefined();
  });
});
