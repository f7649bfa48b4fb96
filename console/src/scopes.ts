// The scopes of the API with the words the console uses for them, and what a connected key lacks.
import type { CredentialSummary } from '@devdata/client';

export const SCOPES = {
  'resources:read': 'Read resources',
  'resources:write': 'Create, change and delete resources',
  'events:read': 'Read events, including full resource changes',
  'events:write': 'Publish custom events',
  'integrations:read': 'Read Home Assistant integration information and installations',
  'webhooks:manage': 'Manage event webhooks',
  'schedules:manage': 'Manage schedules',
  'usage:read': 'Read usage and audit history',
  'keys:manage': 'Manage API keys',
  'apps:manage': 'Manage registered applications',
} as const;

export type Scope = keyof typeof SCOPES;

export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

/** Scopes an app may ask for: managing keys and apps stays with API keys. */
export const APP_GRANTABLE_SCOPES = ALL_SCOPES.filter((scope) => scope !== 'keys:manage' && scope !== 'apps:manage');

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
