// The OAuth 2.0 authorization server's rules (RFC 6749, 7636 PKCE, 7009 revocation, 9207 iss,
// 9700 security BCP): authorization requests, approval, the three grants, revocation, and the
// access tokens as API credentials.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { addDays, type Clock } from '../../platform/clock.js';
import type { Credential, CredentialResolver } from '../../platform/credential.js';
import { newId, newSecret, sha256Hex } from '../../platform/ids.js';
import { isScope, OAUTH_GRANTABLE, type Scope } from '../../platform/scopes.js';
import type { AppRow, AppsService } from '../apps/service.js';
import type { AuditService } from '../audit/service.js';
import type { KeysService } from '../keys/service.js';
import type { DomainEvents } from '../../domain-events.js';
import { inTransaction } from '../../storage/transaction.js';
import {
  endConnection,
  expiredOpenConnections,
  findCode,
  findConnection,
  findToken,
  findUsableAccessToken,
  insertCode,
  insertConnection,
  insertToken,
  liveConnections,
  openConnectionsOf,
  revokeAppTokens,
  revokeToken,
  rotateRefreshToken,
  setting,
  takeCode,
  type CodeRow,
  type ConnectionRow,
} from './store.js';

export const ACCESS_TOKEN_PREFIX = 'dda';
export const REFRESH_TOKEN_PREFIX = 'ddr';
export const CONNECTION_DAYS = 30;
export const CODE_TTL_MS = 5 * 60_000;
const AUTHORIZATION_FORM_TTL_MS = 15 * 60_000;
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** RFC 6749's error codes (section 5.2, and 4.1.2.1 for the authorization endpoint). */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'unsupported_response_type'
  | 'access_denied';

/** An RFC 6749 error: its code and description; oauth/routes.ts gives it its status. */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
  ) {
    super(description);
  }
}

/** A fault in client_id or redirect_uri: shown on a page, never redirected (RFC 6749 §4.1.2.1). */
export class UntrustedRedirectError extends Error {}

