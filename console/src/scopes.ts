// The scopes of the API, their words, and what a connected key lacks.
import type { CredentialSummary } from '@devdata/client';
import { ALL_SCOPES, OAUTH_GRANTABLE, type Scope } from '../../src/platform/scopes';

// One list for the whole service: the approval page names scopes in the same words.
export { ALL_SCOPES, SCOPE_DESCRIPTIONS as SCOPES, type Scope } from '../../src/platform/scopes';

/** Scopes an app may ask for: managing keys and apps stays with API keys. */
export const APP_GRANTABLE_SCOPES = ALL_SCOPES.filter((scope) => OAUTH_GRANTABLE.has(scope));

export function missingScopes(credential: CredentialSummary | undefined, needed: readonly Scope[]): Scope[] {
  const held = new Set(credential?.credential.scopes ?? []);
  return needed.filter((scope) => !held.has(scope));
}

/** Why an action is not available with the connected key, or undefined when it is. */
export function scopeReason(credential: CredentialSummary | undefined, needed: readonly Scope[]): string | undefined {
  if (!credential) return 'Connect an API key first (Account page).';
  const missing = missingScopes(credential, needed);
  if (missing.length === 0) return undefined;
  return `Needs the ${missing.join(' and ')} scope${missing.length > 1 ? 's' : ''}, which the connected key does not have.`;
}
