import type { Scope } from './scopes.js';

/** An authenticated caller: an API key or (later) an OAuth access token, with what it may do. */
export interface Credential {
  kind: 'api_key' | 'oauth_access_token';
  id: string;
  accountId: string;
  accountName: string;
  scopes: Scope[];
  expiresAt: string;
  /** OAuth tokens only: the app the token was issued to. */
  clientId?: string;
  /** OAuth tokens only: what authorizes them, the user's connection or (client credentials) the app. */
  grant?: { kind: 'oauth_connection' | 'oauth_app'; id: string };
  /** The rate-limit bucket: per key, per OAuth connection, or per app for client credentials. */
  rateLimitKey: string;
}

/**
 * Turns a presented bearer secret into a credential; one per secret prefix (`ddk_`, `dda_`).
 * A credential known in memory comes back synchronously: no promise on an authenticated request's path.
 */
export interface CredentialResolver {
  prefix: string;
  resolve(secret: string): Credential | undefined | Promise<Credential | undefined>;
}

export function hasScopes(credential: Credential, needed: readonly Scope[]): boolean {
  return needed.every((scope) => credential.scopes.includes(scope));
}

/**
 * What standing authority depends on (docs/decisions.md, "Standing authority"): an API key, an
 * OAuth connection, or (client credentials) an app, whose own authority is its registering key.
 */
export interface Authorizer {
  kind: 'api_key' | 'oauth_connection' | 'oauth_app';
  id: string;
}

export function authorizerOf(credential: Credential): Authorizer {
  return credential.grant ?? { kind: 'api_key', id: credential.id };
}

/** Why something acting on a credential's authority stopped, as its `disabledReason` and audit record say. */
export const CUT_OFF_REASONS = ['credential_revoked', 'credential_expired'] as const;
export type CutOffReason = (typeof CUT_OFF_REASONS)[number];