export interface AuthorizationRequest {
  app: AppRow;
  redirectUri: string;
  scopes: Scope[];
  state: string;
  codeChallenge: string;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

type Params = Record<string, string | undefined>;

function parseScopeParam(raw: string | undefined): string[] {
  return (raw ?? '').split(' ').filter(Boolean);
}

/** What a grant still allows: an app whose scopes were narrowed since gets only what it keeps. */
function stillAllowed(granted: string[], app: AppRow): string[] {
  return granted.filter((scope) => app.scopes.includes(scope));
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** RFC 6749 §2.3.1: Basic credentials are form-urlencoded first; undefined when the encoding is broken. */
function formUrlDecoded(text: string): string | undefined {
  try {
    const decoded = decodeURIComponent(text.replace(/\+/g, ' '));
    // No client id or secret holds a NUL (PostgreSQL could not even look one up).
    return decoded.includes('\u0000') ? undefined : decoded;
  } catch {
    return undefined;
  }
}

export class OAuthService implements CredentialResolver {
  readonly prefix = `${ACCESS_TOKEN_PREFIX}_`;
  private signingKey: Promise<string> | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly keys: KeysService,
    private readonly audit: AuditService,
    private readonly domain: DomainEvents,
    private readonly options: { accessTokenTtlSeconds: number; issuer: () => string },
  ) {
    // A connection ends with the key that approved it, and an app's grants with the app.
    domain.inside('key.revoked', async (exec, key) => this.end(exec, await openConnectionsOf(exec, { approvingKeyId: key.id }), 'approving_key_revoked'));
    domain.inside('app.deleting', async (exec, { app }) => this.endAppGrants(exec, app));
  }

  get issuer(): string {
    return this.options.issuer();
  }

  // ---- authorization endpoint ----------------------------------------------------------------

  /** Checks client_id and redirect_uri; until both are trusted nothing may be redirected. */
  async trustedClient(params: Params): Promise<{ app: AppRow; redirectUri: string }> {
    const app = params.client_id ? await this.apps.byClientId(params.client_id) : undefined;
    if (!app) throw new UntrustedRedirectError('The application is unknown (client_id).');
    const redirectUri = params.redirect_uri ?? (app.redirectUris.length === 1 ? app.redirectUris[0] : undefined);
    if (redirectUri === undefined || !app.redirectUris.includes(redirectUri)) {
      throw new UntrustedRedirectError('The redirect_uri is not registered for this application.');
    }
    return { app, redirectUri };
  }

  /** The rest of the request; faults here go back to the app's redirect URI as OAuth errors. */
  validateRequest(app: AppRow, redirectUri: string, params: Params): AuthorizationRequest {
    if (params.response_type !== 'code') throw new OAuthError('unsupported_response_type', 'response_type must be code');
    const state = params.state ?? '';
    if (state.length < 8 || state.length > 500) throw new OAuthError('invalid_request', 'state must be 8-500 characters');
    if (!params.code_challenge) throw new OAuthError('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256');
    if (params.code_challenge_method !== 'S256') throw new OAuthError('invalid_request', 'code_challenge_method must be S256');
    if (!CHALLENGE.test(params.code_challenge)) throw new OAuthError('invalid_request', 'code_challenge must be the base64url SHA-256 of the verifier');
    const requested = params.scope === undefined ? app.scopes : parseScopeParam(params.scope);
    const scopes = this.grantableScopes(requested, app.scopes);
    return { app, redirectUri, scopes, state, codeChallenge: params.code_challenge };
  }

  private grantableScopes(requested: string[], allowed: string[]): Scope[] {
    if (requested.length === 0) throw new OAuthError('invalid_scope', 'Request at least one scope');
    for (const scope of requested) {
      if (!isScope(scope)) throw new OAuthError('invalid_scope', `Unknown scope ${scope}`);
      if (!OAUTH_GRANTABLE.has(scope)) throw new OAuthError('invalid_scope', `${scope} can never be granted to an app`);
      if (!allowed.includes(scope)) throw new OAuthError('invalid_scope', `${scope} is not among the scopes this app may request`);
    }
    return [...new Set(requested)] as Scope[];
  }

  /** The parameters the approval form sends back, and a token binding them for a while (CSRF). */
  async formToken(request: AuthorizationRequest): Promise<string> {
    const expires = this.clock.now().getTime() + AUTHORIZATION_FORM_TTL_MS;
    return `${expires}.${await this.sign(request, expires)}`;
  }

  async checkFormToken(request: AuthorizationRequest, token: string | undefined): Promise<boolean> {
    const [expires, mac] = (token ?? '').split('.');
    if (!expires || !mac || Number(expires) < this.clock.now().getTime()) return false;
    return sameSecret(mac, await this.sign(request, Number(expires)));
  }

  private async sign(request: AuthorizationRequest, expires: number): Promise<string> {
    // Read once and kept; a failed read is not kept, so the next request tries again.
    this.signingKey ??= setting(this.db, 'oauth_form_key', () => randomBytes(32).toString('base64url')).catch((error: unknown) => {
      this.signingKey = undefined;
      throw error;
    });
    const material = JSON.stringify([request.app.clientId, request.redirectUri, request.scopes, request.state, request.codeChallenge, expires]);
    return createHmac('sha256', await this.signingKey).update(material).digest('base64url');
  }

  /**
   * Approval with an API key holding every requested scope: a connection starts (30 days, never
   * outliving the key) and a single-use code for it is returned.
   */
  async approve(request: AuthorizationRequest, apiKey: string): Promise<{ code: string } | { problem: string }> {
    const key = apiKey.startsWith(this.keys.prefix) ? await this.keys.resolve(apiKey) : undefined;
    if (!key) return { problem: 'That API key is not valid. Check it and try again.' };
    const missing = request.scopes.filter((scope) => !key.scopes.includes(scope));
    if (missing.length > 0) return { problem: `That API key does not hold every requested permission (missing: ${missing.join(', ')}).` };
    const now = this.clock.now();
    const thirtyDays = addDays(now, CONNECTION_DAYS).toISOString();
    const connection: ConnectionRow = {
      id: newId('con'),
      accountId: key.accountId,
      appId: request.app.id,
      approvingKeyId: key.id,
      scopes: request.scopes,
      createdAt: now.toISOString(),
      expiresAt: key.expiresAt < thirtyDays ? key.expiresAt : thirtyDays,
      endedAt: null,
    };
    const code = randomBytes(32).toString('base64url');
    await inTransaction(this.db, async (trx) => {
      await insertConnection(trx, connection);
      await insertCode(trx, sha256Hex(code), {
        connectionId: connection.id,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        expiresAt: new Date(now.getTime() + CODE_TTL_MS).toISOString(),
        usedAt: null,
      });
      await this.audit.record(trx, {
        accountId: key.accountId,
        type: 'oauth.connection_approved',
        actor: { kind: 'api_key', id: key.id },
        target: { type: 'oauth_connection', id: connection.id },
        data: { clientId: request.app.clientId, appName: request.app.name, scopes: request.scopes, expiresAt: connection.expiresAt },
      });
    });
    return { code };
  }

  // ---- token endpoint ------------------------------------------------------------------------

  /**
   * Client authentication: confidential apps with HTTP Basic only (a form client_id must match),
   * public apps with client_id and no secret.
   */
  async authenticateClient(authorization: string | undefined, form: Params): Promise<AppRow> {
    const invalid = (description: string) => new OAuthError('invalid_client', description);
    if (authorization !== undefined) {
      const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
      const decoded = match ? Buffer.from(match[1] ?? '', 'base64').toString('utf8') : '';
      const colon = decoded.indexOf(':');
      if (colon < 0) throw invalid('Malformed HTTP Basic credentials');
      const clientId = formUrlDecoded(decoded.slice(0, colon));
      const secret = formUrlDecoded(decoded.slice(colon + 1));
      if (clientId === undefined || secret === undefined) throw invalid('Malformed HTTP Basic credentials: invalid percent-encoding');
      if (form.client_id !== undefined && form.client_id !== clientId) throw invalid('client_id does not match the authenticated client');
      if (form.client_secret !== undefined) throw invalid('Send the client secret in one place: HTTP Basic');
      const app = await this.apps.byClientId(clientId);
      if (!app || app.type !== 'confidential' || app.clientSecretHash === null || !sameSecret(sha256Hex(secret), app.clientSecretHash)) {
        throw invalid('Client authentication failed');
      }
      return app;
    }
    if (form.client_id === undefined) throw invalid('Identify the client: client_id (public apps) or HTTP Basic (confidential apps)');
    const app = await this.apps.byClientId(form.client_id);
    if (!app) throw invalid('Client authentication failed');
    if (app.type === 'confidential') throw invalid('Confidential apps must authenticate with HTTP Basic');
    if (form.client_secret !== undefined) throw invalid('Public apps have no client secret and must not send one');
    return app;
  }

  async token(app: AppRow, form: Params): Promise<TokenResponse> {
    switch (form.grant_type) {
      case 'authorization_code':
        return this.exchangeCode(app, form);
      case 'refresh_token':
        return this.refresh(app, form);
      case 'client_credentials':
        return this.clientCredentials(app, form);
      case undefined:
        throw new OAuthError('invalid_request', 'grant_type is required');
      default:
        throw new OAuthError('unsupported_grant_type', `grant_type ${form.grant_type} is not supported`);
    }
  }

  /**
   * Runs a token request in one transaction that commits even when it ends in an OAuth error, so
   * what the refusal itself changed (a spent code, an ended connection, its audit) stays done.
   */
  private async committing<T>(work: (trx: Executor) => Promise<T>): Promise<T> {
    const outcome = await inTransaction(this.db, async (trx) => {
      try {
        return { value: await work(trx) };
      } catch (error) {
        if (error instanceof OAuthError) return { error };
        throw error;
      }
    });
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }

  private async exchangeCode(app: AppRow, form: Params): Promise<TokenResponse> {
    if (!form.code || !form.redirect_uri || !form.code_verifier) throw new OAuthError('invalid_request', 'code, redirect_uri and code_verifier are required');
    const codeHash = sha256Hex(form.code);
    const nowIso = this.clock.now().toISOString();
    return this.committing(async (trx) => {
      const issuedTo = await findCode(trx, codeHash);
      const connection = issuedTo && (await findConnection(trx, issuedTo.connectionId));
      // Another client cannot spend (or probe) the code.
      if (!connection || connection.appId !== app.id) throw new OAuthError('invalid_grant', 'The authorization code is invalid');
      // The first attempt of its client spends the code, whether or not it succeeds.
      if (!(await takeCode(trx, codeHash, nowIso))) {
        // A code used twice may have been stolen: what it issued is revoked (RFC 6749 §4.1.2).
        await this.end(trx, [connection], 'authorization_code_reused');
        throw new OAuthError('invalid_grant', 'The authorization code was already used; the tokens issued from it are revoked');
      }
      const code = issuedTo as CodeRow;
      if (code.expiresAt <= nowIso) throw new OAuthError('invalid_grant', 'The authorization code has expired');
      if (code.redirectUri !== form.redirect_uri) throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
      if (!VERIFIER.test(form.code_verifier as string)) throw new OAuthError('invalid_grant', 'code_verifier must be 43-128 URL-safe characters');
      if (!sameSecret(s256(form.code_verifier as string), code.codeChallenge)) throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
      await this.requireLive(trx, connection);
      return this.issue(trx, app, connection, this.grantableScopes(stillAllowed(connection.scopes, app), app.scopes), true);
    });
  }

  private async refresh(app: AppRow, form: Params): Promise<TokenResponse> {
    if (!form.refresh_token) throw new OAuthError('invalid_request', 'refresh_token is required');
    const hash = sha256Hex(form.refresh_token);
    const nowIso = this.clock.now().toISOString();
    return this.committing(async (trx) => {
      const token = await findToken(trx, hash);
      if (!token || token.kind !== 'refresh' || token.appId !== app.id || token.connectionId === null) {
        throw new OAuthError('invalid_grant', 'The refresh token is invalid');
      }
      const connection = (await findConnection(trx, token.connectionId)) as ConnectionRow;
      if (token.rotatedAt === null && token.revokedAt !== null) throw new OAuthError('invalid_grant', 'The refresh token has been revoked');
      if (token.rotatedAt === null) {
        // Everything that can refuse the request comes before the rotation, which must not be lost.
        await this.requireLive(trx, connection);
        const allowed = stillAllowed(token.scopes, app);
        const scopes = this.grantableScopes(form.scope === undefined ? allowed : parseScopeParam(form.scope), allowed);
        if (await rotateRefreshToken(trx, hash, nowIso)) return this.issue(trx, app, connection, scopes, true);
      }
      // Reuse of a rotated refresh token (RFC 9700 §4.14.2), or losing a race to rotate it: the
      // whole connection ends, recorded.
      await this.audit.record(trx, {
        accountId: connection.accountId,
        type: 'oauth.refresh_token_reused',
        actor: { kind: 'system' },
        target: { type: 'oauth_connection', id: connection.id },
        data: { clientId: app.clientId },
      });
      await this.end(trx, [connection], 'refresh_token_reused');
      throw new OAuthError('invalid_grant', 'The refresh token was already used; the connection has ended and must be approved again');
    });
  }

  private async clientCredentials(app: AppRow, form: Params): Promise<TokenResponse> {
    if (app.type !== 'confidential') throw new OAuthError('unauthorized_client', 'Only confidential apps may use client_credentials');
    const scopes = form.scope === undefined ? (app.scopes.filter(isScope) as Scope[]) : this.grantableScopes(parseScopeParam(form.scope), app.scopes);
    return inTransaction(this.db, (trx) => this.issue(trx, app, undefined, scopes, false));
  }

  /** An access token (at most the configured lifetime, never past the connection) and maybe a refresh token. */
  private async issue(exec: Executor, app: AppRow, connection: ConnectionRow | undefined, scopes: Scope[], withRefresh: boolean): Promise<TokenResponse> {
    const now = this.clock.now();
    const ttlMs = Math.min(this.options.accessTokenTtlSeconds * 1000, connection ? Date.parse(connection.expiresAt) - now.getTime() : Infinity);
    const accessToken = newSecret(ACCESS_TOKEN_PREFIX);
    const base = { appId: app.id, accountId: connection?.accountId ?? app.accountId, connectionId: connection?.id ?? null, scopes, createdAt: now.toISOString(), revokedAt: null, rotatedAt: null };
    await insertToken(exec, sha256Hex(accessToken), { ...base, id: newId('tok'), kind: 'access', expiresAt: new Date(now.getTime() + ttlMs).toISOString() });
    const response: TokenResponse = { access_token: accessToken, token_type: 'Bearer', expires_in: Math.max(1, Math.floor(ttlMs / 1000)), scope: scopes.join(' ') };
    if (withRefresh && connection) {
      const refreshToken = newSecret(REFRESH_TOKEN_PREFIX);
      await insertToken(exec, sha256Hex(refreshToken), { ...base, id: newId('tok'), kind: 'refresh', expiresAt: connection.expiresAt });
      response.refresh_token = refreshToken;
    }
    return response;
  }

  /** The connection must be open, unexpired, and its approving key still usable. */
  private async requireLive(exec: Executor, connection: ConnectionRow): Promise<void> {
    const nowIso = this.clock.now().toISOString();
    if (connection.endedAt !== null) throw new OAuthError('invalid_grant', 'The connection has ended; the user must approve again');
    if (connection.expiresAt <= nowIso) throw new OAuthError('invalid_grant', 'The connection has expired; the user must approve again');
    if (!(await this.keys.usableIds([connection.approvingKeyId], exec)).has(connection.approvingKeyId)) {
      await this.end(exec, [connection], 'approving_key_expired');
      throw new OAuthError('invalid_grant', 'The API key that approved the connection has expired or was revoked');
    }
  }

  /** RFC 7009: a refresh token ends its connection; an access token ends itself; unknown tokens are fine. */
  async revoke(app: AppRow, token: string | undefined): Promise<void> {
    if (!token) throw new OAuthError('invalid_request', 'token is required');
    const hash = sha256Hex(token);
    await inTransaction(this.db, async (trx) => {
      const row = await findToken(trx, hash);
      if (!row || row.appId !== app.id) return;
      if (row.kind === 'refresh' && row.connectionId !== null) {
        const connection = await findConnection(trx, row.connectionId);
        if (connection) await this.end(trx, [connection], 'revoked');
      } else {
        await revokeToken(trx, hash, this.clock.now().toISOString());
        await this.domain.emit(trx, 'credentials.ended', { ids: [row.id], how: 'revoked' });
      }
    });
  }

  // ---- connections ---------------------------------------------------------------------------

  private async end(exec: Executor, connections: Array<{ id: string; accountId: string }>, reason: string): Promise<void> {
    const nowIso = this.clock.now().toISOString();
    const ended: string[] = [];
    for (const connection of connections) {
      if (!(await endConnection(exec, connection.id, reason, nowIso))) continue;
      ended.push(connection.id);
      await this.audit.record(exec, {
        accountId: connection.accountId,
        type: 'oauth.connection_ended',
        actor: { kind: 'system' },
        target: { type: 'oauth_connection', id: connection.id },
        data: { reason },
      });
    }
    const how = reason === 'expired' || reason === 'approving_key_expired' ? 'expired' : 'revoked';
    if (ended.length > 0) await this.domain.emit(exec, 'credentials.ended', { ids: ended, how });
  }

  /**
   * Records the end of connections that ran out (30 days, or the approving key's expiry): their
   * tokens already stopped at that moment; this writes the audit record and stops what they
   * authorized. Run periodically.
   */
  async endExpired(): Promise<void> {
    await inTransaction(this.db, async (trx) => this.end(trx, await expiredOpenConnections(trx, this.clock.now().toISOString()), 'expired'));
  }

  /** Ends an app's connections and tokens (before the app is deleted). */
  private async endAppGrants(exec: Executor, app: AppRow): Promise<void> {
    await this.end(exec, await openConnectionsOf(exec, { appId: app.id }), 'app_deleted');
    await revokeAppTokens(exec, app.id, this.clock.now().toISOString());
    await this.domain.emit(exec, 'credentials.ended', { ids: [app.id], how: 'revoked' });
  }

  /** Which of these connections are open, unexpired, and approved by a still usable key. */
  async liveConnectionIds(ids: string[]): Promise<Set<string>> {
    const live = await liveConnections(this.db, ids, this.clock.now().toISOString());
    const usableKeys = await this.keys.usableIds([...new Set(live.map((connection) => connection.approvingKeyId))]);
    return new Set(live.filter((connection) => usableKeys.has(connection.approvingKeyId)).map((connection) => connection.id));
  }

  // ---- access tokens as API credentials ------------------------------------------------------

  async resolve(secret: string): Promise<Credential | undefined> {
    const nowIso = this.clock.now().toISOString();
    const token = await findUsableAccessToken(this.db, sha256Hex(secret), nowIso);
    if (!token) return undefined;
    if (token.connectionId !== null) {
      if (token.connectionExpiresAt === null || token.connectionExpiresAt <= nowIso) return undefined;
      if (token.approvingKeyId === null || !(await this.keys.usableIds([token.approvingKeyId])).has(token.approvingKeyId)) return undefined;
    }
    return {
      kind: 'oauth_access_token',
      id: token.id,
      accountId: token.accountId,
      accountName: token.accountName,
      scopes: token.scopes.filter(isScope),
      expiresAt: token.expiresAt,
      clientId: token.clientId,
      grant: token.connectionId !== null ? { kind: 'oauth_connection', id: token.connectionId } : { kind: 'oauth_app', id: token.appId },
      rateLimitKey: token.connectionId !== null ? `connection:${token.connectionId}` : `app:${token.appId}`,
    };
  }
}
