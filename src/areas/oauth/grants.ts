// What may be granted: the scope parameter, the scopes an app may be given, and what a grant keeps
// when its app's scopes narrow. The authorization and the token endpoints both apply them.
import { timingSafeEqual } from 'node:crypto';
import { isScope, OAUTH_GRANTABLE, type Scope } from '../../platform/scopes.js';
import type { AppRow } from '../apps/service.js';
import { OAuthError } from './errors.js';

export type Params = Record<string, string | undefined>;

export function parseScopeParam(raw: string | undefined): string[] {
  return (raw ?? '').split(' ').filter(Boolean);
}

/** What a grant still allows: an app whose scopes were narrowed since gets only what it keeps. */
export function stillAllowed(granted: string[], app: AppRow): string[] {
  return granted.filter((scope) => app.scopes.includes(scope));
}

/** Which scopes of `requested` an app allowed `allowed` is given; invalid_scope when any is not. */
export function grantableScopes(requested: string[], allowed: string[]): Scope[] {
  if (requested.length === 0) throw new OAuthError('invalid_scope', 'Request at least one scope');
  for (const scope of requested) {
    if (!isScope(scope)) throw new OAuthError('invalid_scope', `Unknown scope ${scope}`);
    if (!OAUTH_GRANTABLE.has(scope)) throw new OAuthError('invalid_scope', `${scope} can never be granted to an app`);
    if (!allowed.includes(scope)) throw new OAuthError('invalid_scope', `${scope} is not among the scopes this app may request`);
  }
  return [...new Set(requested)] as Scope[];
}

/** Compares two secrets (or their hashes) in constant time. */
export function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
