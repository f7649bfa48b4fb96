// The scopes of the specification, with the words the OAuth approval page and docs use.
export const SCOPE_DESCRIPTIONS = {
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

export type Scope = keyof typeof SCOPE_DESCRIPTIONS;

export const ALL_SCOPES = Object.keys(SCOPE_DESCRIPTIONS) as Scope[];

/** Every scope, as a refusal of an unknown one lists them (the API and the operator CLI alike). */
export const SCOPE_LIST = ALL_SCOPES.join(', ');

/** What a field naming no scope is told (`details[].message`; the path says which entry). */
export const NOT_A_SCOPE = `is not a scope; the scopes are ${SCOPE_LIST}`;

/** The message of a refusal of unknown scopes, naming them. */
export function unknownScopes(scopes: readonly string[]): string {
  return `Unknown scope ${scopes.map((scope) => JSON.stringify(scope)).join(', ')}; the scopes are ${SCOPE_LIST}`;
}

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPE_DESCRIPTIONS, value);
}

/** Scopes an OAuth token may hold: managing keys and apps stays with API keys (docs/decisions.md: "Applications and OAuth"). */
export const OAUTH_GRANTABLE: ReadonlySet<Scope> = new Set(ALL_SCOPES.filter((scope) => scope !== 'keys:manage' && scope !== 'apps:manage'));

const APP_SCOPES = `an app may hold ${[...OAUTH_GRANTABLE].join(', ')}`;
/** What an app's scope is told when it names no scope, or one no token may hold. */
export const NOT_AN_APP_SCOPE = `is not a scope; ${APP_SCOPES}`;
export const NEVER_GRANTED = `can never be granted to an app; ${APP_SCOPES}`;
