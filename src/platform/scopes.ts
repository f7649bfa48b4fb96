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

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPE_DESCRIPTIONS, value);
}

/** Scopes an OAuth token may hold: managing keys and apps stays with API keys (docs/decisions.md: "Applications and OAuth"). */
export const OAUTH_GRANTABLE: ReadonlySet<Scope> = new Set(ALL_SCOPES.filter((scope) => scope !== 'keys:manage' && scope !== 'apps:manage'));
